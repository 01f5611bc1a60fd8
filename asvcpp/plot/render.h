// Draws a Figure (figure.h) with cairo, to PNG or SVG. Two steps, both testable: Draw turns the
// figure into a display list in device units (lines, texts, discs: the positions of every point,
// tick label and legend entry), RenderFile paints that list on a cairo surface chosen by the file
// extension.
//
// Layout: title on top, the plot area with tick labels left and below, the axis titles, and the
// legend under the plot (one line per series: a short line in the series' colour and its name).
// Series are clipped to the plot area; markers outside it are left out.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/plot/figure.h"

namespace asv::plot {

/// An RGB colour, components in [0, 1].
struct Colour {
  double r = 0;
  double g = 0;
  double b = 0;
};

/// Colour of series i is Palette()[i % Palette().size()] (the ten "tab10" colours).
const std::vector<Colour>& Palette();

/// Size of the drawing: pixels for PNG, points (1/72 in) for SVG. The default fits a paper figure
/// (about 6.7 x 5 in at 96 dpi).
struct RenderOptions {
  double width = 640;
  double height = 480;
  double font_size = 12;
};

/// A rectangle in device units (y down).
struct Rect {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

/// A polyline in device units.
struct Polyline {
  std::vector<Point> points;
  Colour colour;
  double line_width = 1;
  bool dashed = false;
  bool clip_to_plot = false;  ///< Clipped to DisplayList::plot (the data series).
  int series = -1;            ///< Index of the series drawn, -1 for grid, frame, ticks, legend.
};

/// A text; `at` is the anchor point of its baseline.
struct Text {
  enum class Anchor { kLeft, kCentre, kRight };
  std::string text;
  Point at;
  double size = 12;
  Anchor anchor = Anchor::kLeft;
  bool vertical = false;  ///< Rotated 90 degrees counter-clockwise (the y axis title).
  bool bold = false;
};

/// A filled circle with an outline (markers).
struct Disc {
  Point centre;
  double radius = 4;
  Colour fill;
  Colour outline;
};

/// Everything RenderFile paints, in painting order: lines, then discs, then texts.
struct DisplayList {
  double width = 0;
  double height = 0;
  Rect plot;  ///< The plot area.
  std::vector<Polyline> lines;
  std::vector<Disc> discs;
  std::vector<Text> texts;
};

/// Where data point `p` lies in the plot area `plot` (device units, y down): x by
/// figure.x.Fraction, y by figure.y.Fraction from the bottom edge.
Point ToDevice(const Figure& figure, const Rect& plot, Point p);

/// The display list of `figure` at the size of `options`: grid lines at every tick, the frame,
/// the diagonal (dashed, when figure.diagonal), one polyline per series with a point per data
/// point (series i in Palette colour i, line width 2), with figure.point_dots a dot (radius 2.5)
/// per data point inside the plot area, a disc (radius 4.5, black outline) per marker inside it,
/// tick labels, axis titles, the title, and a legend entry (line and name) per series. With
/// figure.equal_aspect the plot area is square. Throws std::invalid_argument when the size leaves
/// less than 100 x 100 for the plot area (titles, ticks and one legend line per series around it).
DisplayList Draw(const Figure& figure, const RenderOptions& options = {});

/// Paints `figure` (Draw) to `path`: PNG for ".png", SVG for ".svg" (extension case-insensitive),
/// with cairo; text in cairo's "sans-serif" toy font, written as fs::WriteFileAtomic writes (a
/// regular file atomically; a link is followed; a directory is refused). Throws ConfigError for
/// another extension and DataError naming the path when cairo fails or the file cannot be written.
void RenderFile(const Figure& figure, const std::filesystem::path& path, const RenderOptions& options = {});

}  // namespace asv::plot
