#include "asvcpp/plot/figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace asv::plot {

double Axis::Transform(double value) const { return scale == Scale::kProbit ? eval::Probit(value) : value; }

double Axis::Fraction(double value) const {
  const double lo = Transform(min);
  const double hi = Transform(max);
  return (Transform(value) - lo) / (hi - lo);
}

const std::vector<double>& DetTickProbabilities() { return eval::DetAxisTicks(); }

namespace {

bool Inside(const eval::DetPoint& p) { return p.p_miss > 0 && p.p_miss < 1 && p.p_fa > 0 && p.p_fa < 1; }

// The standard normal CDF, inverse of eval::Probit.
double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// A probit axis from `min` (a tick) to 40 %, with the ticks in that range.
Axis DetAxis(const std::string& title, double min) {
  Axis axis;
  axis.title = title;
  axis.scale = Scale::kProbit;
  axis.min = min;
  axis.max = DetTickProbabilities().back();
  for (double p : DetTickProbabilities()) {
    if (p >= min) axis.ticks.push_back({p, fmt::format("{:g}", p * 100)});
  }
  return axis;
}

}  // namespace

std::optional<double> DetEer(const std::vector<eval::DetPoint>& points) {
  std::optional<double> previous_d;
  eval::DetPoint previous;
  for (const auto& p : points) {
    if (!Inside(p)) continue;
    const double d = eval::Probit(p.p_miss) - eval::Probit(p.p_fa);
    if (d == 0) return p.p_miss;
    if (previous_d && ((*previous_d < 0) != (d < 0))) {
      // Interpolate the probit coordinates between the previous point and this one.
      const double t = *previous_d / (*previous_d - d);
      const double z = eval::Probit(previous.p_fa) + t * (eval::Probit(p.p_fa) - eval::Probit(previous.p_fa));
      return Phi(z);
    }
    previous_d = d;
    previous = p;
  }
  return std::nullopt;
}

Figure DetFigure(const std::vector<DetCurve>& curves, const std::string& title) {
  Figure figure;
  figure.title = title;
  double min = DetTickProbabilities().back();
  for (const auto& curve : curves) min = std::min(min, eval::DetAxisMin(curve.points));
  if (curves.empty()) min = eval::DetAxisMin({});
  figure.x = DetAxis("False alarm probability (%)", min);
  figure.y = DetAxis("Miss probability (%)", min);
  figure.equal_aspect = true;
  figure.diagonal = true;
  for (const auto& curve : curves) {
    Series series;
    series.name = curve.name;
    for (const auto& p : curve.points) {
      if (Inside(p)) series.points.push_back({p.p_fa, p.p_miss});
    }
    const auto eer = DetEer(curve.points);
    if (eer) {
      series.name += fmt::format(" EER {:.2f} %", *eer * 100);
      figure.markers.push_back({figure.series.size(), {*eer, *eer}, "EER"});
    }
    figure.series.push_back(std::move(series));
  }
  return figure;
}

std::vector<double> NiceTicks(double min, double max, int target) {
  if (!std::isfinite(min) || !std::isfinite(max) || min > max) {
    throw std::invalid_argument(fmt::format("NiceTicks: bad range [{}, {}]", min, max));
  }
  target = std::max(target, 2);
  double span = max - min;
  if (span == 0) span = min != 0 ? std::abs(min) : 1.0;
  const double raw = span / (target - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  double first = std::floor(min / step) * step;
  double last = std::ceil(max / step) * step;
  if (first == last) {
    first -= step;
    last += step;
  }
  std::vector<double> ticks;
  const auto n = static_cast<long>(std::llround((last - first) / step));
  for (long i = 0; i <= n; ++i) {
    double v = first + static_cast<double>(i) * step;
    if (std::abs(v) < step * 1e-9) v = 0;  // -0 and rounding noise at zero
    ticks.push_back(v);
  }
  return ticks;
}

std::string TickLabel(double value, double step) {
  if (step >= 1e6 || step < 1e-4) return fmt::format("{:.3g}", value);
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return fmt::format("{:.{}f}", value, decimals);
}

Figure CurvesFigure(const std::vector<Series>& series, const std::string& y_title, const std::string& title) {
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min;
  double y_min = x_min;
  double y_max = -x_min;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y);
      y_max = std::max(y_max, p.y);
    }
  }
  if (!std::isfinite(x_min) || !std::isfinite(y_min)) throw std::invalid_argument("CurvesFigure: no points to plot");
  Figure figure;
  figure.title = title;
  figure.series = series;
  figure.point_dots = true;
  auto make_axis = [](const std::string& axis_title, const std::vector<double>& values) {
    Axis axis;
    axis.title = axis_title;
    axis.min = values.front();
    axis.max = values.back();
    const double step = values.size() > 1 ? values[1] - values[0] : 1;
    for (double v : values) axis.ticks.push_back({v, TickLabel(v, step)});
    return axis;
  };
  // Epochs are whole numbers: ticks at least one epoch apart.
  auto x_ticks = NiceTicks(x_min, x_max, 8);
  if (x_ticks.size() > 1 && x_ticks[1] - x_ticks[0] < 1) {
    x_ticks.clear();
    for (double e = std::floor(x_min); e <= std::ceil(x_max); e += 1) x_ticks.push_back(e);
    if (x_ticks.size() == 1) x_ticks = {x_ticks[0] - 1, x_ticks[0], x_ticks[0] + 1};
  }
  figure.x = make_axis("epoch", x_ticks);
  figure.y = make_axis(y_title, NiceTicks(y_min, y_max, 6));
  return figure;
}

}  // namespace asv::plot
