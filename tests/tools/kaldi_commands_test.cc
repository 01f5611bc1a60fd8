// asvrun compute-mfcc-feats / compute-vad, run as subprocesses and compared with the library.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/features/compressed_matrix.h"
#include "asvcpp/features/dither_seed.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using testing::ScratchDir;

namespace stdfs = std::filesystem;

CommandResult Asvrun(const ScratchDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), ASV_ASVRUN);
  return RunCommand(args, dir.path());
}

std::vector<float> Tones(std::size_t n, double hz) {
  std::vector<float> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    s[i] = static_cast<float>((std::fmod(t, 0.4) < 0.25 ? 5000.0 : 20.0) * std::sin(2 * M_PI * hz * t));
  }
  return s;
}

// Two utterances (1.0 s and 0.7 s at 16 kHz), wav.scp and the recipe's mfcc.conf in `dir`.
void MakeInputs(const ScratchDir& dir) {
  audio::WriteWav(dir / "a.wav", Tones(16000, 220.0), 16000);
  audio::WriteWav(dir / "b.wav", Tones(11200, 330.0), 16000);
  dir.Write("wav.scp", "utt_a " + (dir / "a.wav").string() + "\nutt_b " + (dir / "b.wav").string() + "\n");
  stdfs::copy_file(stdfs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "mfcc.conf");
}

// The library's MFCCs of `wav` with stage 1's per-utterance dither seed.
Matrix Direct(const features::MfccOptions& opts, const stdfs::path& wav, const std::string& key) {
  const audio::Audio audio = audio::DecodeFile(wav, {16000});
  return features::Mfcc(opts).Compute(audio.samples.data(), static_cast<std::int64_t>(audio.samples.size()),
                                      features::DitherSeed(key));
}

// Every entry of a text archive held in `text`.
std::vector<std::pair<std::string, features::KaldiObject>> ParseArchive(const ScratchDir& dir,
                                                                        const std::string& text) {
  const auto file = dir.Write("parsed.ark", text);
  std::vector<std::pair<std::string, features::KaldiObject>> out;
  for (features::TableReader reader("ark:" + file.string()); reader.Next();)
    out.emplace_back(reader.key(), reader.value());
  return out;
}

TEST(KaldiCommandsTest, ComputeMfccFeatsTextOutputEqualsTheLibrary) {
  ScratchDir dir("kaldi_mfcc");
  MakeInputs(dir);
  const auto r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:wav.scp", "ark,t:-"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("done 2 out of 2 utterances"), std::string::npos) << r.err;
  const auto entries = ParseArchive(dir, r.out);
  ASSERT_EQ(entries.size(), 2u);
  const auto opts = features::ReadKaldiConfig<features::MfccOptions>((dir / "mfcc.conf").string());
  EXPECT_EQ(entries[0].first, "utt_a");
  EXPECT_EQ(entries[1].first, "utt_b");
  const Matrix a = entries[0].second.ToMatrix();
  EXPECT_EQ(a.rows(), 100);  // snip-edges=false: (16000 + 80) / 160
  EXPECT_EQ(a.cols(), 30);
  // Text output holds the shortest decimal form of each float, so it reads back exactly.
  EXPECT_EQ(a, Direct(opts, dir / "a.wav", "utt_a"));
  EXPECT_EQ(entries[1].second.ToMatrix(), Direct(opts, dir / "b.wav", "utt_b"));
}

TEST(KaldiCommandsTest, CommandLineOptionsOverrideTheConfigFileInAnyOrder) {
  ScratchDir dir("kaldi_override");
  MakeInputs(dir);
  auto opts = features::ReadKaldiConfig<features::MfccOptions>((dir / "mfcc.conf").string());
  opts.num_ceps = 13;
  opts.frame_opts.dither = 0.0f;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"compute-mfcc-feats", "--num-ceps=13", "--dither=0", "--config=mfcc.conf", "scp:wav.scp", "ark,t:-"},
           {"compute-mfcc-feats", "--config=mfcc.conf", "--num_ceps=13", "--DITHER=0.0", "scp:wav.scp", "ark,t:-"}}) {
    const auto r = Asvrun(dir, args);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto entries = ParseArchive(dir, r.out);
    ASSERT_EQ(entries.size(), 2u);
    const Matrix a = entries[0].second.ToMatrix();
    EXPECT_EQ(a.cols(), 13);
    EXPECT_EQ(a, Direct(opts, dir / "a.wav", "utt_a"));
  }
}

TEST(KaldiCommandsTest, CompressedArchiveWithScriptMatchesStageOneStorage) {
  ScratchDir dir("kaldi_compress");
  MakeInputs(dir);
  const auto r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "--compress=true", "scp:wav.scp",
                              "ark,scp:" + (dir / "mfcc.ark").string() + "," + (dir / "feats.scp").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto opts = features::ReadKaldiConfig<features::MfccOptions>((dir / "mfcc.conf").string());
  features::TableReader reader("scp:" + (dir / "feats.scp").string());
  ASSERT_TRUE(reader.Next());
  EXPECT_EQ(reader.key(), "utt_a");
  EXPECT_EQ(reader.value().ToMatrix(),
            features::CompressedMatrix::Compress(Direct(opts, dir / "a.wav", "utt_a")).Decompress());

  // compute-vad on those features equals the library's VAD with the same options.
  const auto v = Asvrun(dir, {"compute-vad", "--vad-energy-threshold=5.5", "--vad-energy-mean-scale=0.5",
                              "--vad-frames-context=2", "--vad-proportion-threshold=0.12", "scp:feats.scp", "ark,t:-"});
  ASSERT_EQ(v.status, 0) << v.err;
  const auto vads = ParseArchive(dir, v.out);
  ASSERT_EQ(vads.size(), 2u);
  const std::vector<float> vad = vads[0].second.ToVector();
  EXPECT_EQ(vad, features::ComputeVadEnergy(features::VadOptions::VoxcelebV2(), reader.value().ToMatrix()));
  float voiced = 0;
  for (float x : vad) voiced += x;
  EXPECT_GT(voiced, 10.0f);
  EXPECT_LT(voiced, static_cast<float>(vad.size()));
}

TEST(KaldiCommandsTest, AnArchiveIsNeverWrittenOverAnInput) {
  ScratchDir dir("kaldi_over_input");
  MakeInputs(dir);
  const std::string wav_scp = testing::Slurp(dir / "wav.scp");
  const std::string a_wav = testing::Slurp(dir / "a.wav");
  for (const char* out : {"ark:wav.scp", "ark,scp:a.wav,x.scp", "ark,scp:x.ark,./wav.scp"}) {
    const auto r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:wav.scp", out});
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_NE(r.err.find("is the same file as"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::Slurp(dir / "wav.scp"), wav_scp);
  EXPECT_EQ(testing::Slurp(dir / "a.wav"), a_wav);
  ASSERT_EQ(Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:wav.scp", "ark:feats.ark"}).status, 0);
  const std::string feats = testing::Slurp(dir / "feats.ark");
  stdfs::create_directories(dir / "sub");
  const auto vad = Asvrun(dir, {"compute-vad", "ark:feats.ark", "ark:sub/../feats.ark"});
  EXPECT_EQ(vad.status, 2) << vad.err;
  EXPECT_EQ(testing::Slurp(dir / "feats.ark"), feats);
  // Through a link the archive goes where the link points, and the link stays.
  stdfs::create_symlink("real.ark", dir / "vad.ark");
  ASSERT_EQ(Asvrun(dir, {"compute-vad", "ark:feats.ark", "ark:vad.ark"}).status, 0);
  EXPECT_TRUE(stdfs::is_symlink(dir / "vad.ark"));
  features::TableReader reader("ark:" + (dir / "real.ark").string());
  ASSERT_TRUE(reader.Next());
  EXPECT_EQ(reader.key(), "utt_a");
}

TEST(KaldiCommandsTest, UnreadableAudioIsAnErrorNamingTheFile) {
  ScratchDir dir("kaldi_unreadable");
  MakeInputs(dir);
  dir.Write("broken.wav", "not a wav file");
  dir.Write("one.scp", "bad " + (dir / "missing.wav").string() + "\n");
  auto r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:one.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 3) << r.err;  // nothing written: Kaldi's rule
  EXPECT_NE(r.err.find((dir / "missing.wav").string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  // Some utterances fail: a warning names each file, the others are written.
  dir.Write("mixed.scp", "a " + (dir / "a.wav").string() + "\nbroken " + (dir / "broken.wav").string() + "\n");
  r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:mixed.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find((dir / "broken.wav").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("done 1 out of 2 utterances"), std::string::npos) << r.err;
  EXPECT_EQ(ParseArchive(dir, r.out).size(), 1u);

  // A missing script file is an error naming it.
  r = Asvrun(dir, {"compute-mfcc-feats", "scp:nothing.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("nothing.scp"), std::string::npos) << r.err;
}

TEST(KaldiCommandsTest, SampleRateMismatchNeedsPermissionToResample) {
  ScratchDir dir("kaldi_rate");
  MakeInputs(dir);
  audio::WriteWav(dir / "c8k.wav", std::vector<float>(8000, 100.0f), 8000);
  dir.Write("c.scp", "c " + (dir / "c8k.wav").string() + "\n");
  auto r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "scp:c.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("--allow-upsample"), std::string::npos) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "--config=mfcc.conf", "--allow-upsample=true", "scp:c.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ParseArchive(dir, r.out).at(0).second.ToMatrix().rows(), 100);
}

TEST(KaldiCommandsTest, BadCommandLinesAreConfigErrors) {
  ScratchDir dir("kaldi_bad");
  MakeInputs(dir);
  auto r = Asvrun(dir, {"compute-mfcc-feats", "--num-cepz=13", "scp:wav.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown option --num-cepz"), std::string::npos) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "--num-ceps=many", "scp:wav.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 2);
  r = Asvrun(dir, {"compute-mfcc-feats", "--num-ceps=40", "scp:wav.scp", "ark,t:-"});  // > num-mel-bins
  EXPECT_EQ(r.status, 2) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "--config=nothing.conf", "scp:wav.scp", "ark,t:-"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("nothing.conf"), std::string::npos) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "ark:wav.ark", "ark,t:-"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("scp:FILE"), std::string::npos) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "scp:wav.scp"});  // missing wspecifier: usage
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("Usage:  asvrun compute-mfcc-feats"), std::string::npos) << r.err;
  r = Asvrun(dir, {"compute-mfcc-feats", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--num-ceps"), std::string::npos) << r.out;
  r = Asvrun(dir, {"compute-vad", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--vad-energy-threshold"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace asv
