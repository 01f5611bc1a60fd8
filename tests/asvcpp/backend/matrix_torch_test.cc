#include "asvcpp/backend/matrix_torch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace asv::backend {
namespace {

// Each value rounded to the nearest float (ties and subnormals as a static_cast does), row-major
// order kept, shape and dtype; doubles beyond float's range become infinities.
TEST(MatrixTorch, ToFloatTensorRoundsEachValue) {
  MatrixD m(2, 3);
  const double values[] = {1.0 / 3.0, -2.5, 1e-40, 3e38, 1e39, -0.0};
  for (int i = 0; i < 6; ++i) m.data()[i] = values[i];
  const torch::Tensor t = ToFloatTensor(m);
  ASSERT_EQ(t.scalar_type(), torch::kFloat32);
  ASSERT_EQ(t.dim(), 2);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(1), 3);
  ASSERT_TRUE(t.is_contiguous());
  const float* f = t.data_ptr<float>();
  EXPECT_EQ(f[0], 1.0f / 3.0f);
  EXPECT_EQ(f[1], -2.5f);
  EXPECT_EQ(f[2], static_cast<float>(1e-40));
  EXPECT_GT(f[2], 0.0f);
  EXPECT_EQ(f[3], 3e38f);
  EXPECT_EQ(f[4], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(f[5] == 0.0f && std::signbit(f[5]));
  EXPECT_EQ(t[1][0].item<float>(), 3e38f);  // row-major: element (1, 0) is the fourth value

  const torch::Tensor empty = ToFloatTensor(MatrixD(0, 4));
  EXPECT_EQ(empty.size(0), 0);
  EXPECT_EQ(empty.size(1), 4);
  EXPECT_EQ(empty.scalar_type(), torch::kFloat32);
}

}  // namespace
}  // namespace asv::backend
