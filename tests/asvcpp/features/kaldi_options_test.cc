#include "asvcpp/features/kaldi_options.h"

#include <fstream>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/cmn.h"
#include "asvcpp/features/deltas.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/vad.h"
#include "tests/asvcpp/features/test_util.h"
#include "tests/build_paths.h"

namespace asv::features {
namespace {

using testing::ErrorOf;

MfccOptions ParseMfcc(const std::string& text, const std::string& path = "mfcc.conf") {
  MfccOptions o;
  KaldiOptions k;
  o.Register(&k);
  k.ParseConfigText(text, path);
  return o;
}

TEST(FeaturesKaldiOptions, KaldiDefaults) {
  const MfccOptions o;
  EXPECT_EQ(o.frame_opts.samp_freq, 16000.0f);
  EXPECT_EQ(o.frame_opts.frame_length_ms, 25.0f);
  EXPECT_EQ(o.frame_opts.frame_shift_ms, 10.0f);
  EXPECT_EQ(o.frame_opts.dither, 1.0f);
  EXPECT_EQ(o.frame_opts.preemph_coeff, 0.97f);
  EXPECT_TRUE(o.frame_opts.remove_dc_offset);
  EXPECT_EQ(o.frame_opts.window_type, "povey");
  EXPECT_TRUE(o.frame_opts.round_to_power_of_two);
  EXPECT_EQ(o.frame_opts.blackman_coeff, 0.42f);
  EXPECT_TRUE(o.frame_opts.snip_edges);
  EXPECT_EQ(o.mel_opts.num_bins, 23);
  EXPECT_EQ(o.mel_opts.low_freq, 20.0f);
  EXPECT_EQ(o.mel_opts.high_freq, 0.0f);
  EXPECT_EQ(o.num_ceps, 13);
  EXPECT_TRUE(o.use_energy);
  EXPECT_EQ(o.energy_floor, 0.0f);
  EXPECT_TRUE(o.raw_energy);
  EXPECT_EQ(o.cepstral_lifter, 22.0f);
  EXPECT_FALSE(o.htk_compat);
  EXPECT_EQ(o.frame_opts.WindowSize(), 400);
  EXPECT_EQ(o.frame_opts.WindowShift(), 160);
  EXPECT_EQ(o.frame_opts.PaddedWindowSize(), 512);
  const FbankOptions f;
  EXPECT_FALSE(f.use_energy);
  EXPECT_TRUE(f.use_log_fbank);
  EXPECT_TRUE(f.use_power);
}

TEST(FeaturesKaldiOptions, ReadsAsvTorchMfccConf) {
  const std::string path = std::string(ASV_SOURCE_DIR) + "/run_configs/voxceleb/xvector/mfcc.conf";
  const auto o = ReadKaldiConfig<MfccOptions>(path);
  EXPECT_EQ(o.frame_opts.samp_freq, 16000.0f);
  EXPECT_EQ(o.frame_opts.frame_length_ms, 25.0f);
  EXPECT_EQ(o.mel_opts.low_freq, 20.0f);
  EXPECT_EQ(o.mel_opts.high_freq, 7900.0f);
  EXPECT_EQ(o.mel_opts.num_bins, 30);
  EXPECT_EQ(o.num_ceps, 30);
  EXPECT_FALSE(o.frame_opts.snip_edges);
  EXPECT_EQ(o.frame_opts.dither, 1.0f);  // untouched default
}

TEST(FeaturesKaldiOptions, CommentsBlankLinesSpellingsAndBooleans) {
  const auto o = ParseMfcc(
      "# full-line comment\n"
      "\n"
      "   --num_mel_bins=40   # trailing comment\n"
      "\t--NUM-CEPS = 20\r\n"
      "--use-energy=FALSE\n"
      "--raw-energy=f\n"
      "--htk-compat\n"
      "--snip-edges=0\n"
      "--remove-dc-offset=T\n"
      "--window-type=hamming#no space before comment\n"
      "--dither=0.5\n"
      "--dither=1e-1\n");
  EXPECT_EQ(o.mel_opts.num_bins, 40);
  EXPECT_EQ(o.num_ceps, 20);
  EXPECT_FALSE(o.use_energy);
  EXPECT_FALSE(o.raw_energy);
  EXPECT_TRUE(o.htk_compat);
  EXPECT_FALSE(o.frame_opts.snip_edges);
  EXPECT_TRUE(o.frame_opts.remove_dc_offset);
  EXPECT_EQ(o.frame_opts.window_type, "hamming");
  EXPECT_FLOAT_EQ(o.frame_opts.dither, 0.1f);  // last one wins
}

TEST(FeaturesKaldiOptions, UnknownOptionNamesFileAndLine) {
  const std::string msg = ErrorOf([] { ParseMfcc("--num-ceps=13\n\n--num-cepz=13\n", "conf/mfcc.conf"); });
  EXPECT_NE(msg.find("conf/mfcc.conf:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--num-cepz"), std::string::npos) << msg;
}

TEST(FeaturesKaldiOptions, MalformedLinesAndValues) {
  EXPECT_NE(ErrorOf([] { ParseMfcc("num-ceps=13\n", "a.conf"); }).find("a.conf:1"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--=13\n", "a.conf"); }).find("a.conf:1"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("\n--use-energy=maybe\n", "a.conf"); }).find("a.conf:2"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--use-energy=\n", "a.conf"); }).find("empty"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--num-ceps=13.5\n", "a.conf"); }).find("integer"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--num-ceps\n", "a.conf"); }).find("needs a value"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--low-freq=abc\n", "a.conf"); }).find("number"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseMfcc("--window-type\n", "a.conf"); }).find("needs a value"), std::string::npos);
}

TEST(FeaturesKaldiOptions, ValidateErrorsNameTheFile) {
  const auto dir = testing::TempDir("options");
  const std::string path = (dir / "bad.conf").string();
  std::ofstream(path) << "--num-ceps=40\n--num-mel-bins=30\n";
  const std::string msg = ErrorOf([&] { ReadKaldiConfig<MfccOptions>(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("--num-ceps"), std::string::npos) << msg;
  std::ofstream(path) << "--window-type=triangle\n";
  EXPECT_NE(ErrorOf([&] { ReadKaldiConfig<MfccOptions>(path); }).find("triangle"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { ReadKaldiConfig<MfccOptions>((dir / "missing.conf").string()); }).find("missing.conf"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiOptions, VadCmnDeltaConfigs) {
  const auto dir = testing::TempDir("vadconf");
  const std::string path = (dir / "vad.conf").string();
  // kaldi/egs/voxceleb/v2/conf/vad.conf
  std::ofstream(path) << "--vad-energy-threshold=5.5\n--vad-energy-mean-scale=0.5\n"
                         "--vad-proportion-threshold=0.12\n--vad-frames-context=2\n";
  const auto v = ReadKaldiConfig<VadOptions>(path);
  const auto expected = VadOptions::VoxcelebV2();
  EXPECT_EQ(v.vad_energy_threshold, expected.vad_energy_threshold);
  EXPECT_EQ(v.vad_energy_mean_scale, expected.vad_energy_mean_scale);
  EXPECT_EQ(v.vad_frames_context, expected.vad_frames_context);
  EXPECT_EQ(v.vad_proportion_threshold, expected.vad_proportion_threshold);

  SlidingCmnOptions c;
  DeltaOptions d;
  KaldiOptions k;
  c.Register(&k);
  d.Register(&k);
  k.ParseConfigText(
      "--cmn-window=300\n--center=true\n--norm-vars=false\n--min-cmn-window=100\n"
      "--delta-order=1\n--delta-window=3\n",
      "x.conf");
  EXPECT_EQ(c.cmn_window, 300);
  EXPECT_TRUE(c.center);
  EXPECT_EQ(d.order, 1);
  EXPECT_EQ(d.window, 3);
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiOptions, HelpListsEveryOption) {
  MfccOptions o;
  KaldiOptions k;
  o.Register(&k);
  const std::string help = k.Help();
  for (const char* name : {"--sample-frequency",
                           "--frame-length",
                           "--frame-shift",
                           "--dither",
                           "--preemphasis-coefficient",
                           "--remove-dc-offset",
                           "--window-type",
                           "--blackman-coeff",
                           "--round-to-power-of-two",
                           "--snip-edges",
                           "--num-mel-bins",
                           "--low-freq",
                           "--high-freq",
                           "--vtln-low",
                           "--vtln-high",
                           "--num-ceps",
                           "--use-energy",
                           "--energy-floor",
                           "--raw-energy",
                           "--cepstral-lifter",
                           "--htk-compat"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
  EXPECT_THROW(o.Register(&k), std::logic_error);  // registering twice is a programming error
}

}  // namespace
}  // namespace asv::features
