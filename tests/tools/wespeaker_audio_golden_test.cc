// WeSpeaker's models on audio, both ways, against embeddings that WeSpeaker's own code computed
// from the same waveforms (tests/tools/golden/wespeaker_audio_golden.json, made by
// tools/golden/make_wespeaker_audio_golden.py: WeSpeaker's model classes at a pinned commit,
// torchaudio's Kaldi fbank with wespeaker/cli/speaker.py's arguments, mean normalisation).
//
// - asvcpp on WeSpeaker's checkpoint: a model directory written by PyTorch's torch.save
//   (tests/asvcpp/models/make_wespeaker_checkpoint.py, the golden weights) goes through
//   `asvrun embed` from WAV files of 1.0, 2.37 and 4.0 s; each embedding is WeSpeaker's to
//   cosine >= 0.9999, fbank and mean normalisation included.
// - WeSpeaker's code on asvcpp's export: `asvrun export --format wespeaker` of that directory
//   writes every tensor bit for bit as the checkpoint has it (so WeSpeaker's classes, which gave
//   the golden embeddings from these tensors, load it with strict=True and give them again; the
//   golden script's --check-export did that on the machine named in docs/models.md).
//
// The waveforms are made here by the golden script's formula; their checksums are in the golden
// file. Needs a python3 with torch and yaml (Debian's python3-torch, tools/setup.sh); skipped
// without one. Compiled with -ffp-contract=off, like the golden script's arithmetic.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "asvcpp/audio/decode.h"
#include "asvcpp/backend/evaluation.h"
#include "asvcpp/models/torch_pickle.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kSampleRate = 16000;

// make_model_golden.py's u(seed, k): SplitMix64's output function, 53 bits.
double Uniform(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = k + (seed << 40) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// The golden script's waveform of case `c`: int16 sample values (see its docstring).
std::vector<float> Waveform(int c, std::int64_t samples) {
  const double two_pi = 2.0 * M_PI;
  const double glide = 30.0 / (two_pi * 0.9);
  double weights[12];
  for (int h = 1; h <= 12; ++h) weights[h - 1] = (1.0 / h) * (1.0 + 0.5 * std::sin(two_pi * 0.13 * h + c));
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (std::int64_t n = 0; n < samples; ++n) {
    const double t = static_cast<double>(n) / kSampleRate;
    const double phase = (110.0 + 25.0 * c) * t - glide * std::cos(two_pi * 0.9 * t);
    double voiced = 0.0;
    for (int h = 1; h <= 12; ++h) voiced += weights[h - 1] * std::sin(two_pi * h * phase);
    const double envelope = 0.55 + 0.45 * std::sin(two_pi * 3.7 * t + c);
    const double x =
        1000.0 * envelope * voiced + 200.0 * (2.0 * Uniform((std::uint64_t{1} << 21) + c, n) - 1.0);
    out[static_cast<std::size_t>(n)] = static_cast<float>(std::min(32767.0, std::max(-32768.0, std::floor(x + 0.5))));
  }
  return out;
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(WespeakerAudioGoldenTest, EmbedsWavFilesAsWespeakerAndExportsItsTensors) {
  json golden;
  std::ifstream(fs::path(ASV_SOURCE_DIR) / "tests/tools/golden/wespeaker_audio_golden.json") >> golden;
  testing::ScratchDir dir("wespeaker_audio_golden");

  // The waveforms, checked against the golden script's checksums, as 16-bit WAV files.
  std::vector<std::string> wavs;
  for (std::size_t c = 0; c < golden["checksums"].size(); ++c) {
    const auto samples = golden["models"][0]["cases"][c]["samples"].get<std::int64_t>();
    const auto wave = Waveform(static_cast<int>(c), samples);
    std::int64_t sum = 0, weighted = 0;
    for (std::size_t n = 0; n < wave.size(); ++n) {
      const auto v = static_cast<std::int64_t>(wave[n]);
      sum += v;
      weighted += static_cast<std::int64_t>(n + 1) * v;
    }
    ASSERT_EQ(sum, golden["checksums"][c][0].get<std::int64_t>()) << "case " << c;
    ASSERT_EQ(weighted, golden["checksums"][c][1].get<std::int64_t>()) << "case " << c;
    const fs::path wav = dir.path() / fmt::format("case{}.wav", c);
    audio::WriteWav(wav, wave, kSampleRate);
    wavs.push_back(wav.string());
  }

  std::vector<std::string> make = {fs::path(ASV_SOURCE_DIR) / "tests/asvcpp/models/make_wespeaker_checkpoint.py",
                                   "10"};
  for (const auto& model : golden["models"]) {
    make.push_back((dir.path() / model["name"].get<std::string>()).string() + ":" + model["name"].get<std::string>());
  }
  const auto made = testing::RunTorchPython(make, dir.path());
  if (!made) GTEST_SKIP() << "no python3 with torch and yaml (tools/setup.sh: python3-torch)";
  ASSERT_EQ(made->status, 0) << made->err;

  for (const auto& model : golden["models"]) {
    const std::string name = model["name"];
    SCOPED_TRACE(name);
    const fs::path checkpoint = dir.path() / name;
    // asvcpp on WeSpeaker's checkpoint, from the WAV files.
    std::vector<std::string> embed = {ASV_ASVRUN, "embed", "--model", checkpoint.string(), "--out",
                                      (dir.path() / (name + "_embed")).string()};
    embed.insert(embed.end(), wavs.begin(), wavs.end());
    const auto r = testing::RunCommand(embed, dir.path());
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const auto embeddings = backend::ReadEmbeddings(dir.path() / (name + "_embed") / "embeddings");
    ASSERT_EQ(embeddings.ids.size(), wavs.size());
    for (std::size_t c = 0; c < wavs.size(); ++c) {
      ASSERT_EQ(embeddings.ids[c], fmt::format("case{}", c));
      const auto& expected = model["cases"][c]["embedding"];
      ASSERT_EQ(embeddings.vectors.cols(), static_cast<std::int64_t>(expected.size()));
      std::vector<double> ours, theirs;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        ours.push_back(embeddings.vectors(static_cast<std::int64_t>(c), static_cast<std::int64_t>(i)));
        theirs.push_back(expected[i].get<double>());
      }
      const double cosine = Cosine(ours, theirs);
      EXPECT_GE(cosine, 0.99999) << "case " << c;  // a Povey window instead: 0.99967
      RecordProperty(fmt::format("{}_case{}_cosine", name, c), fmt::format("{:.9f}", cosine));
    }

    // WeSpeaker's format from asvcpp: the same tensors, bit for bit.
    const fs::path exported = dir.path() / (name + "_export");
    const auto e = testing::RunCommand({ASV_ASVRUN, "export", "--model", checkpoint.string(), "--format", "wespeaker",
                                        "--out", exported.string()},
                                       dir.path());
    ASSERT_EQ(e.status, 0) << e.out << e.err;
    const auto theirs = models::LoadStateDict(checkpoint / "avg_model.pt");
    const auto ours = models::LoadStateDict(exported / "avg_model.pt");
    ASSERT_EQ(ours.size(), theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(ours[i].first, theirs[i].first);
      EXPECT_TRUE(ours[i].second.equal(theirs[i].second)) << ours[i].first;
    }
  }
}

}  // namespace
}  // namespace asv
