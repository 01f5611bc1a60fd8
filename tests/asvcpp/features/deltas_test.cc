#include "asvcpp/features/deltas.h"

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

TEST(FeaturesDeltas, KaldiScales) {
  const auto s = DeltaScales(DeltaOptions{});  // order 2, window 2
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], std::vector<float>{1.0f});
  const std::vector<float> d1 = {-0.2f, -0.1f, 0.0f, 0.1f, 0.2f};
  ASSERT_EQ(s[1].size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(s[1][i], d1[i]);
  // Order 2 = [-2 -1 0 1 2] * [-2 -1 0 1 2] / 100.
  const std::vector<float> d2 = {0.04f, 0.04f, 0.01f, -0.04f, -0.1f, -0.04f, 0.01f, 0.04f, 0.04f};
  ASSERT_EQ(s[2].size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(s[2][i], d2[i], 1e-7) << i;
}

TEST(FeaturesDeltas, RampHasUnitDeltaAndZeroAcceleration) {
  const int T = 20;
  Matrix x(T, 2);
  for (int t = 0; t < T; ++t) {
    x(t, 0) = static_cast<float>(t);
    x(t, 1) = 3.0f - 2.0f * t;
  }
  DeltaOptions o;
  o.order = 2;
  o.window = 2;
  const Matrix y = ComputeDeltas(o, x);
  ASSERT_EQ(y.rows(), T);
  ASSERT_EQ(y.cols(), 6);
  for (int t = 0; t < T; ++t) {
    EXPECT_EQ(y(t, 0), x(t, 0));
    EXPECT_EQ(y(t, 1), x(t, 1));
  }
  for (int t = 4; t < T - 4; ++t) {  // away from the replicated edges
    EXPECT_NEAR(y(t, 2), 1.0f, 1e-5);
    EXPECT_NEAR(y(t, 3), -2.0f, 1e-5);
    EXPECT_NEAR(y(t, 4), 0.0f, 1e-5);
    EXPECT_NEAR(y(t, 5), 0.0f, 1e-5);
  }
  // Frame 0 sees frames −2, −1 replaced by frame 0: (1·1 + 2·2) / 10.
  EXPECT_NEAR(y(0, 2), 0.5f, 1e-6);
  EXPECT_NEAR(y(T - 1, 2), 0.5f, 1e-6);
  // Order 1, window 3: filter j/28, j = −3..3.
  o.order = 1;
  o.window = 3;
  const Matrix z = ComputeDeltas(o, x);
  ASSERT_EQ(z.cols(), 4);
  EXPECT_NEAR(z(10, 2), 1.0f, 1e-5);
  EXPECT_NEAR(z(0, 2), (1 + 4 + 9) / 28.0f, 1e-6);
}

TEST(FeaturesDeltas, OptionChecksAndEmptyInput) {
  DeltaOptions o;
  o.window = 0;
  EXPECT_THROW(ComputeDeltas(o, Matrix(2, 2)), DataError);
  o = DeltaOptions();
  o.order = -1;
  EXPECT_THROW(ComputeDeltas(o, Matrix(2, 2)), DataError);
  o = DeltaOptions();
  o.order = 0;
  const Matrix x(3, 2, 1.5f);
  EXPECT_EQ(ComputeDeltas(o, x), x);
  EXPECT_EQ(ComputeDeltas(DeltaOptions{}, Matrix(0, 5)).cols(), 15);
}

}  // namespace
}  // namespace asv::features
