// The cairo renderer of asvcpp/plot/render.h: the display list by its data, the SVG by its
// paths and glyphs, the PNG decoded again by cairo and checked pixel by pixel.
#include "asvcpp/plot/render.h"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::plot {
namespace {

namespace fs = std::filesystem;

// A DET figure of two curves, bent on probit axes (cairo merges collinear segments of a path, so
// a straight line would not keep a point per data point), each crossing the diagonal.
Figure TwoCurves() {
  const auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  std::vector<eval::DetPoint> a;
  std::vector<eval::DetPoint> b;
  for (int i = 0; i < 12; ++i) {
    a.push_back({phi(-2.6 + 0.2 * i + 0.012 * i * i), phi(-0.26 * i), 0.1 * i});
    if (i < 9) b.push_back({phi(-1.9 + 0.25 * i + 0.01 * i * i), phi(-0.1 - 0.3 * i), 0.1 * i});
  }
  return DetFigure({{"net (run 1) vox1_o", a}, {"net (run 2) vox1_o", b}}, "DET");
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "rgb(12.156863%,46.666667%,70.588235%)" -> colour, as cairo's SVG surface writes it.
bool SameColour(const std::string& rgb, const Colour& c) {
  std::smatch m;
  static const std::regex pattern(R"(rgb\(([0-9.]+)%, ?([0-9.]+)%, ?([0-9.]+)%\))");
  if (!std::regex_search(rgb, m, pattern)) return false;
  return std::abs(std::stod(m[1]) / 100 - c.r) < 1e-3 && std::abs(std::stod(m[2]) / 100 - c.g) < 1e-3 &&
         std::abs(std::stod(m[3]) / 100 - c.b) < 1e-3;
}

TEST(RenderTest, DisplayListHasAPointPerDataPointTickLabelsAndLegend) {
  const Figure figure = TwoCurves();
  const DisplayList list = Draw(figure);
  EXPECT_EQ(list.width, 640);
  EXPECT_EQ(list.height, 480);
  EXPECT_DOUBLE_EQ(list.plot.width, list.plot.height);  // equal aspect
  std::vector<const Polyline*> series;
  for (const auto& l : list.lines) {
    if (l.series >= 0) series.push_back(&l);
  }
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0]->points.size(), figure.series[0].points.size());
  EXPECT_EQ(series[1]->points.size(), figure.series[1].points.size());
  // 1 % false alarms: the x position in proportion to the probit.
  const double frac = (eval::Probit(0.01) - eval::Probit(0.001)) / (eval::Probit(0.4) - eval::Probit(0.001));
  EXPECT_NEAR(ToDevice(figure, list.plot, {0.01, 0.4}).x, list.plot.x + frac * list.plot.width, 1e-9);
  EXPECT_NEAR(ToDevice(figure, list.plot, {0.4, 0.01}).y, list.plot.y + (1 - frac) * list.plot.height, 1e-9);
  std::vector<std::string> texts;
  for (const auto& t : list.texts) texts.push_back(t.text);
  for (const char* label : {"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"}) {
    EXPECT_EQ(std::count(texts.begin(), texts.end(), label), 2) << label;  // on both axes
  }
  EXPECT_NE(std::find(texts.begin(), texts.end(), figure.series[0].name), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), figure.series[1].name), texts.end());
  ASSERT_EQ(list.discs.size(), 2u);
  EXPECT_NEAR(list.discs[0].centre.x, ToDevice(figure, list.plot, figure.markers[0].at).x, 1e-9);
}

TEST(RenderTest, CurveFiguresHaveADotAtEveryPointInsideThePlot) {
  const Figure figure = CurvesFigure({{"a", {{1, 3.5}, {2, 2.0}, {3, 1.2}}}, {"b", {{4, 0.5}}}}, "loss");
  const DisplayList list = Draw(figure);
  ASSERT_EQ(list.discs.size(), 4u);
  EXPECT_NEAR(list.discs[1].centre.x, ToDevice(figure, list.plot, {2, 2.0}).x, 1e-9);
  EXPECT_NEAR(list.discs[1].centre.y, ToDevice(figure, list.plot, {2, 2.0}).y, 1e-9);
  EXPECT_DOUBLE_EQ(list.discs[3].fill.g, Palette()[1].g);
}

TEST(RenderTest, SvgHasTheSeriesPathsAndAGlyphPerCharacterOfEveryText) {
  db::testing::ScopedDir dir("plot_svg");
  const Figure figure = TwoCurves();
  RenderFile(figure, dir / "det.svg");
  const std::string svg = Read(dir / "det.svg");
  ASSERT_NE(svg.find("<svg"), std::string::npos);
  // Series paths: stroked in the series' colour, a point ("M" or "L") per data point.
  static const std::regex path_pattern(R"RE(<path[^>]*style="([^"]*)"[^>]*d="([^"]*)")RE");
  std::vector<std::size_t> points_per_colour(2, 0);
  std::vector<int> paths_per_colour(2, 0);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path_pattern); it != std::sregex_iterator(); ++it) {
    const std::string style = (*it)[1];
    const std::string d = (*it)[2];
    if (style.find("stroke:") == std::string::npos) continue;
    for (int s = 0; s < 2; ++s) {
      if (!SameColour(style.substr(style.find("stroke:")), Palette()[s])) continue;
      const auto n = static_cast<std::size_t>(std::count(d.begin(), d.end(), 'M') + std::count(d.begin(), d.end(), 'L'));
      points_per_colour[s] = std::max(points_per_colour[s], n);
      ++paths_per_colour[s];
    }
  }
  // The curve and its legend line.
  EXPECT_EQ(paths_per_colour[0], 2);
  EXPECT_EQ(paths_per_colour[1], 2);
  EXPECT_EQ(points_per_colour[0], figure.series[0].points.size());
  EXPECT_EQ(points_per_colour[1], figure.series[1].points.size());
  // Text becomes glyphs: one <use> per character of every label, title and legend entry.
  std::size_t characters = 0;
  for (const auto& t : Draw(figure).texts) characters += t.text.size();
  std::size_t uses = 0;
  for (std::size_t at = svg.find("<use xlink:href=\"#glyph"); at != std::string::npos;
       at = svg.find("<use xlink:href=\"#glyph", at + 1)) {
    ++uses;
  }
  EXPECT_EQ(uses, characters);
}

TEST(RenderTest, PngHasTheSizeAndTheMarkerColourAtTheEerPoint) {
  db::testing::ScopedDir dir("plot_png");
  const Figure figure = TwoCurves();
  RenderOptions options;
  options.width = 500;
  options.height = 420;
  RenderFile(figure, dir / "det.png", options);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "det.png").c_str());
  ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(png), 500);
  EXPECT_EQ(cairo_image_surface_get_height(png), 420);
  const unsigned char* data = cairo_image_surface_get_data(png);
  const int stride = cairo_image_surface_get_stride(png);
  auto pixel = [&](Point p) {
    const auto* px = reinterpret_cast<const std::uint32_t*>(data + static_cast<int>(p.y) * stride) +
                     static_cast<int>(p.x);
    return Colour{((*px >> 16) & 0xff) / 255.0, ((*px >> 8) & 0xff) / 255.0, (*px & 0xff) / 255.0};
  };
  auto near = [](const Colour& a, const Colour& b) {
    return std::abs(a.r - b.r) < 0.02 && std::abs(a.g - b.g) < 0.02 && std::abs(a.b - b.b) < 0.02;
  };
  const DisplayList list = Draw(figure, options);
  for (std::size_t m = 0; m < figure.markers.size(); ++m) {
    const Point at = ToDevice(figure, list.plot, figure.markers[m].at);
    const Colour c = pixel(at);
    EXPECT_TRUE(near(c, Palette()[figure.markers[m].series]))
        << "marker " << m << " at " << at.x << "," << at.y << ": " << c.r << " " << c.g << " " << c.b;
  }
  // Far from every curve, inside the plot area (0.2 % false alarms, 0.2 % misses): background.
  const Colour empty = pixel(ToDevice(figure, list.plot, {0.0015, 0.0015}));
  EXPECT_TRUE(near(empty, {1, 1, 1})) << empty.r << " " << empty.g << " " << empty.b;
  // Halfway along each segment of the first curve inside the plot: the first curve's colour.
  const auto& pts = figure.series[0].points;
  int checked = 0;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const Point a = ToDevice(figure, list.plot, pts[i - 1]);
    const Point b = ToDevice(figure, list.plot, pts[i]);
    const Point mid{(a.x + b.x) / 2, (a.y + b.y) / 2};
    if (mid.x < list.plot.x + 5 || mid.x > list.plot.x + list.plot.width - 5 || mid.y > list.plot.y + list.plot.height - 5 || mid.y < list.plot.y + 5) continue;
    // Antialiasing blends the pixels the line's edge crosses: one of the 3 x 3 around the point
    // is covered fully.
    bool found = false;
    for (int dx = -1; dx <= 1; ++dx) {
      for (int dy = -1; dy <= 1; ++dy) found = found || near(pixel({mid.x + dx, mid.y + dy}), Palette()[0]);
    }
    EXPECT_TRUE(found) << "segment " << i << " at " << mid.x << "," << mid.y;
    ++checked;
  }
  EXPECT_GE(checked, 3);
  cairo_surface_destroy(png);
}

TEST(RenderTest, UnknownExtensionIsAConfigErrorAndAnUnwritablePathADataError) {
  db::testing::ScopedDir dir("plot_ext");
  EXPECT_THROW(RenderFile(TwoCurves(), dir / "det.pdf"), ConfigError);
  EXPECT_FALSE(fs::exists(dir / "det.pdf"));
  // Missing folders are made, as for every output; a file where a folder should be is an error.
  RenderFile(TwoCurves(), dir / "new_folder" / "det.png");
  EXPECT_TRUE(fs::is_regular_file(dir / "new_folder" / "det.png"));
  { std::ofstream(dir / "a_file") << "x"; }
  try {
    RenderFile(TwoCurves(), dir / "a_file" / "det.png");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("a_file/det.png"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace asv::plot
