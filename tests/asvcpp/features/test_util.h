// Helpers shared by the feature tests: the deterministic golden test signal (mirrors
// test_signal() in tools/golden/make_feature_golden.py), ASVtorch's MFCC options, golden-file
// reading, temp folders, the message of a DataError.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/matrix.h"
#include "asvcpp/features/mfcc.h"
#include "tests/build_paths.h"

namespace asv::features::testing {

/// The message of the DataError that `f()` throws, or "<no DataError>" when it throws none.
template <class F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "<no DataError>";
}

/// ASVtorch's MFCC options (run_configs/voxceleb/xvector/mfcc.conf: no edge snipping, 30 mel
/// bins up to 7900 Hz, 30 cepstra) with the given dither (0: deterministic).
inline MfccOptions AsvtorchMfccOptions(float dither) {
  MfccOptions o;
  o.frame_opts.dither = dither;
  o.frame_opts.snip_edges = false;
  o.mel_opts.num_bins = 30;
  o.mel_opts.high_freq = 7900.0f;
  o.num_ceps = 30;
  return o;
}

constexpr int kGoldenSampleRate = 16000;
constexpr std::int64_t kGoldenNumSamples = 40000;  // 2.5 s

/// Integer-valued samples in the int16 range: alternating 0.25 s segments of three sines plus
/// LCG noise and of weak LCG noise. Must stay identical to the Python generator.
inline std::vector<float> GoldenSignal() {
  std::uint32_t state = 12345;
  std::vector<float> samples;
  samples.reserve(kGoldenNumSamples);
  for (std::int64_t i = 0; i < kGoldenNumSamples; ++i) {
    state = 1664525u * state + 1013904223u;  // mod 2^32 by wrap-around
    const auto noise = static_cast<std::int64_t>((state >> 8) % 2001) - 1000;
    double x;
    if ((i / 4000) % 2 == 0) {
      const double t = static_cast<double>(i) / kGoldenSampleRate;
      x = 3000.0 * std::sin(2.0 * M_PI * 440.0 * t) + 1500.0 * std::sin(2.0 * M_PI * 1234.0 * t) +
          800.0 * std::sin(2.0 * M_PI * 3001.0 * t) + static_cast<double>(noise);
    } else {
      x = static_cast<double>(noise) / 50.0;
    }
    double v = std::floor(x + 0.5);
    v = std::max(-32768.0, std::min(32767.0, v));
    samples.push_back(static_cast<float>(v));
  }
  return samples;
}

/// A golden file: '#' header lines, "# shape: R C", then R rows of C numbers.
struct GoldenFile {
  std::vector<std::string> header;
  Matrix values;
};

inline GoldenFile ReadGolden(const std::string& name) {
  const std::string path = std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/features/golden/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  GoldenFile g;
  std::string line;
  std::int64_t rows = -1, cols = -1, r = 0;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      g.header.push_back(line);
      if (line.rfind("# shape:", 0) == 0) {
        std::istringstream ss(line.substr(8));
        ss >> rows >> cols;
        g.values = Matrix(rows, cols);
      }
      continue;
    }
    if (rows < 0) throw std::runtime_error(path + ": data before '# shape:'");
    std::istringstream ss(line);
    for (std::int64_t c = 0; c < cols; ++c) {
      double v;
      if (!(ss >> v)) throw std::runtime_error(path + ": short row");
      g.values(r, c) = static_cast<float>(v);
    }
    ++r;
  }
  if (r != rows) throw std::runtime_error(path + ": row count differs from the shape line");
  return g;
}

/// A fresh, empty folder under the system temp folder.
inline std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("asv_features_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Columns [0, n) of `m`.
inline Matrix FirstColumns(const Matrix& m, std::int64_t n) {
  Matrix out(m.rows(), n);
  for (std::int64_t r = 0; r < m.rows(); ++r)
    for (std::int64_t c = 0; c < n; ++c) out(r, c) = m(r, c);
  return out;
}

}  // namespace asv::features::testing
