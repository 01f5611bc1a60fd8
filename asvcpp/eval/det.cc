#include "asvcpp/eval/det.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::eval {
namespace {

constexpr const char* kDetHeader = "p_miss\tp_fa\tprobit_miss\tprobit_fa\tthreshold";

// Acklam's approximation for p in (0, 0.5].
double AcklamLowerHalf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double p_low = 0.02425;
  if (p < p_low) {
    const double q = std::sqrt(-2.0 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

}  // namespace

double Probit(double p) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) throw std::invalid_argument(fmt::format("Probit: {} is not in [0, 1]", p));
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();
  if (p > 0.5) return -Probit(1.0 - p);  // 1 - p is exact for p in [0.5, 1]
  double x = AcklamLowerHalf(p);
  // Halley steps on Phi(x) - p, Phi(x) = erfc(-x / sqrt 2) / 2.
  for (int i = 0; i < 2; ++i) {
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double u = e * std::sqrt(2.0 * M_PI) * std::exp(x * x / 2.0);
    if (!std::isfinite(u)) break;  // p near the smallest doubles: the approximation stands
    x = x - u / (1.0 + x * u / 2.0);
  }
  return x;
}

std::vector<DetPoint> DetPoints(const SortedScores& scores, std::size_t max_points) {
  if (max_points < 2) throw std::invalid_argument("DetPoints: max_points must be at least 2");
  const DetCurve curve = scores.Curve();
  std::vector<DetPoint> all(curve.frr.size());
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = {curve.frr[k], curve.far[k], curve.thresholds[k]};
  return ThinDetPoints(all, max_points, static_cast<std::size_t>(scores.Eer().index));
}

const std::vector<double>& DetAxisTicks() {
  static const std::vector<double> ticks = {0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005,
                                            0.01,   0.02,   0.05,   0.1,   0.2,   0.4};
  return ticks;
}

double DetAxisMin(const std::vector<DetPoint>& points) {
  const auto& ticks = DetAxisTicks();
  double lowest = 0.001;  // the axes show at least 0.1-40 %
  for (const auto& p : points) {
    if (p.p_miss > 0 && p.p_fa > 0 && p.p_miss <= ticks.back() && p.p_fa <= ticks.back()) {
      lowest = std::min({lowest, p.p_miss, p.p_fa});
    }
  }
  // The largest tick at or below `lowest` (the smallest tick when none is).
  double axis_min = ticks.front();
  for (double t : ticks) {
    if (t <= lowest * (1 + 1e-12)) axis_min = t;
  }
  return axis_min;
}

std::vector<DetPoint> ThinDetPoints(const std::vector<DetPoint>& all, std::size_t max_points, std::size_t keep) {
  if (max_points < 2) throw std::invalid_argument("ThinDetPoints: max_points must be at least 2");
  struct Candidate {
    std::size_t k;
    double x, y;
  };
  std::vector<Candidate> inside;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const double miss = all[k].p_miss, fa = all[k].p_fa;
    if (miss > 0 && miss < 1 && fa > 0 && fa < 1) inside.push_back({k, Probit(fa), Probit(miss)});
  }
  std::vector<DetPoint> points;
  if (inside.empty()) return points;
  double length = 0;
  for (std::size_t i = 1; i < inside.size(); ++i) {
    length += std::hypot(inside[i].x - inside[i - 1].x, inside[i].y - inside[i - 1].y);
  }
  const double step = length / static_cast<double>(max_points);
  points.push_back(all[inside.front().k]);
  Candidate last = inside.front();
  for (std::size_t i = 1; i + 1 < inside.size(); ++i) {
    const Candidate& c = inside[i];
    if (c.k == keep || std::hypot(c.x - last.x, c.y - last.y) >= step) {
      points.push_back(all[c.k]);
      last = c;
    }
  }
  if (inside.size() > 1) points.push_back(all[inside.back().k]);
  return points;
}

std::string DetFileName(const std::string& trial_list, std::int64_t run_id) {
  return run_id > 0 ? fmt::format("det_{}.run{}.tsv", trial_list, run_id) : fmt::format("det_{}.tsv", trial_list);
}

std::optional<std::string> TrialListOfDetFile(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const std::string_view prefix = "det_", suffix = ".tsv";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  std::string list = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  // A run's suffix ".run<digits>".
  const auto dot = list.rfind(".run");
  if (dot != std::string::npos && dot > 0 && dot + 4 < list.size() &&
      std::all_of(list.begin() + static_cast<std::ptrdiff_t>(dot) + 4, list.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    list.erase(dot);
  }
  return list;
}

void WriteDetPoints(const std::filesystem::path& path, const std::vector<DetPoint>& points) {
  std::string text = std::string(kDetHeader) + "\n";
  for (const DetPoint& p : points) {
    text += fmt::format("{:.17g}\t{:.17g}\t{:.17g}\t{:.17g}\t{:.17g}\n", p.p_miss, p.p_fa, Probit(p.p_miss),
                        Probit(p.p_fa), p.threshold);
  }
  fs::WriteFileAtomic(path, text);
}

std::vector<DetPoint> ReadDetPoints(const std::filesystem::path& path) {
  std::error_code type_ec;
  if (std::filesystem::exists(path, type_ec) && !std::filesystem::is_regular_file(path, type_ec)) {
    // A FIFO named in the database would block the reader forever.
    throw DataError(fmt::format("{}: not a regular file, expected a DET file", path.string()));
  }
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("{}: cannot open DET file", path.string()));
  std::string line;
  if (!std::getline(in, line) || line != kDetHeader) {
    throw DataError(fmt::format("{}:1: not a DET file: expected the header \"{}\"", path.string(), kDetHeader));
  }
  std::vector<DetPoint> points;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    // Split by hand into 5 fields, each read whole by std::from_chars (which also reads the "inf"
    // and "-inf" of infinite thresholds; a thousand files of a report read in a fraction of the
    // time of a stream and std::stod per field).
    if (line.back() == '\r') line.pop_back();
    std::string_view fields[5];
    std::size_t count = 0;
    for (std::size_t start = 0;; ++count) {
      const std::size_t tab = line.find('\t', start);
      if (count < 5) fields[count] = std::string_view(line).substr(start, tab == std::string::npos ? tab : tab - start);
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    const auto number_of = [&](std::string_view field, double& out) {
      const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
      return ec == std::errc() && end == field.data() + field.size() && !field.empty();
    };
    DetPoint p;
    if (count + 1 != 5 || !number_of(fields[0], p.p_miss) || !number_of(fields[1], p.p_fa) ||
        !number_of(fields[4], p.threshold)) {
      throw DataError(fmt::format("{}:{}: expected 5 tab-separated numbers, got \"{}\"", path.string(), number, line));
    }
    if (!(p.p_miss >= 0 && p.p_miss <= 1 && p.p_fa >= 0 && p.p_fa <= 1)) {
      throw DataError(fmt::format("{}:{}: rates must be fractions in [0, 1], got p_miss {} and p_fa {}", path.string(),
                                  number, p.p_miss, p.p_fa));
    }
    points.push_back(p);
  }
  return points;
}

}  // namespace asv::eval
