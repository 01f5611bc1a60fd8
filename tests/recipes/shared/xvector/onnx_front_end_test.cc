// The ONNX front end of the x-vector recipes (recipes/shared/xvector/onnx_front_end.h) follows
// their feature settings, and names those the graph does not compute.
#include "recipes/shared/xvector/onnx_front_end.h"

#include <gtest/gtest.h>

#include <string>

#include "asvcpp/base/error.h"
#include "tests/build_paths.h"

namespace asv::recipes::xvector {
namespace {

settings::Settings Common() {
  settings::Settings common;
  common.paths.kaldi_mfcc_conf_file = std::string(ASV_SOURCE_DIR) + "/run_configs/voxceleb/xvector/mfcc.conf";
  return common;
}

TEST(XvectorOnnxFrontEndTest, FollowsTheFeatureSettings) {
  auto common = Common();
  const auto front_end = XvectorOnnxFrontEnd(common);
  EXPECT_EQ(front_end.kind, deploy::OnnxFrontEnd::Kind::kMfcc);
  EXPECT_EQ(front_end.mfcc.num_ceps, 30);  // the recipe's mfcc.conf
  EXPECT_EQ(front_end.mfcc.mel_opts.num_bins, 30);
  EXPECT_FALSE(front_end.mfcc.frame_opts.snip_edges);
  EXPECT_EQ(front_end.mfcc.mel_opts.high_freq, 7900.0f);
  EXPECT_EQ(front_end.cmn_window, 300);
  ASSERT_TRUE(front_end.vad.has_value());
  EXPECT_EQ(front_end.vad->vad_energy_threshold, 5.5f);
  EXPECT_EQ(front_end.vad->vad_frames_context, 2);

  common.features.cmvn = features::Cmvn::kNone;
  common.features.sad_enabled = false;
  common.features.cmvn_window = 150;
  const auto plain = XvectorOnnxFrontEnd(common);
  EXPECT_EQ(plain.cmn_window, 0);
  EXPECT_FALSE(plain.vad.has_value());
  common.features.cmvn = features::Cmvn::kMean;
  EXPECT_EQ(XvectorOnnxFrontEnd(common).cmn_window, 150);
}

TEST(XvectorOnnxFrontEndTest, NamesWhatTheGraphDoesNotCompute) {
  auto common = Common();
  common.features.cmvn = features::Cmvn::kMeanVariance;
  try {
    XvectorOnnxFrontEnd(common);
    FAIL() << "variance normalisation accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("features.cmvn = 'mv'"), std::string::npos) << e.what();
  }
  common = Common();
  common.features.deltas = features::Deltas::kDelta;
  try {
    XvectorOnnxFrontEnd(common);
    FAIL() << "deltas accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("features.deltas = 'bv'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace asv::recipes::xvector
