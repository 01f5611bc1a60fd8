// Timing helpers shared by the asv_bench_* programs that run_benchmarks.py drives: warm-up runs,
// timed repeats, and the JSON form of the median and spread.
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::bench {

using Json = nlohmann::ordered_json;

/// Wall-clock seconds of `repeats` timed calls, after `warmup` untimed ones.
struct Timing {
  std::vector<double> seconds;

  double Median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    const std::size_t n = s.size();
    if (n == 0) return 0.0;
    return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
  double Min() const { return seconds.empty() ? 0.0 : *std::min_element(seconds.begin(), seconds.end()); }
  double Max() const { return seconds.empty() ? 0.0 : *std::max_element(seconds.begin(), seconds.end()); }

  /// {"median": s, "min": s, "max": s, "repeats": n, "unit": "s"}.
  Json ToJson() const {
    return Json{{"median", Median()}, {"min", Min()}, {"max", Max()},
                {"repeats", static_cast<int>(seconds.size())}, {"unit", "s"}};
  }
};

/// Calls fn() `warmup` times untimed, then `repeats` times timed (each call timed alone).
/// `budget_s` > 0 bounds the total time of a slow case: once warm-up and timed calls together
/// have taken longer, no further call starts, but at least one call is always timed (the first
/// one then counts as timed, with no warm-up, when a single call exceeds the budget).
template <class Fn>
Timing Measure(int warmup, int repeats, Fn&& fn, double budget_s = 0.0) {
  using Clock = std::chrono::steady_clock;
  const auto begin = Clock::now();
  auto over = [&] { return budget_s > 0 && std::chrono::duration<double>(Clock::now() - begin).count() > budget_s; };
  Timing timing;
  for (int i = 0; i < warmup && !over(); ++i) {
    const auto start = Clock::now();
    fn();
    if (over()) timing.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (int i = 0; i < repeats && (timing.seconds.empty() || !over()); ++i) {
    const auto start = Clock::now();
    fn();
    timing.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return timing;
}

/// Writes `report` to `path` ("-" or empty: stdout), indented.
inline void WriteJson(const Json& report, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout << report.dump(2) << "\n";
    return;
  }
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

/// The body of a benchmark's main(): returns main_fn(argc, argv), or logs an exception's message
/// and returns its exit code (asv::ExitCodeFor), as asvrun does.
template <class Fn>
int RunMain(Fn&& main_fn, int argc, char** argv) {
  try {
    return main_fn(argc, argv);
  } catch (const std::exception& e) {
    ASV_LOG(Error, "{}", e.what());
    return asv::ExitCodeFor(e);
  }
}

}  // namespace asv::bench
