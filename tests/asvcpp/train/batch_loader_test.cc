#include "asvcpp/train/batch_loader.h"

#include <atomic>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/train/training_data.h"

namespace asv::train {
namespace {

TEST(PrefetcherTest, DeliversInOrderWithAnyWorkerCount) {
  for (int workers : {0, 1, 3, 8}) {
    Prefetcher<int> p(
        50, [](std::size_t i) { return static_cast<int>(i * i); }, workers, 4);
    for (int i = 0; i < 50; ++i) {
      auto v = p.Next();
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(*v, i * i) << "workers " << workers;
    }
    EXPECT_FALSE(p.Next().has_value());
  }
}

TEST(PrefetcherTest, StaysWithinCapacity) {
  std::atomic<int> produced{0};
  std::atomic<int> consumed{0};
  std::atomic<int> max_ahead{0};
  Prefetcher<int> p(
      40,
      [&](std::size_t i) {
        const int ahead = ++produced - consumed.load();
        int m = max_ahead.load();
        while (ahead > m && !max_ahead.compare_exchange_weak(m, ahead)) {
        }
        return static_cast<int>(i);
      },
      4, 3);
  while (auto v = p.Next()) {
    ++consumed;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(consumed.load(), 40);
  EXPECT_LE(max_ahead.load(), 4);  // capacity 3 + the item being handed over
}

TEST(PrefetcherTest, RethrowsWorkerErrorsAndMeasuresWaiting) {
  Prefetcher<int> p(
      10,
      [](std::size_t i) {
        if (i == 3) throw DataError("bad utterance 3");
        return static_cast<int>(i);
      },
      2, 2);
  EXPECT_THROW(
      {
        while (p.Next()) {
        }
      },
      DataError);

  Prefetcher<int> slow(
      3,
      [](std::size_t i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return static_cast<int>(i);
      },
      1, 2);
  while (slow.Next()) {
  }
  EXPECT_GT(slow.wait_seconds(), 0.03);
}

TEST(PrefetcherTest, DestructorStopsUnfinishedWork) {
  Prefetcher<int> p(
      1000, [](std::size_t i) { return static_cast<int>(i); }, 4, 8);
  EXPECT_EQ(*p.Next(), 0);
}  // must not hang

TEST(BatchLoaderTest, TrainingBatchIsTransposedClip) {
  Matrix a(6, 2), b(5, 2);
  for (int t = 0; t < 6; ++t) {
    a(t, 0) = static_cast<float>(t);
    a(t, 1) = static_cast<float>(100 + t);
  }
  for (int t = 0; t < 5; ++t) {
    b(t, 0) = static_cast<float>(-t);
    b(t, 1) = static_cast<float>(-100 - t);
  }
  data::InMemoryFeatureSource source({a, b});
  EpochBatch batch;
  batch.clip_length = 3;
  batch.clips = {{1, 7, 2}, {0, 4, 1}};  // sampler utterance 1 -> source 0 via the map below
  const auto hb = LoadTrainingBatch(source, batch, {1, 0});
  EXPECT_EQ(hb.batch, 2);
  EXPECT_EQ(hb.feat_dim, 2);
  EXPECT_EQ(hb.frames, 3);
  EXPECT_EQ(hb.labels, (std::vector<std::int64_t>{7, 4}));
  EXPECT_EQ(hb.utterances, (std::vector<int>{0, 1}));
  // item 0 = source 0 frames 2..4: [F=2, T=3]
  EXPECT_EQ(std::vector<float>(hb.features.begin(), hb.features.begin() + 6),
            (std::vector<float>{2, 3, 4, 102, 103, 104}));
  EXPECT_EQ(std::vector<float>(hb.features.begin() + 6, hb.features.end()),
            (std::vector<float>{-1, -2, -3, -101, -102, -103}));
  batch.clips = {{0, 0, 4}};
  EXPECT_THROW(LoadTrainingBatch(source, batch), DataError);  // frames 4..6 of a 6-frame utterance
}

TEST(BatchLoaderTest, TestBatchTakesFirstFrames) {
  Matrix a(4, 1, 1.f), b(6, 1, 2.f);
  b(0, 0) = 5.f;
  data::InMemoryFeatureSource source({a, b}, {"a", "b"});
  const auto hb = LoadTestBatch(source, {1, 0}, 3, {9, 8});
  EXPECT_EQ(hb.features, (std::vector<float>{5, 2, 2, 1, 1, 1}));
  EXPECT_EQ(hb.labels, (std::vector<std::int64_t>{9, 8}));
  EXPECT_EQ(source.Name(1), "b");
}

TEST(FeatureSourceTest, SpeakerLabelsInFirstAppearanceOrder) {
  int n = 0;
  EXPECT_EQ(SpeakerLabels({"id2", "id1", "id2", "id3"}, &n), (std::vector<int>{0, 1, 0, 2}));
  EXPECT_EQ(n, 3);
  TrainingData data;
  data.source = std::make_shared<data::InMemoryFeatureSource>(std::vector<Matrix>{Matrix(3, 2), Matrix(4, 2)});
  data.speakers = {0, 2};
  data.n_speakers = 3;
  EXPECT_THROW(ValidateTrainingData(data), DataError);  // speaker 1 has no utterances
  data.n_speakers = 2;
  EXPECT_THROW(ValidateTrainingData(data), DataError);  // label 2 out of range
  data.speakers = {0, 1};
  EXPECT_NO_THROW(ValidateTrainingData(data));
  EXPECT_THROW(data::InMemoryFeatureSource({Matrix(3, 2), Matrix(3, 3)}), DataError);
}

}  // namespace
}  // namespace asv::train
