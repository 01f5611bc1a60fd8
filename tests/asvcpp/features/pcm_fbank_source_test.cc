#include "asvcpp/features/pcm_fbank_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

namespace stdfs = std::filesystem;

TEST(PcmFbankSourceTest, FramesAreTheUtterancesFbankMinusItsMean) {
  const auto dir = stdfs::temp_directory_path() / ("asv_pcm_fbank_source_" + std::to_string(::getpid()));
  stdfs::remove_all(dir);
  stdfs::create_directories(dir);
  std::vector<data::PcmStoreEntry> entries;
  std::vector<std::vector<float>> audio;
  for (int u = 0; u < 3; ++u) {
    std::vector<float> samples(static_cast<std::size_t>(3000 + 1000 * u));
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i] = std::round(1000.0f * std::sin(0.01f * static_cast<float>(i * (u + 2))) +
                              300.0f * std::cos(0.37f * static_cast<float>(i)));
    }
    audio.push_back(samples);
    const auto wav = dir / ("u" + std::to_string(u) + ".wav");
    audio::WriteWav(wav, samples, 16000);
    entries.push_back({"utt" + std::to_string(u), wav.string()});
  }
  data::PcmStoreOptions quiet;
  quiet.progress = base::ProgressMode::kSilent;
  data::BuildPcmStore(entries, dir / "store", quiet);
  auto store = std::make_shared<const data::PcmStore>(data::PcmStore::Open(dir / "store"));

  auto options = WespeakerFbankOptions();
  options.mel_opts.num_bins = 20;
  const PcmFbankSource source(store, {2, 0}, options);  // dither 1.0 in the options: ignored
  ASSERT_EQ(source.NumUtterances(), 2);
  EXPECT_EQ(source.FeatDim(), 20);
  EXPECT_EQ(source.Name(0), "utt2");
  EXPECT_EQ(source.Ids(), (std::vector<std::string>{"utt2", "utt0"}));
  // Kaldi's frame count with snip_edges: 1 + (n - 400) / 160.
  EXPECT_EQ(source.NumFrames(0), 1 + (5000 - 400) / 160);
  EXPECT_EQ(source.NumFrames(1), 1 + (3000 - 400) / 160);

  options.frame_opts.dither = 0.0f;
  const Fbank fbank(options);
  const Matrix expected = fbank.Compute(audio[2].data(), static_cast<std::int64_t>(audio[2].size()));
  const Matrix frames = source.Frames(0);
  ASSERT_EQ(frames.rows(), expected.rows());
  for (std::int64_t c = 0; c < 20; ++c) {
    double mean = 0, column = 0;
    for (std::int64_t t = 0; t < frames.rows(); ++t) {
      mean += expected(t, c);
      column += frames(t, c);
    }
    mean /= static_cast<double>(frames.rows());
    EXPECT_NEAR(column, 0.0, 1e-3);  // the mean is gone
    for (std::int64_t t = 0; t < frames.rows(); ++t) ASSERT_NEAR(frames(t, c), expected(t, c) - mean, 1e-4);
  }
  EXPECT_EQ(source.Frames(0).rows(), frames.rows());
  EXPECT_THROW(source.Frames(2), std::out_of_range);
  EXPECT_THROW(PcmFbankSource(store, {3}, options), std::out_of_range);
  options.frame_opts.samp_freq = 8000.0f;
  EXPECT_THROW(PcmFbankSource(store, {0}, options), DataError);
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::features
