#include "asvcpp/augment/augmenter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <regex>

#include "asvcpp/audio/decode.h"
#include "asvcpp/augment/reverberate.h"
#include "asvcpp/base/error.h"

namespace asv::augment {
namespace {

namespace stdfs = std::filesystem;

std::vector<float> Tone(std::size_t n, double hz, double amp, int rate = 16000) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::round(amp * std::sin(2 * M_PI * hz * i / rate)));
  return x;
}

// What wav-reverberate writes: the mixture as a 16-bit WAV holds it.
std::vector<float> Written(std::vector<float> x) {
  QuantizeToInt16(x);
  return x;
}

// A small MUSAN and RIRS_NOISES on disk: noises of 0.5 s (rising in level), music of 0.3 s, speech of 2 s, and
// RIRs that are a single unit tap at sample 10 (small room) or 20 (medium room).
class AugmenterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = stdfs::temp_directory_path() / ("asv_augmenter_test_" + std::to_string(::getpid()));
    stdfs::remove_all(root_);
    for (int i = 0; i < 3; ++i) {
      // Louder towards its end: a part of it has less power than the whole.
      std::vector<float> noise = Tone(8000, 300 + 100 * i, 1000);
      for (std::size_t t = 0; t < noise.size(); ++t) noise[t] = std::round(noise[t] * (1.0f + 4.0f * t / 8000.0f));
      audio::WriteWav(root_ / "musan/noise/free-sound" / ("noise-" + std::to_string(i) + ".wav"), noise, 16000);
      audio::WriteWav(root_ / "musan/music/fma" / ("music-" + std::to_string(i) + ".wav"),
                      Tone(4800, 500 + 50 * i, 2000), 16000);
      audio::WriteWav(root_ / "musan/speech/librivox" / ("speech-" + std::to_string(i) + ".wav"),
                      Tone(32000, 200 + 30 * i, 3000), 16000);
    }
    for (const auto& [room, tap] : {std::pair<std::string, int>{"smallroom", 10}, {"mediumroom", 20}}) {
      std::vector<float> rir(64, 0.0f);
      rir[static_cast<std::size_t>(tap)] = 32767.0f;
      const stdfs::path wav = root_ / "RIRS_NOISES/simulated_rirs" / room / "Room001/Room001-00001.wav";
      audio::WriteWav(wav, rir, 16000);
      std::ofstream(root_ / "RIRS_NOISES/simulated_rirs" / room / "rir_list")
          << "--rir-id " << room << "-Room001-00001 --room-id " << room
          << "-Room001 RIRS_NOISES/simulated_rirs/" << room << "/Room001/Room001-00001.wav\n";
    }
  }
  void TearDown() override { stdfs::remove_all(root_); }

  Augmenter Make() const {
    return Augmenter(ScanMusan(root_ / "musan"), SimulatedRoomRirs(root_ / "RIRS_NOISES"), 16000);
  }

  stdfs::path root_;
};

TEST_F(AugmenterTest, ACopyIsReproducibleFromItsSeedAndKeepsTheLength) {
  const Augmenter augmenter = Make();
  const auto clean = Tone(48000, 150, 5000);
  for (const Kind kind : {Kind::kReverb, Kind::kNoise, Kind::kMusic, Kind::kBabble}) {
    std::mt19937_64 a(42), b(42);
    const Augmented x = augmenter.Apply(kind, clean, a), y = augmenter.Apply(kind, clean, b);
    EXPECT_EQ(x.samples, y.samples) << KindName(kind);
    EXPECT_EQ(x.description, y.description);
    EXPECT_EQ(x.samples.size(), clean.size());
    EXPECT_NE(x.samples, clean);
    EXPECT_EQ(x.description.rfind(std::string(KindName(kind)) + " ", 0), 0u) << x.description;
  }
}

TEST_F(AugmenterTest, ReverberationUsesOneRirOfEitherRoomSet) {
  const Augmenter augmenter = Make();
  const auto clean = Tone(16000, 150, 5000);
  int small = 0, medium = 0;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 40; ++i) {
    const Augmented r = augmenter.Apply(Kind::kReverb, clean, rng);
    // A unit tap: the clean signal at the level wav-reverberate normalises to (64 RIR samples).
    // The tap's value (32767 / 32768) cancels in the normalisation.
    const double gain = std::sqrt((16000.0 + 64.0 - 1.0) / 16000.0);
    // Written as int16: truncated toward zero.
    for (std::size_t t = 0; t < clean.size(); t += 1001) ASSERT_NEAR(r.samples[t], gain * clean[t], 1.0);
    if (r.description == "reverb smallroom smallroom-Room001-00001") ++small;
    if (r.description == "reverb mediumroom mediumroom-Room001-00001") ++medium;
  }
  EXPECT_EQ(small + medium, 40);
  EXPECT_GT(small, 8);
  EXPECT_GT(medium, 8);
}

// Foreground noises of 0.5 s follow each other with 1 s between them: starts 0, 1.5, 3, 4.5
// on a 4.8-s utterance, each at one of the SNRs 15, 10, 5, 0 dB; the last one is cut, but its
// power for the SNR is that of the whole recording.
TEST_F(AugmenterTest, ForegroundNoisesFollowEachOtherWithAnIntervalOfOneSecond) {
  const Augmenter augmenter = Make();
  const auto clean = Tone(76800, 150, 5000);
  std::mt19937_64 rng(7);
  const Augmented x = augmenter.Apply(Kind::kNoise, clean, rng);
  const std::regex item(R"( (noise-[0-2])@(15|10|5|0)dB\+([0-9.]+)s)");
  std::vector<std::string> starts;
  std::vector<AdditiveSignal> additive;
  std::deque<std::vector<float>> noises;  // stable addresses for AdditiveSignal
  for (auto it = std::sregex_iterator(x.description.begin(), x.description.end(), item); it != std::sregex_iterator();
       ++it) {
    starts.push_back((*it)[3]);
    noises.push_back(audio::DecodeFile(root_ / "musan/noise/free-sound" / ((*it)[1].str() + ".wav")).samples);
    additive.push_back({&noises.back(), std::stod((*it)[2]), std::stod((*it)[3])});
  }
  EXPECT_EQ(starts, (std::vector<std::string>{"0", "1.5", "3", "4.5"})) << x.description;
  // The same mixture as wav-reverberate with those noises, SNRs and start times.
  EXPECT_EQ(x.samples, Written(Reverberate(clean, nullptr, additive, 16000)));
}

TEST_F(AugmenterTest, BackgroundMusicAndBabbleLastTheWholeUtterance) {
  const Augmenter augmenter = Make();
  const auto clean = Tone(24000, 150, 5000);
  std::mt19937_64 rng(3);
  for (const Kind kind : {Kind::kMusic, Kind::kBabble}) {
    for (int trial = 0; trial < 5; ++trial) {
      const Augmented x = augmenter.Apply(kind, clean, rng);
      const std::regex item(kind == Kind::kMusic ? R"( (music-[0-2])@(15|10|8|5)dB)"
                                                 : R"( (speech-[0-2])@(20|17|15|13)dB)");
      std::deque<std::vector<float>> noises;  // stable addresses for AdditiveSignal
      std::vector<AdditiveSignal> additive;
      for (auto it = std::sregex_iterator(x.description.begin(), x.description.end(), item);
           it != std::sregex_iterator(); ++it) {
        const stdfs::path folder = root_ / "musan" / (kind == Kind::kMusic ? "music/fma" : "speech/librivox");
        // 0.3-s music tiled to the 1.5-s utterance; 2-s speech cut to it.
        noises.push_back(RepeatToLength(audio::DecodeFile(folder / ((*it)[1].str() + ".wav")).samples, clean.size()));
        additive.push_back({&noises.back(), std::stod((*it)[2]), 0.0});
      }
      if (kind == Kind::kMusic) {
        EXPECT_EQ(additive.size(), 1u) << x.description;
      } else {
        EXPECT_GE(additive.size(), 3u) << x.description;
        EXPECT_LE(additive.size(), 7u) << x.description;
      }
      EXPECT_EQ(x.samples, Written(Reverberate(clean, nullptr, additive, 16000))) << x.description;
    }
  }
}

TEST_F(AugmenterTest, AMissingNoiseFileIsADataErrorNamingIt) {
  const Augmenter augmenter = Make();
  stdfs::remove_all(root_ / "musan/noise");
  std::mt19937_64 rng(1);
  try {
    augmenter.Apply(Kind::kNoise, Tone(16000, 150, 5000), rng);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("musan/noise/free-sound/noise-"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace asv::augment
