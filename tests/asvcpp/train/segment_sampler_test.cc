// train::SegmentSampler: WeSpeaker's filter, speed perturbation, random chunks and epoch sharding
// as read plans, and ReadSegment over a PCM store. LibTorch-free (asv_train_sampling).
#include "asvcpp/train/segment_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/train/rng.h"

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

// Lengths around the filter bounds (16,000 and 128,000 samples) and the segment lengths
// (29,016 / 32,240 / 35,464), speakers round robin.
std::vector<SegmentUtterance> Utterances(std::size_t n, int speakers, std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> length(8000, 200000);
  std::vector<SegmentUtterance> u(n);
  for (std::size_t i = 0; i < n; ++i) {
    u[i].store_index = static_cast<std::int64_t>(i) + 1000;  // not the position: plans must carry it
    u[i].num_samples = length(rng);
    u[i].speaker = static_cast<int>(i % static_cast<std::size_t>(speakers));
  }
  return u;
}

SegmentSamplerOptions Options(int batch, int world = 1, int rank = 0) {
  SegmentSamplerOptions o;
  o.batch_size = batch;
  o.world_size = world;
  o.rank = rank;
  o.seed = 42;
  return o;
}

std::vector<SegmentRead> Flat(const SegmentEpoch& epoch) {
  std::vector<SegmentRead> all;
  for (const auto& b : epoch.batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

bool Same(const SegmentRead& a, const SegmentRead& b) {
  return a.utterance == b.utterance && a.label == b.label && a.speed_index == b.speed_index && a.start == b.start &&
         a.count == b.count && a.length == b.length;
}

TEST(SegmentSamplerTest, WespeakerLengthsAndFilterBounds) {
  const SegmentSampler sampler(Utterances(100, 7), 7, Options(4));
  EXPECT_EQ(sampler.SegmentSamples(), 32240);  // ((200 - 1) * 10 + 25) * 16000 / 1000
  EXPECT_EQ(SourceSamples(32240, 0), 32240);
  EXPECT_EQ(SourceSamples(32240, 1), 29016);  // ceil(32240 * 0.9)
  EXPECT_EQ(SourceSamples(32240, 2), 35464);  // ceil(32240 * 1.1)
  EXPECT_EQ(SourceSamples(11, 1), 10);        // ceil(9.9)
  EXPECT_EQ(SourceSamples(11, 2), 13);        // ceil(12.1)
  // The resampler turns ceil(L * f) source samples into floor(. / f) >= L, and one sample fewer
  // would not do; counted in integers (29,016 / 0.9 in double floors to 32,239).
  for (int k = 0; k < kNumSpeeds; ++k) {
    for (std::int64_t length : {32240, 1, 11, 16001, 48240}) {
      EXPECT_GE(ResampledSamples(SourceSamples(length, k), k), length) << k << " " << length;
      EXPECT_LT(ResampledSamples(SourceSamples(length, k) - 1, k), length) << k << " " << length;
    }
  }
  EXPECT_EQ(ResampledSamples(29016, 1), 32240);
  EXPECT_EQ(ResampledSamples(35464, 2), 32240);
  EXPECT_DOUBLE_EQ(SpeedFactor(1), 0.9);
  EXPECT_EQ(sampler.MaxSourceSamples(), 35464);
  EXPECT_EQ(sampler.MinSamples(), 16000);   // 100 frames of 10 ms
  EXPECT_EQ(sampler.MaxSamples(), 128000);  // 800 frames
  EXPECT_EQ(sampler.NumLabels(), 21);
  EXPECT_THROW(SpeedFactor(3), std::out_of_range);
}

TEST(SegmentSamplerTest, EveryKeptUtteranceOncePerEpochAndShortOnesNever) {
  auto utts = Utterances(1000, 13);
  const SegmentSampler sampler(utts, 13, Options(8));
  std::set<std::int64_t> kept;
  for (const auto& u : utts) {
    if (u.num_samples >= 16000) kept.insert(u.store_index);
  }
  ASSERT_GT(kept.size(), 900u);
  ASSERT_LT(kept.size(), 1000u);  // some are filtered
  EXPECT_EQ(sampler.NumKept(), kept.size());
  EXPECT_EQ(sampler.NumFiltered(), 1000 - kept.size());
  EXPECT_EQ(sampler.BatchesPerEpoch(), static_cast<std::int64_t>(kept.size() / 8));
  std::set<std::int64_t> dropped_over_epochs;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    const SegmentEpoch e = sampler.Epoch(epoch);
    EXPECT_EQ(e.batches.size(), kept.size() / 8);
    EXPECT_EQ(e.used, static_cast<std::int64_t>(kept.size() / 8 * 8));
    EXPECT_EQ(e.dropped, static_cast<std::int64_t>(kept.size() % 8));
    std::map<std::int64_t, int> seen;
    for (const auto& b : e.batches) {
      ASSERT_EQ(b.size(), 8u);
      for (const auto& r : b) ++seen[r.utterance];
    }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), e.used);
    for (const auto& [utt, times] : seen) {
      EXPECT_EQ(times, 1) << utt;
      EXPECT_TRUE(kept.count(utt)) << utt << " is shorter than 1 s and must be filtered";
    }
    for (auto utt : kept) {
      if (!seen.count(utt)) dropped_over_epochs.insert(utt);
    }
  }
  // The few left out differ between epochs (a new order each epoch).
  EXPECT_GT(dropped_over_epochs.size(), kept.size() % 8);

  // With a count divisible by the batch, every kept utterance is used: the epoch is the data set.
  std::vector<SegmentUtterance> exact(utts.begin(), utts.end());
  exact.erase(std::remove_if(exact.begin(), exact.end(), [](const auto& u) { return u.num_samples < 16000; }),
              exact.end());
  exact.resize(exact.size() / 8 * 8);
  const SegmentEpoch all = SegmentSampler(exact, 13, Options(8)).Epoch(1);
  EXPECT_EQ(all.dropped, 0);
  EXPECT_EQ(all.used, static_cast<std::int64_t>(exact.size()));
}

TEST(SegmentSamplerTest, ShardsAreDisjointWithEqualBatchCountsAndTheSameSegmentsAsOneRank) {
  const auto utts = Utterances(2000, 17);
  const int world = 3;
  const SegmentEpoch single = SegmentSampler(utts, 17, Options(4)).Epoch(5);
  std::map<std::int64_t, SegmentRead> by_utterance;
  for (const auto& r : Flat(single)) by_utterance[r.utterance] = r;

  std::set<std::int64_t> union_of_ranks;
  std::int64_t batches = -1;
  for (int rank = 0; rank < world; ++rank) {
    const SegmentSampler sampler(utts, 17, Options(4, world, rank));
    const SegmentEpoch e = sampler.Epoch(5);
    if (batches < 0) batches = static_cast<std::int64_t>(e.batches.size());
    EXPECT_EQ(static_cast<std::int64_t>(e.batches.size()), batches) << "rank " << rank;
    EXPECT_EQ(batches, sampler.BatchesPerEpoch());
    for (const auto& r : Flat(e)) {
      EXPECT_TRUE(union_of_ranks.insert(r.utterance).second) << "utterance " << r.utterance << " on two ranks";
      // An utterance's segment does not depend on the world size.
      const auto it = by_utterance.find(r.utterance);
      if (it != by_utterance.end()) {
        EXPECT_TRUE(Same(it->second, r)) << r.utterance;
      }
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(union_of_ranks.size()), batches * 4 * world);
}

TEST(SegmentSamplerTest, SpeedIsUniformOverThreeFactorsAndLabelsTripleTheSpeakers) {
  const int speakers = 50;
  const auto utts = Utterances(30000, speakers);
  const SegmentSampler sampler(utts, speakers, Options(16));
  std::map<std::int64_t, int> speaker_of;
  for (const auto& u : utts) speaker_of[u.store_index] = u.speaker;
  std::vector<int> per_speed(kNumSpeeds, 0);
  std::set<int> labels;
  const auto reads = Flat(sampler.Epoch(1));
  for (const auto& r : reads) {
    ASSERT_GE(r.speed_index, 0);
    ASSERT_LT(r.speed_index, kNumSpeeds);
    ++per_speed[static_cast<std::size_t>(r.speed_index)];
    EXPECT_EQ(r.label, speaker_of[r.utterance] + r.speed_index * speakers);
    EXPECT_EQ(r.length, SourceSamples(32240, r.speed_index));
    labels.insert(r.label);
  }
  const double n = static_cast<double>(reads.size());
  for (int k = 0; k < kNumSpeeds; ++k) {
    // Binomial(n, 1/3): standard deviation about 0.3 % of n here; 2 % is over 6 deviations.
    EXPECT_NEAR(per_speed[static_cast<std::size_t>(k)] / n, 1.0 / 3.0, 0.02) << "speed index " << k;
  }
  EXPECT_EQ(labels.size(), static_cast<std::size_t>(3 * speakers));
  EXPECT_EQ(*labels.rbegin(), sampler.NumLabels() - 1);

  SegmentSamplerOptions plain = Options(16);
  plain.speed_perturb = false;
  const SegmentSampler unperturbed(utts, speakers, plain);
  EXPECT_EQ(unperturbed.NumLabels(), speakers);
  EXPECT_EQ(unperturbed.MaxSourceSamples(), 32240);
  for (const auto& r : Flat(unperturbed.Epoch(1))) {
    ASSERT_EQ(r.speed_index, 0);
    ASSERT_EQ(r.label, speaker_of[r.utterance]);
    ASSERT_EQ(r.length, 32240);
  }
}

TEST(SegmentSamplerTest, SegmentsLieInsideTheUtteranceAndShortOnesRepeat) {
  const auto utts = Utterances(5000, 11);
  const SegmentSampler sampler(utts, 11, Options(10));
  std::map<std::int64_t, std::int64_t> length_of;
  for (const auto& u : utts) length_of[u.store_index] = u.num_samples;
  int repeated = 0;
  int long_ones = 0;
  std::int64_t max_start_fraction_hits = 0;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    for (const auto& r : Flat(sampler.Epoch(epoch))) {
      const std::int64_t n = length_of.at(r.utterance);
      ASSERT_GE(r.start, 0);
      ASSERT_GE(r.count, 1);
      ASSERT_LE(r.start + r.count, n);
      ASSERT_LE(r.count, r.length);
      if (n >= r.length) {
        // Long enough (a window of 128,000 is always long enough): a full read, no repetition.
        ASSERT_FALSE(r.repeats()) << n;
        ASSERT_EQ(r.count, r.length);
        if (n > 128000) ++long_ones;
        if (r.start > n - r.length - (n - r.length) / 10) ++max_start_fraction_hits;  // in the last tenth
      } else {
        // get_random_chunk on a short utterance: all of it, repeated.
        ASSERT_TRUE(r.repeats());
        ASSERT_EQ(r.start, 0);
        ASSERT_EQ(r.count, n);
        ++repeated;
      }
    }
  }
  EXPECT_GT(repeated, 100);
  EXPECT_GT(long_ones, 100);
  EXPECT_GT(max_start_fraction_hits, 10);  // starts reach the end of the range, not just the front
}

TEST(SegmentSamplerTest, LongUtterancesUseAnEightSecondWindowFirst) {
  // All utterances 400,000 samples: the start is the sum of a window start in [0, 272,000] and a
  // start in [0, 128,000 - length], as WeSpeaker's filter then random_chunk give: a trapezoid, so
  // starts near either end are rarer than in the middle.
  std::vector<SegmentUtterance> utts(20000);
  for (std::size_t i = 0; i < utts.size(); ++i) utts[i] = {static_cast<std::int64_t>(i), 400000, 0};
  SegmentSamplerOptions o = Options(10);
  o.speed_perturb = false;
  const auto reads = Flat(SegmentSampler(utts, 1, o).Epoch(1));
  const std::int64_t span = 400000 - 32240;
  int low = 0;
  int mid = 0;
  for (const auto& r : reads) {
    ASSERT_LE(r.start, span);
    if (r.start < span / 10) ++low;
    if (r.start >= span * 45 / 100 && r.start < span * 55 / 100) ++mid;
  }
  // Uniform would give 10 % in each; the trapezoid (flat between 95,760 and 272,000) gives about
  // 3.4 % in the first tenth and 10 % plus in the middle one.
  EXPECT_LT(low, static_cast<int>(reads.size() * 6 / 100));
  EXPECT_GT(mid, static_cast<int>(reads.size() * 9 / 100));

  // Without the filter the start is uniform over the whole utterance.
  o.filter = false;
  const auto unfiltered = Flat(SegmentSampler(utts, 1, o).Epoch(1));
  low = 0;
  for (const auto& r : unfiltered) low += r.start < span / 10;
  EXPECT_NEAR(static_cast<double>(low) / unfiltered.size(), 0.1, 0.02);
}

TEST(SegmentSamplerTest, DeterministicBySeedAndEpoch) {
  const auto utts = Utterances(500, 5);
  const SegmentSampler a(utts, 5, Options(4));
  const SegmentSampler b(utts, 5, Options(4));
  const auto e3a = Flat(a.Epoch(3));
  const auto e3b = Flat(b.Epoch(3));
  ASSERT_EQ(e3a.size(), e3b.size());
  for (std::size_t i = 0; i < e3a.size(); ++i) ASSERT_TRUE(Same(e3a[i], e3b[i])) << i;
  // The order is Rng(seed, epoch)'s Fisher-Yates shuffle of the kept utterances (rng.h).
  std::vector<std::int64_t> kept;
  for (const auto& u : utts) {
    if (u.num_samples >= 16000) kept.push_back(u.store_index);
  }
  std::vector<std::uint32_t> permutation(kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) permutation[i] = static_cast<std::uint32_t>(i);
  Rng(42, 3).Shuffle(permutation);
  for (std::size_t i = 0; i < e3a.size(); ++i) ASSERT_EQ(e3a[i].utterance, kept[permutation[i]]) << i;
  const auto e4 = Flat(a.Epoch(4));
  SegmentSamplerOptions other_seed = Options(4);
  other_seed.seed = 43;
  const auto s43 = Flat(SegmentSampler(utts, 5, other_seed).Epoch(3));
  int same_order = 0;
  int same_seed43 = 0;
  for (std::size_t i = 0; i < e3a.size(); ++i) {
    same_order += e3a[i].utterance == e4[i].utterance;
    same_seed43 += e3a[i].utterance == s43[i].utterance;
  }
  EXPECT_LT(same_order, 20);
  EXPECT_LT(same_seed43, 20);
}

TEST(SegmentSamplerTest, CursorWalksTheEpochsAndResumesFromASavedPosition) {
  const auto utts = Utterances(120, 4);
  const SegmentSampler sampler(utts, 4, Options(8));
  const std::int64_t per_epoch = sampler.BatchesPerEpoch();
  ASSERT_GE(per_epoch, 10);
  std::vector<SegmentRead> expected;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    const auto reads = Flat(sampler.Epoch(epoch));
    expected.insert(expected.end(), reads.begin(), reads.end());
  }
  SegmentBatchCursor cursor(sampler, {1, 0});
  std::vector<SegmentRead> got;
  SegmentPosition saved;
  for (std::int64_t i = 0; i < 2 * per_epoch + 3; ++i) {
    if (i == per_epoch + 5) saved = cursor.position();
    const auto& b = cursor.Next();
    got.insert(got.end(), b.begin(), b.end());
  }
  EXPECT_EQ(saved.epoch, 2);
  EXPECT_EQ(saved.batch, 5);
  EXPECT_EQ(cursor.position().epoch, 3);
  EXPECT_EQ(cursor.position().batch, 3);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(Same(got[i], expected[i])) << i;

  SegmentBatchCursor resumed(sampler, saved);
  for (std::int64_t i = per_epoch + 5; i < 2 * per_epoch + 3; ++i) {
    const auto& b = resumed.Next();
    for (std::size_t j = 0; j < b.size(); ++j) {
      ASSERT_TRUE(Same(b[j], expected[static_cast<std::size_t>(i) * 8 + j])) << i;
    }
  }
  // A position at an epoch's end is the next epoch's start.
  SegmentBatchCursor at_end(sampler, {1, per_epoch});
  EXPECT_TRUE(Same(at_end.Next()[0], expected[static_cast<std::size_t>(per_epoch) * 8]));
  EXPECT_THROW(SegmentBatchCursor(sampler, {1, -1}), std::invalid_argument);
}

TEST(SegmentSamplerTest, BadOptionsAndUtterancesAreRefused) {
  const auto utts = Utterances(100, 3);
  EXPECT_THROW(SegmentSampler(utts, 3, Options(0)), std::invalid_argument);
  EXPECT_THROW(SegmentSampler(utts, 3, Options(4, 2, 2)), std::invalid_argument);
  EXPECT_THROW(SegmentSampler(utts, 0, Options(4)), std::invalid_argument);
  SegmentSamplerOptions inverted = Options(4);
  inverted.min_num_frames = 900;
  EXPECT_THROW(SegmentSampler(utts, 3, inverted), std::invalid_argument);
  auto bad = utts;
  bad[7].speaker = 3;
  EXPECT_THROW(SegmentSampler(bad, 3, Options(4)), DataError);
  bad = utts;
  bad[7].num_samples = -1;
  EXPECT_THROW(SegmentSampler(bad, 3, Options(4)), DataError);
  // Fewer long-enough utterances than one global batch.
  try {
    SegmentSampler(utts, 3, Options(60, 2, 0));
    ADD_FAILURE() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 120"), std::string::npos) << e.what();
  }
}

class TempFolder {
 public:
  TempFolder()
      : path_(stdfs::temp_directory_path() /
              ("asv_segment_sampler_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    stdfs::remove_all(path_);
    stdfs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    stdfs::remove_all(path_, ec);
  }
  const stdfs::path& path() const { return path_; }

 private:
  stdfs::path path_;
};

TEST(SegmentSamplerTest, ReadSegmentFollowsThePlanOverAPcmStore) {
  TempFolder dir;
  // Two utterances: 20,000 samples (shorter than a segment: repeated) and 50,000.
  std::vector<std::vector<float>> samples;
  std::vector<data::PcmStoreEntry> entries;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> s(i == 0 ? 20000 : 50000);
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = static_cast<float>(static_cast<int>((k * 7 + i) % 30001) - 15000);
    const stdfs::path wav = dir.path() / ("u" + std::to_string(i) + ".wav");
    audio::WriteWav(wav, s, 16000);
    samples.push_back(s);
    entries.push_back({"u" + std::to_string(i), wav.string()});
  }
  data::PcmStoreOptions store_options;
  store_options.progress = base::ProgressMode::kSilent;
  data::BuildPcmStore(entries, dir.path() / "store", store_options);
  const data::PcmStore store = data::PcmStore::Open(dir.path() / "store");

  const std::vector<SegmentUtterance> utts =
      StoreUtterances(store, [](const std::string& id) { return id == "u0" ? 0 : id == "u1" ? 1 : -1; });
  ASSERT_EQ(utts.size(), 2u);
  EXPECT_EQ(utts[1].store_index, 1);
  EXPECT_EQ(utts[1].num_samples, 50000);
  EXPECT_EQ(utts[1].speaker, 1);
  EXPECT_EQ(StoreUtterances(store, [](const std::string& id) { return id == "u1" ? 0 : -1; }).size(), 1u);
  const SegmentSampler sampler(utts, 2, Options(1));
  const std::int64_t stride = sampler.MaxSourceSamples();
  for (int epoch = 1; epoch <= 20; ++epoch) {
    const SegmentEpoch e = sampler.Epoch(epoch);
    std::vector<SegmentRead> batch = Flat(e);
    std::vector<float> rows(batch.size() * static_cast<std::size_t>(stride), -1.0f);
    ReadSegments(store, batch, stride, rows.data());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const SegmentRead& r = batch[i];
      const auto& src = samples[static_cast<std::size_t>(r.utterance)];
      EXPECT_EQ(r.repeats(), r.utterance == 0);
      const float* row = rows.data() + i * static_cast<std::size_t>(stride);
      for (std::int64_t k = 0; k < r.length; ++k) {
        ASSERT_EQ(row[k], src[static_cast<std::size_t>(r.start + k % r.count)]) << "epoch " << epoch << " k " << k;
      }
      for (std::int64_t k = r.length; k < stride; ++k) ASSERT_EQ(row[k], 0.0f);
    }
  }
  SegmentRead too_long{0, 0, 0, 0, 1, stride + 1};
  std::vector<float> row(static_cast<std::size_t>(stride + 1));
  EXPECT_THROW(ReadSegments(store, {too_long}, stride, row.data()), std::invalid_argument);
  EXPECT_THROW(ReadSegment(store, {0, 0, 0, 0, 0, 10}, row.data()), std::invalid_argument);
  EXPECT_THROW(ReadSegment(store, {0, 0, 0, 19999, 2, 2}, row.data()), std::out_of_range);
}

}  // namespace
}  // namespace asv::train
