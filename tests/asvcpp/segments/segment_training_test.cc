#include "asvcpp/segments/segment_training.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <set>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/train/device_batch.h"

namespace asv::segments {
namespace {

namespace stdfs = std::filesystem;

// 12 utterances of 1.5-3 s (Gaussian noise under a slow envelope) of 3 speakers in a PCM store.
class SegmentTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("asv_segment_training_" + std::to_string(::getpid()));
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
    std::mt19937 rng(5);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<data::PcmStoreEntry> entries;
    for (int u = 0; u < 12; ++u) {
      const int n = 24000 + 2000 * u;
      std::vector<float> samples(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        samples[static_cast<std::size_t>(i)] =
            2000.0f * (1.0f + std::sin(0.001f * static_cast<float>(i) * static_cast<float>(u + 1))) * gauss(rng);
      }
      const auto wav = dir_ / ("u" + std::to_string(u) + ".wav");
      audio::WriteWav(wav, samples, 16000);
      entries.push_back({"spk" + std::to_string(u % 3) + "-u" + std::to_string(u), wav.string()});
    }
    data::PcmStoreOptions quiet;
    quiet.progress = base::ProgressMode::kSilent;
    data::BuildPcmStore(entries, dir_ / "store", quiet);
    store_ = std::make_shared<const data::PcmStore>(data::PcmStore::Open(dir_ / "store"));
    utterances_ = train::StoreUtterances(*store_, [](const std::string& id) { return id[3] - '0'; });
    options_.sampler.batch_size = 4;
    options_.sampler.num_frames = 50;
    options_.sampler.min_num_frames = 50;
    options_.fbank = features::WespeakerFbankOptions();
    options_.fbank.mel_opts.num_bins = 24;
    options_.dither = 0.0f;
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  stdfs::path dir_;
  std::shared_ptr<const data::PcmStore> store_;
  std::vector<train::SegmentUtterance> utterances_;
  SegmentTrainingOptions options_;
};

TEST_F(SegmentTrainingTest, MinibatchesAreFbankOfTheSampledSegmentsWithTheirLabels) {
  options_.sampler.speed_perturb = false;
  SegmentBatchSource source(store_, utterances_, 3, options_);
  EXPECT_EQ(source.NumLabels(), 3);
  const auto plan = source.PlanEpoch(1);
  ASSERT_EQ(plan.batches, 3u);
  EXPECT_EQ(plan.batch_size, 4);
  EXPECT_EQ(plan.max_frames, 50);
  const auto transform = MakeSegmentTransform(options_);
  auto without_dither = options_.fbank;  // the transform dithers by options_.dither (0)
  without_dither.frame_opts.dither = 0.0f;
  const features::Fbank fbank(without_dither);
  const auto segment = source.sampler().SegmentSamples();
  ASSERT_EQ(segment, 49 * 160 + 400);
  const auto reads = source.sampler().Epoch(1).batches;
  for (std::size_t b = 0; b < plan.batches; ++b) {
    auto batch = source.Load(b);
    const auto host_labels = batch.labels;
    const auto [x, y] = transform->Apply(batch, torch::Device(torch::kCPU));
    ASSERT_EQ(x.sizes(), (std::vector<std::int64_t>{4, 24, 50}));
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{4}));
    for (std::int64_t i = 0; i < 4; ++i) {
      const auto& read = reads[b][static_cast<std::size_t>(i)];
      EXPECT_EQ(y[i].item<std::int64_t>(), read.label);
      EXPECT_EQ(host_labels[static_cast<std::size_t>(i)], read.label);
      // The per-frame fbank of the same samples, its mean over frames subtracted.
      std::vector<float> samples(static_cast<std::size_t>(segment));
      train::ReadSegment(*store_, read, samples.data());
      Matrix m = fbank.Compute(samples.data(), segment);
      ASSERT_EQ(m.rows(), 50);
      for (std::int64_t c = 0; c < 24; ++c) {
        double mean = 0;
        for (std::int64_t t = 0; t < 50; ++t) mean += m(t, c);
        mean /= 50;
        for (std::int64_t t = 0; t < 50; ++t) {
          ASSERT_NEAR(x[i][c][t].item<float>(), m(t, c) - mean, 1e-3) << "batch " << b << " row " << i;
        }
      }
    }
  }
}

TEST_F(SegmentTrainingTest, SpeedPerturbedCopiesAreNewClassesAndLoadsAreReproducible) {
  options_.sampler.speed_perturb = true;
  SegmentBatchSource source(store_, utterances_, 3, options_);
  EXPECT_EQ(source.NumLabels(), 9);
  const auto plan = source.PlanEpoch(2);
  const auto transform = MakeSegmentTransform(options_);
  std::set<int> speeds;
  for (std::size_t b = 0; b < plan.batches; ++b) {
    auto first = source.Load(b);
    auto second = source.Load(b);
    EXPECT_EQ(first.features, second.features);
    EXPECT_EQ(first.frames, source.sampler().MaxSourceSamples());
    const auto [x1, y1] = transform->Apply(first, torch::Device(torch::kCPU));
    const auto [x2, y2] = transform->Apply(second, torch::Device(torch::kCPU));
    EXPECT_TRUE(torch::equal(x1, x2));
    EXPECT_TRUE(torch::isfinite(x1).all().item<bool>());
    for (std::int64_t i = 0; i < y1.size(0); ++i) {
      const auto label = y1[i].item<std::int64_t>();
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 9);
      speeds.insert(static_cast<int>(label / 3));
    }
  }
  EXPECT_GE(speeds.size(), 2u);  // 12 draws over three speeds
}

TEST_F(SegmentTrainingTest, ABatchWithoutItsDrawsIsRefused) {
  train::HostBatch batch;
  batch.batch = 1;
  batch.feat_dim = 1;
  batch.frames = 10;
  batch.features.assign(10, 0.0f);
  batch.labels = {0};
  EXPECT_THROW(MakeSegmentTransform(options_)->Apply(batch, torch::Device(torch::kCPU)), DataError);
}

}  // namespace
}  // namespace asv::segments
