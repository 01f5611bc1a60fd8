#include "asvcpp/backend/vector_processor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::backend {
namespace {

// [n, dim] correlated Gaussian data with a non-zero mean.
Matrix CorrelatedData(std::int64_t n, std::int64_t dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> mix(static_cast<std::size_t>(dim * dim));
  for (double& v : mix) v = g(rng);
  Matrix x(n, dim);
  std::vector<double> z(static_cast<std::size_t>(dim));
  for (std::int64_t r = 0; r < n; ++r) {
    for (double& v : z) v = g(rng);
    for (std::int64_t i = 0; i < dim; ++i) {
      double acc = 3.0 + i;
      for (std::int64_t j = 0; j < dim; ++j) acc += mix[static_cast<std::size_t>(i * dim + j)] * z[static_cast<std::size_t>(j)] * (j + 1);
      x(r, i) = static_cast<float>(acc);
    }
  }
  return x;
}

// X^T X / N in double.
std::vector<double> SecondMoment(const Matrix& x) {
  const std::int64_t d = x.cols();
  std::vector<double> c(static_cast<std::size_t>(d * d), 0.0);
  for (std::int64_t r = 0; r < x.rows(); ++r) {
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j < d; ++j) c[static_cast<std::size_t>(i * d + j)] += double(x(r, i)) * x(r, j);
    }
  }
  for (double& v : c) v /= static_cast<double>(x.rows());
  return c;
}

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("asv_vp_test_" + std::to_string(::getpid()) + "_" + name);
}

TEST(VectorProcessor, CenteringAndWhiteningGiveZeroMeanIdentityCovariance) {
  const Matrix x = CorrelatedData(2000, 12, 1);
  Matrix processed;
  const VectorProcessor vp = VectorProcessor::Train(x, "cw", &processed);
  ASSERT_EQ(vp.centers().size(), 1u);
  ASSERT_EQ(vp.whitening_matrices().size(), 1u);
  EXPECT_NEAR(vp.centers()[0][5], 3.0 + 5, 2.0);
  const std::vector<double> c = SecondMoment(processed);
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) EXPECT_NEAR(c[i * 12 + j], i == j ? 1.0 : 0.0, 1e-4) << i << "," << j;
  }
  EXPECT_EQ(vp.Process(x), processed);
}

TEST(VectorProcessor, LengthNormGivesUnitNormsAndKeepsZeroVectors) {
  Matrix x = CorrelatedData(100, 7, 2);
  for (int j = 0; j < 7; ++j) x(3, j) = 0.0f;
  const VectorProcessor vp = VectorProcessor::Train(x, "l");
  const Matrix y = vp.Process(x);
  for (std::int64_t r = 0; r < y.rows(); ++r) {
    double n2 = 0;
    for (int j = 0; j < 7; ++j) n2 += double(y(r, j)) * y(r, j);
    if (r == 3) {
      EXPECT_EQ(n2, 0.0);
    } else {
      EXPECT_NEAR(std::sqrt(n2), 1.0, 1e-6);
    }
  }
}

TEST(VectorProcessor, RepeatedStepsEachHaveTheirOwnParameters) {
  const Matrix x = CorrelatedData(500, 6, 3);
  Matrix processed;
  const VectorProcessor vp = VectorProcessor::Train(x, "cwlcwl", &processed);
  EXPECT_EQ(vp.centers().size(), 2u);
  EXPECT_EQ(vp.whitening_matrices().size(), 2u);
  EXPECT_NE(vp.centers()[0], vp.centers()[1]);
  const Matrix again = vp.Process(x);
  for (std::int64_t i = 0; i < x.rows() * x.cols(); ++i) EXPECT_NEAR(again.data()[i], processed.data()[i], 1e-6);
  // The second centering was trained on length-normalised whitened vectors: its mean is small.
  double n2 = 0;
  for (double v : vp.centers()[1]) n2 += v * v;
  EXPECT_LT(std::sqrt(n2), 1.0);
}

TEST(VectorProcessor, UnknownStepsAreErrors) {
  const Matrix x = CorrelatedData(10, 3, 4);
  EXPECT_THROW(VectorProcessor::Train(x, "cwx"), ConfigError);
  EXPECT_THROW(VectorProcessor::Train(x, "CWL"), ConfigError);
  EXPECT_THROW(VectorProcessor::Train(x, "c w"), ConfigError);
  try {
    VectorProcessor::ValidateInstruction("cwlq");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'q' at position 4"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(VectorProcessor::ValidateInstruction(""));
  EXPECT_THROW(VectorProcessor::Train(Matrix(0, 3), "c"), DataError);
  Matrix bad = x;
  bad(1, 1) = std::nanf("");
  EXPECT_THROW(VectorProcessor::Train(bad, "c"), DataError);
}

TEST(VectorProcessor, DefaultIsIdentityAndDimensionIsChecked) {
  const Matrix x = CorrelatedData(10, 3, 5);
  EXPECT_EQ(VectorProcessor().Process(x), x);
  const VectorProcessor vp = VectorProcessor::Train(x, "cl");
  EXPECT_EQ(vp.dim(), 3);
  EXPECT_THROW(vp.Process(Matrix(2, 4)), std::invalid_argument);
}

TEST(VectorProcessor, SaveLoadRoundTrip) {
  const Matrix x = CorrelatedData(300, 5, 6);
  const VectorProcessor vp = VectorProcessor::Train(x, "cwlc");
  const auto path = TempPath("vp.bin");
  vp.Save(path);
  const VectorProcessor loaded = VectorProcessor::Load(path);
  EXPECT_EQ(loaded.instruction(), "cwlc");
  EXPECT_EQ(loaded.centers(), vp.centers());
  EXPECT_EQ(loaded.whitening_matrices(), vp.whitening_matrices());
  EXPECT_EQ(loaded.Process(x), vp.Process(x));
  // Truncated and foreign files.
  const std::string bytes = fs::ReadFile(path);
  fs::WriteFileAtomic(path, bytes.substr(0, bytes.size() - 3));
  EXPECT_THROW(VectorProcessor::Load(path), DataError);
  fs::WriteFileAtomic(path, "ASVPLDA\0 this is something else entirely");
  EXPECT_THROW(VectorProcessor::Load(path), DataError);
  std::filesystem::remove(path);
  EXPECT_THROW(VectorProcessor::Load(path), DataError);
}

}  // namespace
}  // namespace asv::backend
