// A figure described by its data, independent of how it is drawn: series of points, two axes
// (linear or probit scale, range, ticks with labels) and markers. DetFigure and CurvesFigure build
// the two figures asvrun plots (DET curves, training curves per epoch) by pure functions;
// asvcpp/plot/render.h draws a Figure to PNG or SVG with cairo.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/eval/det.h"

namespace asv::plot {

/// How an axis maps data values to positions.
enum class Scale {
  kLinear,  ///< Position proportional to the value.
  kProbit,  ///< Position proportional to eval::Probit(value); values are probabilities in (0, 1).
};

/// One tick of an axis: a value in data units and its label.
struct Tick {
  double value = 0;
  std::string label;
};

/// One axis: scale, visible range [min, max] in data units (min < max; both in (0, 1) for
/// kProbit), ticks inside that range, and a title.
struct Axis {
  std::string title;
  Scale scale = Scale::kLinear;
  double min = 0;
  double max = 1;
  std::vector<Tick> ticks;

  /// The value on the axis' scale: `value` itself, or eval::Probit(value) for kProbit (throws
  /// std::invalid_argument for a value outside [0, 1]; -inf at 0, +inf at 1).
  double Transform(double value) const;
  /// Where `value` lies along the axis: 0 at min, 1 at max, linear in Transform (outside [0, 1]
  /// for values outside the range; infinite for 0 or 1 on a probit axis).
  double Fraction(double value) const;
};

/// A point in data units (x, y).
struct Point {
  double x = 0;
  double y = 0;
};

/// One curve: its legend text and points in drawing order.
struct Series {
  std::string name;
  std::vector<Point> points;
};

/// A marked point of one series (drawn in that series' colour), e.g. the EER of a DET curve.
struct Marker {
  std::size_t series = 0;  ///< Index into Figure::series.
  Point at;
  std::string label;  ///< e.g. "EER"
};

/// Everything a renderer needs. Series are drawn (and listed in the legend) in order; series i
/// gets colour i of the palette.
struct Figure {
  std::string title;
  Axis x;
  Axis y;
  std::vector<Series> series;
  std::vector<Marker> markers;
  bool equal_aspect = false;  ///< Plot area square (one unit of x and of y equally long).
  bool diagonal = false;      ///< Draw the line y = x (DET plots: where p_miss = p_fa).
  bool point_dots = false;    ///< A dot at every data point (few points, e.g. one per epoch).
};

/// The standard DET tick probabilities (fractions): 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
/// 10, 20 and 40 % (eval::DetAxisTicks).
const std::vector<double>& DetTickProbabilities();

/// Where a DET curve crosses the diagonal p_miss = p_fa: the EER as a fraction. Walks the points
/// in order and interpolates linearly, on probit axes, between the two points where
/// Probit(p_miss) - Probit(p_fa) changes sign (a point on the diagonal is returned as is).
/// nullopt when there are fewer than two points with both rates in (0, 1) or the curve does not
/// cross the diagonal.
std::optional<double> DetEer(const std::vector<eval::DetPoint>& points);

/// One DET curve to plot: its name (the legend text gets " EER x.xx %" appended when the curve
/// crosses the diagonal) and its points as eval::DetPoints returns them.
struct DetCurve {
  std::string name;
  std::vector<eval::DetPoint> points;
};

/// A DET plot: x = false-alarm probability, y = miss probability, both probit-scaled over
/// [eval::DetAxisMin of every curve's points, 40 %] (0.1-40 % unless a curve goes below 0.1 %
/// inside that square, down to 0.01 %) with the ticks of DetTickProbabilities() in that range
/// labelled in percent ("0.01", ..., "40"),
/// equal aspect, the diagonal drawn; one series per curve in order (points with a rate of 0 or 1
/// left out: they lie at infinity on a probit axis), and an "EER" marker at (eer, eer) for each
/// curve that crosses the diagonal (DetEer). Legend text: "NAME EER x.xx %".
Figure DetFigure(const std::vector<DetCurve>& curves, const std::string& title = "");

/// About `target` "nice" tick values (steps of 1, 2 or 5 times a power of ten) covering
/// [min, max]: the first tick <= min, the last >= max. A single value (min == max) gets a range of
/// one step around it. Throws std::invalid_argument when min > max or either is not finite.
std::vector<double> NiceTicks(double min, double max, int target = 6);

/// Label of tick `value` in a sequence of ticks `step` apart: as few decimals as the step needs
/// ("0.5", "10", "0.0001"; large or tiny steps in exponent form, "1e+06").
std::string TickLabel(double value, double step);

/// A training-curve plot: x = epoch, y = the metric (titled `y_title`), linear, with nice ticks
/// (NiceTicks) over the range of every series' points (x ticks at whole epochs), a dot at every
/// point. Series in order.
/// Throws std::invalid_argument when no series has a point.
Figure CurvesFigure(const std::vector<Series>& series, const std::string& y_title, const std::string& title = "");

}  // namespace asv::plot
