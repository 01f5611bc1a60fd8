#include "asvcpp/features/vad.h"

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

TEST(FeaturesVad, HandComputedExample) {
  // mean = 34/7 = 4.857; threshold = 5 + 0.5·4.857 = 7.43: frames above: 0, 2, 3.
  const std::vector<float> log_energy = {10, 1, 10, 10, 1, 1, 1};
  VadOptions o;
  o.vad_energy_threshold = 5.0f;
  o.vad_energy_mean_scale = 0.5f;
  o.vad_frames_context = 1;
  o.vad_proportion_threshold = 0.5f;
  // Windows (clipped): {0,1}: 1/2 ≥ 1 → 1; {0,1,2}: 2/3 → 1; {1,2,3}: 2 → 1; {2,3,4}: 2 → 1;
  // {3,4,5}: 1 < 1.5 → 0; {4,5,6}: 0 → 0; {5,6}: 0 → 0.
  EXPECT_EQ(ComputeVadEnergy(o, log_energy.data(), 7), (std::vector<float>{1, 1, 1, 1, 0, 0, 0}));
  // Without context each frame decides alone; proportion 0.5 of 1 frame.
  o.vad_frames_context = 0;
  EXPECT_EQ(ComputeVadEnergy(o, log_energy.data(), 7), (std::vector<float>{1, 0, 1, 1, 0, 0, 0}));
  // Mean scale 0: fixed threshold 5 gives the same here; threshold 10 is not exceeded (strict >).
  o.vad_energy_mean_scale = 0.0f;
  o.vad_energy_threshold = 10.0f;
  EXPECT_EQ(ComputeVadEnergy(o, log_energy.data(), 7), (std::vector<float>(7, 0.0f)));
}

TEST(FeaturesVad, UsesColumnZeroOfFeatures) {
  Matrix feats(4, 3, 100.0f);
  feats(0, 0) = 20;
  feats(1, 0) = 0;
  feats(2, 0) = 20;
  feats(3, 0) = 0;
  // mean 10 -> threshold 5.5 + 5 = 10.5; VoxcelebV2 context 2, proportion 0.12: every window
  // contains a loud frame -> all voiced.
  EXPECT_EQ(ComputeVadEnergy(VadOptions::VoxcelebV2(), feats), (std::vector<float>{1, 1, 1, 1}));
  VadOptions single;
  single.vad_energy_threshold = 5.5f;
  EXPECT_EQ(ComputeVadEnergy(single, feats), (std::vector<float>{1, 0, 1, 0}));
  EXPECT_TRUE(ComputeVadEnergy(single, Matrix()).empty());
}

TEST(FeaturesVad, InvalidOptions) {
  const std::vector<float> e = {1, 2};
  VadOptions o;
  o.vad_proportion_threshold = 1.0f;
  EXPECT_THROW(ComputeVadEnergy(o, e.data(), 2), DataError);
  o = VadOptions();
  o.vad_frames_context = -1;
  EXPECT_THROW(ComputeVadEnergy(o, e.data(), 2), DataError);
  o = VadOptions();
  o.vad_energy_mean_scale = -0.5f;
  EXPECT_THROW(ComputeVadEnergy(o, e.data(), 2), DataError);
}

}  // namespace
}  // namespace asv::features
