// The SplitMix64 stream and the "splitmix_irwin_hall" score generator of
// tools/golden/make_metric_golden.py, reproduced bit for bit, for the golden tests of asvcpp/eval
// and asvcpp/backend (tools/golden/make_plda_golden.py draws from the same stream).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace asv::eval::testing {

// The "splitmix_irwin_hall" generator of make_metric_golden.py.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// u = (z >> 11) * 2^-53, in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  /// ((u1 + u2) + u3) + u4 - 2: an Irwin-Hall variable (mean 0, variance 1/3), added in Python's
  /// order.
  double IrwinHall() {
    double g = Uniform();
    g = g + Uniform();
    g = g + Uniform();
    g = g + Uniform();
    return g - 2.0;
  }

 private:
  std::uint64_t state_;
};

inline void Generate(const nlohmann::json& spec, std::vector<double>* tar, std::vector<double>* non) {
  SplitMix64 rng(spec.at("seed").get<std::uint64_t>());
  const double scale = spec.at("scale").get<double>();
  const double quantum = spec.at("quantum").get<double>();
  auto draw = [&](std::int64_t n, double mean, std::vector<double>* out) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double u0 = rng.Uniform(), u1 = rng.Uniform(), u2 = rng.Uniform(), u3 = rng.Uniform();
      volatile double g = u0 + u1;  // volatile: keep the rounding of each step as in Python
      g = g + u2;
      g = g + u3;
      g = g - 2.0;
      volatile double prod = scale * g;
      double s = mean + prod;
      if (quantum > 0) s = std::floor(s / quantum) * quantum;
      out->push_back(s);
    }
  };
  draw(spec.at("n_target").get<std::int64_t>(), spec.at("target_mean").get<double>(), tar);
  draw(spec.at("n_nontarget").get<std::int64_t>(), spec.at("nontarget_mean").get<double>(), non);
}

}  // namespace asv::eval::testing
