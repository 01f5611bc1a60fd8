#include "asvcpp/plot/render.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::plot {

namespace stdfs = std::filesystem;

const std::vector<Colour>& Palette() {
  static const std::vector<Colour> palette = {
      {0x1f / 255.0, 0x77 / 255.0, 0xb4 / 255.0}, {0xff / 255.0, 0x7f / 255.0, 0x0e / 255.0},
      {0x2c / 255.0, 0xa0 / 255.0, 0x2c / 255.0}, {0xd6 / 255.0, 0x27 / 255.0, 0x28 / 255.0},
      {0x94 / 255.0, 0x67 / 255.0, 0xbd / 255.0}, {0x8c / 255.0, 0x56 / 255.0, 0x4b / 255.0},
      {0xe3 / 255.0, 0x77 / 255.0, 0xc2 / 255.0}, {0x7f / 255.0, 0x7f / 255.0, 0x7f / 255.0},
      {0xbc / 255.0, 0xbd / 255.0, 0x22 / 255.0}, {0x17 / 255.0, 0xbe / 255.0, 0xcf / 255.0},
  };
  return palette;
}

Point ToDevice(const Figure& figure, const Rect& plot, Point p) {
  return {plot.x + figure.x.Fraction(p.x) * plot.width, plot.y + (1 - figure.y.Fraction(p.y)) * plot.height};
}

DisplayList Draw(const Figure& figure, const RenderOptions& options) {
  const double fs = options.font_size;
  const double line = fs * 1.35;
  DisplayList out;
  out.width = options.width;
  out.height = options.height;
  const double top = figure.title.empty() ? fs : 2 * line;
  const double left = fs * 5.5;    // tick labels and the y title
  const double right = fs * 1.5;
  const double bottom = 2.4 * line + static_cast<double>(figure.series.size()) * line + fs * 0.5;
  Rect plot{left, top, options.width - left - right, options.height - top - bottom};
  if (plot.width < 100 || plot.height < 100) {
    throw std::invalid_argument(
        fmt::format("a plot of {} x {} leaves less than 100 x 100 for the plot area", options.width, options.height));
  }
  if (figure.equal_aspect) {
    const double side = std::min(plot.width, plot.height);
    plot.x += (plot.width - side) / 2;
    plot.width = plot.height = side;
  }
  out.plot = plot;
  const Colour grid{0.85, 0.85, 0.85};
  const Colour black{0, 0, 0};
  // Grid lines and tick labels.
  for (const auto& tick : figure.x.ticks) {
    const double x = ToDevice(figure, plot, {tick.value, figure.y.min}).x;
    out.lines.push_back({{{x, plot.y}, {x, plot.y + plot.height}}, grid, 0.8, false, false, -1});
    out.texts.push_back({tick.label, {x, plot.y + plot.height + line}, fs, Text::Anchor::kCentre, false, false});
  }
  for (const auto& tick : figure.y.ticks) {
    const double y = ToDevice(figure, plot, {figure.x.min, tick.value}).y;
    out.lines.push_back({{{plot.x, y}, {plot.x + plot.width, y}}, grid, 0.8, false, false, -1});
    out.texts.push_back({tick.label, {plot.x - fs * 0.4, y + fs * 0.35}, fs, Text::Anchor::kRight, false, false});
  }
  out.lines.push_back({{{plot.x, plot.y},
                        {plot.x + plot.width, plot.y},
                        {plot.x + plot.width, plot.y + plot.height},
                        {plot.x, plot.y + plot.height},
                        {plot.x, plot.y}},
                       black,
                       1,
                       false,
                       false,
                       -1});
  if (figure.diagonal) {
    const double lo = std::max(figure.x.min, figure.y.min);
    const double hi = std::min(figure.x.max, figure.y.max);
    if (lo < hi) {
      out.lines.push_back({{ToDevice(figure, plot, {lo, lo}), ToDevice(figure, plot, {hi, hi})},
                           {0.5, 0.5, 0.5},
                           0.8,
                           true,
                           true,
                           -1});
    }
  }
  const auto& palette = Palette();
  for (std::size_t i = 0; i < figure.series.size(); ++i) {
    Polyline series{{}, palette[i % palette.size()], 2, false, true, static_cast<int>(i)};
    for (const auto& p : figure.series[i].points) series.points.push_back(ToDevice(figure, plot, p));
    out.lines.push_back(std::move(series));
  }
  auto inside = [&plot](Point c) {
    const double eps = 1e-9;
    return c.x >= plot.x - eps && c.x <= plot.x + plot.width + eps && c.y >= plot.y - eps &&
           c.y <= plot.y + plot.height + eps;
  };
  if (figure.point_dots) {
    for (std::size_t i = 0; i < figure.series.size(); ++i) {
      const Colour& colour = palette[i % palette.size()];
      for (const auto& p : figure.series[i].points) {
        const Point c = ToDevice(figure, plot, p);
        if (inside(c)) out.discs.push_back({c, 2.5, colour, colour});
      }
    }
  }
  for (const auto& marker : figure.markers) {
    const Point c = ToDevice(figure, plot, marker.at);
    if (inside(c)) out.discs.push_back({c, 4.5, palette[marker.series % palette.size()], black});
  }
  // Titles.
  if (!figure.title.empty()) {
    out.texts.push_back({figure.title, {options.width / 2, line}, fs * 1.1, Text::Anchor::kCentre, false, true});
  }
  out.texts.push_back(
      {figure.x.title, {plot.x + plot.width / 2, plot.y + plot.height + 2.2 * line}, fs, Text::Anchor::kCentre, false,
       false});
  out.texts.push_back({figure.y.title, {plot.x - fs * 4.2, plot.y + plot.height / 2}, fs, Text::Anchor::kCentre, true,
                       false});
  // Legend under the plot.
  double y = plot.y + plot.height + 3.3 * line;
  const double x0 = std::max(left, plot.x);
  for (std::size_t i = 0; i < figure.series.size(); ++i, y += line) {
    out.lines.push_back({{{x0, y - fs * 0.35}, {x0 + 2 * fs, y - fs * 0.35}}, palette[i % palette.size()], 2, false,
                         false, -1});
    out.texts.push_back({figure.series[i].name, {x0 + 2.5 * fs, y}, fs, Text::Anchor::kLeft, false, false});
  }
  return out;
}

namespace {

void Paint(cairo_t* cr, const DisplayList& list) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (const auto& l : list.lines) {
    if (l.points.empty()) continue;
    cairo_save(cr);
    if (l.clip_to_plot) {
      cairo_rectangle(cr, list.plot.x, list.plot.y, list.plot.width, list.plot.height);
      cairo_clip(cr);
    }
    if (l.dashed) {
      const double dash[] = {4, 3};
      cairo_set_dash(cr, dash, 2, 0);
    }
    cairo_set_source_rgb(cr, l.colour.r, l.colour.g, l.colour.b);
    cairo_set_line_width(cr, l.line_width);
    cairo_move_to(cr, l.points[0].x, l.points[0].y);
    for (std::size_t i = 1; i < l.points.size(); ++i) cairo_line_to(cr, l.points[i].x, l.points[i].y);
    cairo_stroke(cr);
    cairo_restore(cr);
  }
  for (const auto& d : list.discs) {
    cairo_new_path(cr);
    cairo_arc(cr, d.centre.x, d.centre.y, d.radius, 0, 2 * M_PI);
    cairo_set_source_rgb(cr, d.fill.r, d.fill.g, d.fill.b);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, d.outline.r, d.outline.g, d.outline.b);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (const auto& t : list.texts) {
    cairo_save(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           t.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, t.size);
    cairo_text_extents_t extents;
    cairo_text_extents(cr, t.text.c_str(), &extents);
    double shift = 0;
    if (t.anchor == Text::Anchor::kCentre) shift = -extents.x_advance / 2;
    if (t.anchor == Text::Anchor::kRight) shift = -extents.x_advance;
    cairo_translate(cr, t.at.x, t.at.y);
    if (t.vertical) cairo_rotate(cr, -M_PI / 2);
    cairo_move_to(cr, shift, 0);
    cairo_show_text(cr, t.text.c_str());
    cairo_restore(cr);
  }
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};

void Check(cairo_status_t status, const stdfs::path& path) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw DataError(fmt::format("{}: cannot write the plot: {}", path.string(), cairo_status_to_string(status)));
  }
}

}  // namespace

void RenderFile(const Figure& figure, const stdfs::path& path, const RenderOptions& options) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext != ".png" && ext != ".svg") {
    throw ConfigError(fmt::format("--out {}: unknown plot format '{}'; use a file name ending in .png or .svg",
                                  path.string(), ext));
  }
  const DisplayList list = Draw(figure, options);
  // cairo writes into memory; the file is then written as every output is (fs::WriteFileAtomic:
  // a regular file atomically, never replacing a directory, device or link).
  std::string bytes;
  const cairo_write_func_t append = [](void* closure, const unsigned char* data, unsigned int length) {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  };
  std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface(
      ext == ".png" ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(std::lround(options.width)),
                                                 static_cast<int>(std::lround(options.height)))
                    : cairo_svg_surface_create_for_stream(append, &bytes, options.width, options.height));
  Check(cairo_surface_status(surface.get()), path);
  {
    std::unique_ptr<cairo_t, ContextDeleter> cr(cairo_create(surface.get()));
    Paint(cr.get(), list);
    Check(cairo_status(cr.get()), path);
  }
  if (ext == ".png") {
    Check(cairo_surface_write_to_png_stream(surface.get(), append, &bytes), path);
  } else {
    cairo_surface_finish(surface.get());
    Check(cairo_surface_status(surface.get()), path);
  }
  fs::WriteFileAtomic(path, bytes);
}

}  // namespace asv::plot
