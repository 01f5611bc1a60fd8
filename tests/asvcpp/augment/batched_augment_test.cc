// Per-segment draws (segment_draw.h) and their batched mixing and speed perturbation
// (batched_augment.h), against the CPU reference: Reverberate (reverberate.h) on the same draws and
// samples, a plain loop over the resampling formula, and soxr (asvcpp/audio/resample.h).
#include "asvcpp/augment/batched_augment.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/audio/resample.h"
#include "asvcpp/augment/reverberate.h"
#include "asvcpp/augment/segment_draw.h"
#include "asvcpp/base/error.h"

namespace asv::augment {
namespace {

namespace stdfs = std::filesystem;

constexpr int kRate = 16000;
constexpr std::int64_t kSegment = 32240;  // 200 frames

std::vector<float> Noise(std::size_t n, std::uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(std::round(std::clamp(normal(rng), -32768.0, 32767.0)));
  return x;
}

// Speech-like: noise under a 4 Hz envelope.
std::vector<float> Segment(std::size_t n, std::uint64_t seed) {
  std::vector<float> x = Noise(n, seed, 3000.0);
  for (std::size_t i = 0; i < n; ++i) x[i] *= static_cast<float>(0.55 + 0.45 * std::sin(2 * M_PI * 4.0 * i / kRate));
  return x;
}

// A room impulse response: a direct path of 20000 at `peak` and a decaying tail below it.
std::vector<float> Rir(std::size_t n, std::size_t peak, std::uint64_t seed) {
  std::vector<float> h = Noise(n, seed, 3000.0);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = i < peak ? 0.0f : std::round(h[i] * static_cast<float>(std::exp(-static_cast<double>(i - peak) / 600.0)));
  }
  h[peak] = 20000.0f;
  return h;
}

double Peak(const std::vector<float>& x) {
  double m = 0.0;
  for (float v : x) m = std::max(m, std::abs(static_cast<double>(v)));
  return m;
}

std::vector<float> Row(const torch::Tensor& t, std::int64_t row) {
  const torch::Tensor r = t[row].contiguous().to(torch::kCPU);
  return {r.data_ptr<float>(), r.data_ptr<float>() + r.numel()};
}

// A small MUSAN and RIRS_NOISES on disk. Noises shorter and longer than a segment (0.5, 0.75, 3
// and 4 s; 4 of them, so half the additive draws are noise), music of 0.3 s (tiled) and 5 s,
// speech of 1.25 s (tiled) and 3 s; RIRs of 3,000 and 5,000 samples (small room) and 7,000 (medium
// room) with their peaks at 40, 100 and 250.
class BatchedAugmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = stdfs::temp_directory_path() / ("asv_batched_augment_test_" + std::to_string(::getpid()));
    stdfs::remove_all(root_);
    const std::size_t noise[] = {8000, 12000, 48000, 64000};
    for (std::size_t i = 0; i < 4; ++i) {
      audio::WriteWav(root_ / "musan/noise/free-sound" / fmt::format("noise-{}.wav", i),
                      Noise(noise[i], 10 + i, 500.0 * (i + 1)), kRate);
    }
    const std::size_t music[] = {4800, 80000}, speech[] = {20000, 48000};
    for (std::size_t i = 0; i < 2; ++i) {
      audio::WriteWav(root_ / "musan/music/fma" / fmt::format("music-{}.wav", i), Noise(music[i], 20 + i, 2000.0),
                      kRate);
      audio::WriteWav(root_ / "musan/speech/librivox" / fmt::format("speech-{}.wav", i), Segment(speech[i], 30 + i),
                      kRate);
    }
    struct RirFile {
      const char* room;
      int index;
      std::size_t length, peak;
    };
    std::map<std::string, std::string> lists;
    for (const RirFile& r :
         {RirFile{"smallroom", 1, 3000, 40}, {"smallroom", 2, 5000, 100}, {"mediumroom", 1, 7000, 250}}) {
      const std::string rel = fmt::format("simulated_rirs/{}/Room001/Room001-0000{}.wav", r.room, r.index);
      audio::WriteWav(root_ / "RIRS_NOISES" / rel, Rir(r.length, r.peak, 40 + r.length), kRate);
      lists[r.room] +=
          fmt::format("--rir-id {}-Room001-0000{} --room-id {}-Room001 RIRS_NOISES/{}\n", r.room, r.index, r.room, rel);
    }
    for (const auto& [room, text] : lists)
      std::ofstream(root_ / "RIRS_NOISES/simulated_rirs" / room / "rir_list") << text;
  }
  void TearDown() override { stdfs::remove_all(root_); }

  NoiseBank Bank() const {
    return NoiseBank(ScanMusan(root_ / "musan"), SimulatedRoomRirs(root_ / "RIRS_NOISES"), kRate);
  }

  // Reverberate (the CPU reference) on the samples the draw names.
  static std::vector<float> Reference(const NoiseBank& bank, const SegmentDraw& draw, const std::vector<float>& x) {
    if (draw.kind == SegmentKind::kNone) return x;
    if (draw.kind == SegmentKind::kReverb) {
      const auto h = bank.RirSamples(draw.rir_set, draw.rir);
      const std::vector<float> rir(h->begin(), h->end());
      return Reverberate(x, &rir, {}, kRate);
    }
    std::deque<std::vector<float>> pieces;  // stable addresses for AdditiveSignal
    std::vector<AdditiveSignal> additive;
    for (const NoisePiece& p : draw.pieces) {
      pieces.push_back(CutPiece(bank, draw.kind, p));
      // Half a sample later: the start's floor(seconds * rate) is the start itself.
      additive.push_back({&pieces.back(), p.snr_db, (static_cast<double>(p.start) + 0.5) / kRate});
    }
    return Reverberate(x, nullptr, additive, kRate);
  }

  stdfs::path root_;
};

// ---- draws -----------------------------------------------------------------------------------

TEST_F(BatchedAugmentTest, DrawsAreReproducibleAndFollowWeSpeakersProbabilities) {
  const NoiseBank bank = Bank();
  const SegmentAugmentOptions options;
  std::mt19937_64 a(5), b(5);
  std::map<SegmentKind, int> kinds;
  std::map<std::string, int> rooms;
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) {
    const SegmentDraw x = DrawSegment(bank, kSegment, options, a);
    const SegmentDraw y = DrawSegment(bank, kSegment, options, b);
    ASSERT_EQ(DescribeDraw(bank, x), DescribeDraw(bank, y));
    ++kinds[x.kind];
    if (x.kind == SegmentKind::kReverb) ++rooms[bank.rir_sets()[x.rir_set].name];
  }
  // 0.4 none; 0.6 x 0.5 reverb; the additive 0.3 by set sizes 4 : 2 : 2. Binomial standard
  // deviations are below 0.008: bounds of about 4 of them.
  const auto share = [&](SegmentKind k) { return static_cast<double>(kinds[k]) / draws; };
  EXPECT_NEAR(share(SegmentKind::kNone), 0.4, 0.03);
  EXPECT_NEAR(share(SegmentKind::kReverb), 0.3, 0.03);
  EXPECT_NEAR(share(SegmentKind::kNoise), 0.15, 0.025);
  EXPECT_NEAR(share(SegmentKind::kMusic), 0.075, 0.02);
  EXPECT_NEAR(share(SegmentKind::kBabble), 0.075, 0.02);
  // RIR sets by their probabilities, 0.5 each.
  EXPECT_NEAR(static_cast<double>(rooms["smallroom"]) / kinds[SegmentKind::kReverb], 0.5, 0.06);
}

TEST_F(BatchedAugmentTest, ForegroundNoisesFollowEachOtherAndLongOnesAreRandomChunks) {
  const NoiseBank bank = Bank();
  SegmentAugmentOptions options;
  options.aug_prob = 1.0;
  options.reverb_share = 0.0;
  std::mt19937_64 rng(11);
  std::map<std::int64_t, int> offsets_of_long;
  int sequences = 0;
  for (int i = 0; i < 400; ++i) {
    const SegmentDraw d = DrawSegment(bank, kSegment, options, rng);
    if (d.kind != SegmentKind::kNoise) continue;
    ASSERT_FALSE(d.pieces.empty());
    EXPECT_EQ(d.pieces.front().start, 0);
    for (std::size_t k = 0; k < d.pieces.size(); ++k) {
      const NoisePiece& p = d.pieces[k];
      const auto size = static_cast<std::int64_t>(bank.MusanSamples(SegmentKind::kNoise, p.recording)->size());
      const std::int64_t rest = kSegment - p.start;
      if (k > 0) {
        EXPECT_EQ(p.start, d.pieces[k - 1].start + d.pieces[k - 1].length + kRate) << DescribeDraw(bank, d);
      }
      EXPECT_LT(p.start, kSegment);
      EXPECT_TRUE(p.snr_db == 15 || p.snr_db == 10 || p.snr_db == 5 || p.snr_db == 0) << p.snr_db;
      if (size <= rest) {
        EXPECT_EQ(p.length, size);  // whole, from its start
        EXPECT_EQ(p.source_offset, 0);
      } else {
        EXPECT_EQ(p.length, rest);  // a chunk to the segment's end
        EXPECT_GE(p.source_offset, 0);
        EXPECT_LE(p.source_offset, size - rest);
        if (p.start == 0) ++offsets_of_long[p.source_offset];
      }
    }
    // A 0.5-s noise first: 0.5 s, 1 s of silence, then another from 1.5 s.
    if (d.pieces.front().length == 8000) {
      ASSERT_GE(d.pieces.size(), 2u);
      ++sequences;
    }
  }
  EXPECT_GT(sequences, 5);
  EXPECT_GT(offsets_of_long.size(), 20u);  // offsets vary
}

TEST_F(BatchedAugmentTest, MusicAndBabbleCoverTheSegmentFromARandomOffsetOrTiled) {
  const NoiseBank bank = Bank();
  SegmentAugmentOptions options;
  options.aug_prob = 1.0;
  options.reverb_share = 0.0;
  std::mt19937_64 rng(12);
  std::map<SegmentKind, int> seen;
  for (int i = 0; i < 300; ++i) {
    const SegmentDraw d = DrawSegment(bank, kSegment, options, rng);
    if (d.kind != SegmentKind::kMusic && d.kind != SegmentKind::kBabble) continue;
    ++seen[d.kind];
    const bool music = d.kind == SegmentKind::kMusic;
    if (music) {
      EXPECT_EQ(d.pieces.size(), 1u);
    } else {
      EXPECT_GE(d.pieces.size(), 3u);
      EXPECT_LE(d.pieces.size(), 7u);
    }
    for (const NoisePiece& p : d.pieces) {
      const std::vector<double>& snrs = music ? options.lists.music_snrs_db : options.lists.babble_snrs_db;
      EXPECT_NE(std::find(snrs.begin(), snrs.end(), p.snr_db), snrs.end()) << p.snr_db;
      EXPECT_EQ(p.start, 0);
      EXPECT_EQ(p.length, kSegment);
      const auto size = static_cast<std::int64_t>(bank.MusanSamples(d.kind, p.recording)->size());
      if (size < kSegment) {
        EXPECT_EQ(p.source_offset, 0);
      } else {
        EXPECT_LE(p.source_offset, size - kSegment);
      }
    }
  }
  EXPECT_GT(seen[SegmentKind::kMusic], 10);
  EXPECT_GT(seen[SegmentKind::kBabble], 10);
}

TEST_F(BatchedAugmentTest, APieceLongerThanItsRecordingTilesItFromItsStart) {
  const NoiseBank bank = Bank();
  const std::vector<float> music = audio::DecodeFile(root_ / "musan/music/fma/music-0.wav").samples;  // 4800
  ASSERT_EQ(music.size(), 4800u);
  NoisePiece piece;
  piece.recording = 0;
  piece.length = 10000;
  const std::vector<float> tiled = CutPiece(bank, SegmentKind::kMusic, piece);
  EXPECT_EQ(tiled, RepeatToLength(music, 10000));
  piece.source_offset = 4000;
  piece.length = 1000;
  const std::vector<float> wrapped = CutPiece(bank, SegmentKind::kMusic, piece);
  EXPECT_EQ(wrapped[0], music[4000]);
  EXPECT_EQ(wrapped[799], music[4799]);
  EXPECT_EQ(wrapped[800], music[0]);
  EXPECT_EQ(bank.CachedBytes(), 4800u * 2);  // decoded once, int16
}

TEST_F(BatchedAugmentTest, BadOptionsAndMissingFilesAreClearErrors) {
  const NoiseBank bank = Bank();
  std::mt19937_64 rng(1);
  SegmentAugmentOptions options;
  options.aug_prob = 1.5;
  EXPECT_THROW(DrawSegment(bank, kSegment, options, rng), std::invalid_argument);
  options = {};
  options.lists.babble_counts = {0};
  EXPECT_THROW(DrawSegment(bank, kSegment, options, rng), std::invalid_argument);
  EXPECT_THROW(DrawSegment(bank, 0, {}, rng), std::invalid_argument);
  EXPECT_THROW(bank.MusanSamples(SegmentKind::kReverb, 0), std::out_of_range);
  EXPECT_THROW(bank.RirSamples(2, 0), std::out_of_range);
  stdfs::remove_all(root_ / "musan/noise");
  try {
    bank.MusanSamples(SegmentKind::kNoise, 1);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("musan/noise/free-sound/noise-1.wav"), std::string::npos) << e.what();
  }
}

// ---- batched mixing against Reverberate -------------------------------------------------------

TEST_F(BatchedAugmentTest, AMixedBatchEqualsReverberateOnTheSameDrawsAndSamples) {
  const NoiseBank bank = Bank();
  const std::int64_t batch = 64;
  std::mt19937_64 rng(2024);
  std::vector<SegmentDraw> draws;
  std::vector<std::vector<float>> clean;
  torch::Tensor segments = torch::empty({batch, kSegment}, torch::kFloat32);
  std::map<SegmentKind, int> kinds;
  std::map<std::size_t, int> rirs_of_small_room;
  for (std::int64_t b = 0; b < batch; ++b) {
    draws.push_back(DrawSegment(bank, kSegment, {}, rng));
    ++kinds[draws.back().kind];
    if (draws.back().kind == SegmentKind::kReverb && draws.back().rir_set == 0) ++rirs_of_small_room[draws.back().rir];
    clean.push_back(Segment(kSegment, 100 + static_cast<std::uint64_t>(b)));
    std::copy(clean.back().begin(), clean.back().end(), segments[b].data_ptr<float>());
  }
  for (const SegmentKind k :
       {SegmentKind::kNone, SegmentKind::kReverb, SegmentKind::kNoise, SegmentKind::kMusic, SegmentKind::kBabble}) {
    ASSERT_GT(kinds[k], 0) << "the seed gives no " << SegmentKindName(k);
  }
  ASSERT_EQ(rirs_of_small_room.size(), 2u) << "RIRs of two lengths in one batch (zero padding)";
  const AugmentationInputs inputs = CutAugmentationInputs(bank, draws, kSegment);
  const torch::Tensor out = ApplyAugmentation(segments, inputs);
  ASSERT_EQ(out.sizes(), segments.sizes());
  for (std::int64_t b = 0; b < batch; ++b) {
    const SegmentDraw& d = draws[static_cast<std::size_t>(b)];
    const std::vector<float> expected = Reference(bank, d, clean[static_cast<std::size_t>(b)]);
    const std::vector<float> got = Row(out, b);
    if (d.kind == SegmentKind::kNone) {
      EXPECT_EQ(got, expected) << b;
      continue;
    }
    // float32 against double: about 3e-7 of the peak here.
    const double tolerance = 1e-5 * Peak(expected);
    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(got[i] - static_cast<double>(expected[i])));
    EXPECT_LE(worst, tolerance) << "segment " << b << ": " << DescribeDraw(bank, d);
    EXPECT_NE(got, clean[static_cast<std::size_t>(b)]);
  }
}

TEST_F(BatchedAugmentTest, ASilentSegmentStaysSilentAndMismatchedInputsAreRejected) {
  const NoiseBank bank = Bank();
  SegmentDraw reverb;
  reverb.kind = SegmentKind::kReverb;
  SegmentDraw babble;
  babble.kind = SegmentKind::kBabble;
  babble.pieces.push_back({1, 0, kSegment, 0, 13.0});
  const AugmentationInputs inputs = CutAugmentationInputs(bank, {reverb, babble}, kSegment);
  const torch::Tensor out = ApplyAugmentation(torch::zeros({2, kSegment}), inputs);
  EXPECT_EQ(out.abs().max().item<float>(), 0.0f);
  // As Reverberate: zeros, not 0/0.
  const std::vector<float> silent(static_cast<std::size_t>(kSegment), 0.0f);
  EXPECT_EQ(Reference(bank, babble, silent), silent);

  EXPECT_THROW(ApplyAugmentation(torch::zeros({2, kSegment - 1}), inputs), std::invalid_argument);
  EXPECT_THROW(ApplyAugmentation(torch::zeros({2, kSegment}, torch::kFloat64), inputs), std::invalid_argument);
  SegmentDraw outside = babble;
  outside.pieces[0].start = 1;  // one sample past the end
  EXPECT_THROW(CutAugmentationInputs(bank, {outside}, kSegment), std::invalid_argument);
  SegmentDraw none_with_noise = babble;
  none_with_noise.kind = SegmentKind::kNone;
  EXPECT_THROW(CutAugmentationInputs(bank, {none_with_noise}, kSegment), std::invalid_argument);
}

// On a GPU (skipped without one): the same batch, speed perturbation included, as on the CPU.
TEST_F(BatchedAugmentTest, OnAGpuTheBatchEqualsTheCpusToFloatRounding) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuDNN(false);  // full float32 products in conv1d
  const NoiseBank bank = Bank();
  const std::int64_t batch = 32;
  std::mt19937_64 rng(7);
  std::vector<SegmentDraw> draws;
  torch::Tensor source = torch::empty({batch, SpeedSourceSamples(kSegment, 1.1)});
  for (std::int64_t b = 0; b < batch; ++b) {
    draws.push_back(DrawSegment(bank, kSegment, {}, rng));
    const std::vector<float> x = Segment(static_cast<std::size_t>(source.size(1)), 300 + static_cast<std::uint64_t>(b));
    std::copy(x.begin(), x.end(), source[b].data_ptr<float>());
  }
  const AugmentationInputs inputs = CutAugmentationInputs(bank, draws, kSegment);
  const torch::Device cuda(torch::kCUDA);
  const torch::Tensor cpu = ApplyAugmentation(SpeedPerturb(source, 1.1).narrow(1, 0, kSegment).contiguous(), inputs);
  const torch::Tensor gpu =
      ApplyAugmentation(SpeedPerturb(source.to(cuda), 1.1).narrow(1, 0, kSegment).contiguous(), inputs.To(cuda));
  at::globalContext().setAllowTF32CuDNN(tf32);
  ASSERT_EQ(gpu.device().type(), torch::kCUDA);
  const float peak = cpu.abs().max().item<float>();
  EXPECT_LE((gpu.cpu() - cpu).abs().max().item<float>(), 1e-5f * peak);
}

// ---- speed perturbation ------------------------------------------------------------------------

// The resampling formula of SpeedPerturb's header as a plain loop, in double precision.
std::vector<float> LoopResample(const std::vector<float>& x, std::int64_t orig, std::int64_t next) {
  const double w = 6.0, cutoff = 0.99 * static_cast<double>(std::min(orig, next));
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> y(static_cast<std::size_t>(n * next / orig));
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(y.size()); ++j) {
    const double centre = static_cast<double>(j) * orig / next;  // in input samples
    const double reach = w / cutoff * orig;
    double sum = 0.0;
    for (auto i = static_cast<std::int64_t>(std::floor(centre - reach));
         i <= static_cast<std::int64_t>(std::ceil(centre + reach)); ++i) {
      if (i < 0 || i >= n) continue;
      double t = cutoff * (static_cast<double>(i) / orig - static_cast<double>(j) / next);
      t = std::clamp(t, -w, w);
      const double window = std::pow(std::cos(M_PI * t / (2 * w)), 2);
      const double sinc = t == 0.0 ? 1.0 : std::sin(M_PI * t) / (M_PI * t);
      sum += x[static_cast<std::size_t>(i)] * sinc * window * cutoff / orig;
    }
    y[static_cast<std::size_t>(j)] = static_cast<float>(sum);
  }
  return y;
}

TEST(SpeedPerturbTest, EqualsTheResamplingFormulaAsAPlainLoop) {
  const std::int64_t n = 6000;
  torch::Tensor x = torch::empty({3, n});
  std::vector<std::vector<float>> rows;
  for (std::int64_t b = 0; b < 3; ++b) {
    rows.push_back(Segment(static_cast<std::size_t>(n), 7 + static_cast<std::uint64_t>(b)));
    std::copy(rows.back().begin(), rows.back().end(), x[b].data_ptr<float>());
  }
  for (const auto& [factor, orig, next] : {std::tuple{0.9, 9, 10}, {1.1, 11, 10}}) {
    const torch::Tensor y = SpeedPerturb(x, factor);
    ASSERT_EQ(y.size(1), static_cast<std::int64_t>(std::floor(n / factor))) << factor;
    for (std::int64_t b = 0; b < 3; ++b) {
      const std::vector<float> expected = LoopResample(rows[static_cast<std::size_t>(b)], orig, next);
      const std::vector<float> got = Row(y, b);
      ASSERT_EQ(got.size(), expected.size());
      const double tolerance = 1e-4 * Peak(expected);
      for (std::size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], expected[j], tolerance) << factor << " " << j;
    }
  }
  EXPECT_TRUE(SpeedPerturb(x, 1.0).equal(x));
}

TEST(SpeedPerturbTest, SourceLengthsGiveTheSegmentLength) {
  EXPECT_EQ(SpeedSourceSamples(kSegment, 0.9), 29016);
  EXPECT_EQ(SpeedSourceSamples(kSegment, 1.1), 35464);
  EXPECT_EQ(SpeedSourceSamples(kSegment, 1.0), kSegment);
  for (const double factor : {0.9, 1.1, 0.95}) {
    const std::int64_t n = SpeedSourceSamples(kSegment, factor);
    EXPECT_EQ(SpeedPerturb(torch::zeros({1, n}), factor).size(1), kSegment) << factor;
    EXPECT_LT(SpeedPerturb(torch::zeros({1, n - 1}), factor).size(1), kSegment) << factor;
  }
  EXPECT_THROW(SpeedPerturb(torch::zeros({1, 100}), 0.0), std::invalid_argument);
  EXPECT_THROW(SpeedPerturb(torch::zeros({1, 100}), -1.1), std::invalid_argument);
  EXPECT_THROW(SpeedPerturb(torch::zeros({100}), 1.1), std::invalid_argument);
}

// sox's speed effect resamples from 16 kHz x factor to 16 kHz; soxr (asvcpp/audio/resample.h) is
// the same conversion with another filter. On tones in both filters' pass band they agree.
TEST(SpeedPerturbTest, AgreesWithSoxrOnABandLimitedSignal) {
  const std::size_t n = 32000;
  std::vector<float> x(n, 0.0f);
  const double tones[] = {150, 440, 1000, 2300, 3700, 4400};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < std::size(tones); ++k) {
      x[i] += static_cast<float>(1500.0 * std::sin(2 * M_PI * tones[k] * i / kRate + k));
    }
  }
  torch::Tensor t = torch::empty({1, static_cast<std::int64_t>(n)});
  std::copy(x.begin(), x.end(), t.data_ptr<float>());
  for (const double factor : {0.9, 1.1}) {
    const std::vector<float> ours = Row(SpeedPerturb(t, factor), 0);
    const std::vector<float> soxr = audio::Resample(x, static_cast<int>(std::lround(kRate * factor)), kRate);
    // Away from the ends (where both see the signal stop) the error is below -40 dB.
    double error = 0.0, power = 0.0;
    for (std::size_t j = 400; j + 400 < std::min(ours.size(), soxr.size()); ++j) {
      error += std::pow(ours[j] - static_cast<double>(soxr[j]), 2);
      power += std::pow(static_cast<double>(soxr[j]), 2);
    }
    const double db = 10 * std::log10(error / power);
    EXPECT_LT(db, -40.0) << factor;
    std::cout << "speed " << factor << ": SpeedPerturb vs soxr " << db << " dB\n";
  }
}

// Frequency from the zero crossings between the first and the last one.
double Frequency(const std::vector<float>& y, int rate) {
  double first = -1, last = -1;
  int crossings = 0;
  for (std::size_t i = 200; i + 200 < y.size(); ++i) {
    if ((y[i] < 0) != (y[i + 1] < 0)) {
      const double at = static_cast<double>(i) + y[i] / (y[i] - y[i + 1]);
      if (first < 0) first = at;
      last = at;
      ++crossings;
    }
  }
  return (crossings - 1) / 2.0 / ((last - first) / rate);
}

TEST(SpeedPerturbTest, ScalesASinesFrequencyByTheFactor) {
  const std::int64_t n = 32000;
  torch::Tensor x = torch::empty({1, n});
  float* p = x.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(8000 * std::sin(2 * M_PI * 1000.0 * i / kRate));
  EXPECT_NEAR(Frequency(Row(x, 0), kRate), 1000.0, 0.5);
  EXPECT_NEAR(Frequency(Row(SpeedPerturb(x, 1.1), 0), kRate), 1100.0, 0.5);
  EXPECT_NEAR(Frequency(Row(SpeedPerturb(x, 0.9), 0), kRate), 900.0, 0.5);
}

}  // namespace
}  // namespace asv::augment
