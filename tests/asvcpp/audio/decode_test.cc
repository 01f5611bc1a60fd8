#include "asvcpp/audio/decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "asvcpp/audio/subprocess.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "tests/asvcpp/audio/audio_test_util.h"

namespace asv::audio {
namespace {

using testing::HaveProgram;
using testing::Sine;
using testing::TempDir;
using testing::WriteShorts;

std::vector<float> ToFloat(const std::vector<short>& s) { return {s.begin(), s.end()}; }

// Runs `f` and returns the DataError message (fails the test when nothing is thrown).
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return {};
}

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(DecodeTest, Int16WavDecodesToExactInt16Values) {
  TempDir dir("int16");
  std::vector<short> pcm = Sine(1600, 300.0, 16000);
  pcm[0] = -32768;
  pcm[1] = 32767;
  ASSERT_TRUE(WriteShorts(dir / "a.wav", pcm, 1, 16000));
  const Audio audio = DecodeFile(dir / "a.wav");
  EXPECT_EQ(audio.samples, ToFloat(pcm));
  EXPECT_EQ(audio.sample_rate, 16000);
  EXPECT_EQ(audio.source_sample_rate, 16000);
  EXPECT_EQ(audio.source_channels, 1);
  EXPECT_FALSE(audio.resampled);
  EXPECT_DOUBLE_EQ(audio.Seconds(), 0.1);
  // Through a wav.scp value too.
  EXPECT_EQ(Decode((dir / "a.wav").string()).samples, ToFloat(pcm));
}

TEST(DecodeTest, FlacAndOggDecode) {
  TempDir dir("flac");
  const std::vector<short> pcm = Sine(4000, 500.0, 16000);
  ASSERT_TRUE(WriteShorts(dir / "a.flac", pcm, 1, 16000, SF_FORMAT_FLAC | SF_FORMAT_PCM_16));
  EXPECT_EQ(DecodeFile(dir / "a.flac").samples, ToFloat(pcm));
  if (WriteShorts(dir / "a.ogg", pcm, 1, 16000, SF_FORMAT_OGG | SF_FORMAT_VORBIS)) {
    const Audio ogg = DecodeFile(dir / "a.ogg");
    EXPECT_EQ(ogg.samples.size(), pcm.size());  // Lossy: only the length is exact.
  }
}

TEST(DecodeTest, MultiChannelTakesChannelZeroOrTheMean) {
  TempDir dir("stereo");
  std::vector<short> interleaved;
  for (short i = 0; i < 100; ++i) {
    interleaved.push_back(static_cast<short>(i * 10));  // left
    interleaved.push_back(static_cast<short>(-i * 20));  // right
  }
  ASSERT_TRUE(WriteShorts(dir / "s.wav", interleaved, 2, 16000));
  const Audio first = DecodeFile(dir / "s.wav");
  ASSERT_EQ(first.samples.size(), 100u);
  EXPECT_EQ(first.source_channels, 2);
  EXPECT_EQ(first.samples[7], 70.0f);
  DecodeOptions mix;
  mix.channels = ChannelPolicy::kMix;
  const Audio mean = DecodeFile(dir / "s.wav", mix);
  EXPECT_EQ(mean.samples[7], -35.0f);
}

TEST(DecodeTest, OtherSampleFormatsAreScaledToTheInt16Range) {
  TempDir dir("formats");
  const std::vector<short> pcm = {0, 1000, -1000, 16384};
  {
    // Float files hold values in [-1, 1).
    SF_INFO info{};
    info.samplerate = 16000;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    SNDFILE* f = sf_open((dir / "f.wav").c_str(), SFM_WRITE, &info);
    ASSERT_NE(f, nullptr);
    std::vector<float> normalised;
    for (const short s : pcm) normalised.push_back(static_cast<float>(s) / 32768.0f);
    sf_writef_float(f, normalised.data(), static_cast<sf_count_t>(normalised.size()));
    sf_close(f);
  }
  ASSERT_TRUE(WriteShorts(dir / "p24.wav", pcm, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_24));
  EXPECT_EQ(DecodeFile(dir / "f.wav").samples, ToFloat(pcm));
  EXPECT_EQ(DecodeFile(dir / "p24.wav").samples, ToFloat(pcm));
}

// IEEE-float WAV files can hold NaN, infinities and absurd magnitudes (corrupt data). They are
// errors naming the file and the sample, not samples that poison the features downstream; values
// somewhat beyond full scale are legal float audio and decode.
TEST(DecodeTest, NonFiniteAndImpossiblyLargeFloatSamplesAreDataErrorsNamingTheFile) {
  TempDir dir("nonfinite");
  const auto write_float = [&](const std::string& name, const std::vector<float>& values) {
    SF_INFO info{};
    info.samplerate = 16000;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    SNDFILE* f = sf_open((dir / name).c_str(), SFM_WRITE, &info);
    EXPECT_NE(f, nullptr);
    sf_writef_float(f, values.data(), static_cast<sf_count_t>(values.size()));
    sf_close(f);
    return dir / name;
  };
  std::vector<float> values(32000, 0.25f);
  values[16000] = std::nanf("");
  const auto nan_file = write_float("nan.wav", values);
  std::string message = ErrorOf([&] { DecodeFile(nan_file); });
  EXPECT_TRUE(Contains(message, nan_file.string())) << message;
  EXPECT_TRUE(Contains(message, "sample 16000 (at 1.000 s) is NaN")) << message;

  values[16000] = -INFINITY;
  const auto inf_file = write_float("inf.wav", values);
  message = ErrorOf([&] { DecodeFile(inf_file); });
  EXPECT_TRUE(Contains(message, "is infinite")) << message;

  values[16000] = 1e30f;  // finite, but squared it overflows float energies
  const auto huge_file = write_float("huge.wav", values);
  message = ErrorOf([&] { DecodeFile(huge_file); });
  EXPECT_TRUE(Contains(message, "more than 1024 times full scale")) << message;
  // Resampling does not hide it: the check runs on the source samples.
  DecodeOptions at8k;
  at8k.sample_rate = 8000;
  message = ErrorOf([&] { DecodeFile(huge_file, at8k); });
  EXPECT_TRUE(Contains(message, "more than 1024 times full scale")) << message;

  values[16000] = -3.0f;  // 3x full scale: unusual, but legal float audio
  const Audio loud = DecodeFile(write_float("loud.wav", values));
  ASSERT_EQ(loud.samples.size(), values.size());
  EXPECT_EQ(loud.samples[16000], -3.0f * 32768.0f);
  EXPECT_EQ(loud.samples[0], 0.25f * 32768.0f);
}

TEST(DecodeTest, ResamplesToTheRequestedRate) {
  TempDir dir("resample");
  ASSERT_TRUE(WriteShorts(dir / "a8k.wav", Sine(8000, 440.0, 8000), 1, 8000));
  const Audio audio = DecodeFile(dir / "a8k.wav");
  EXPECT_TRUE(audio.resampled);
  EXPECT_EQ(audio.source_sample_rate, 8000);
  EXPECT_EQ(audio.sample_rate, 16000);
  EXPECT_EQ(audio.samples.size(), 16000u);
  const std::vector<short> ideal = Sine(16000, 440.0, 16000);
  for (std::size_t i = 2000; i < 14000; i += 997) EXPECT_NEAR(audio.samples[i], ideal[i], 15.0);

  ResampleReporter reporter("demo");
  reporter.Note("u1", audio);
  reporter.Note("u2", audio);
  reporter.Note("u3", DecodeFile(dir / "a8k.wav", DecodeOptions{8000}));
  EXPECT_EQ(reporter.resampled_count(), 2u);
  reporter.LogSummary();
}

TEST(DecodeTest, MaxSamplesReadsOnlyTheStartOfTheSource) {
  TempDir dir("prefix");
  const std::vector<short> pcm = Sine(48000, 300.0, 16000);
  ASSERT_TRUE(WriteShorts(dir / "a.wav", pcm, 1, 16000));
  DecodeOptions options;
  options.max_samples = 1000;
  const Audio head = DecodeFile(dir / "a.wav", options);
  EXPECT_EQ(head.samples, ToFloat(std::vector<short>(pcm.begin(), pcm.begin() + 1000)));
  // A bound beyond the end gives the whole file.
  options.max_samples = 100000;
  EXPECT_EQ(DecodeFile(dir / "a.wav", options).samples, ToFloat(pcm));
  // A concatenation list stops at the bound too, part-way through its second file.
  {
    std::ofstream(dir / "list.txt") << "file 'a.wav'\nfile 'a.wav'\n";
  }
  options.max_samples = 50000;
  const Audio joined = DecodeConcat(dir / "list.txt", options);
  ASSERT_EQ(joined.samples.size(), 50000u);
  EXPECT_EQ(joined.samples[48000 + 5], static_cast<float>(pcm[5]));
  // With resampling: the same samples as the start of the whole file resampled, but for the
  // resampler's edge at the cut (the last 50 ms are not compared).
  ASSERT_TRUE(WriteShorts(dir / "a8k.wav", Sine(16000, 440.0, 8000), 1, 8000));
  const Audio whole = DecodeFile(dir / "a8k.wav");
  options.max_samples = 8000;
  const Audio part = DecodeFile(dir / "a8k.wav", options);
  ASSERT_EQ(part.samples.size(), 8000u);
  for (std::size_t i = 0; i < 7200; i += 37) EXPECT_NEAR(part.samples[i], whole.samples[i], 1.0) << i;
}

TEST(DecodeTest, WriteWavRoundsAndClips) {
  TempDir dir("write");
  WriteWav(dir / "sub" / "w.wav", {0.4f, -0.6f, 40000.0f, -40000.0f, 123.0f}, 8000);
  const Audio audio = DecodeFile(dir / "sub" / "w.wav", DecodeOptions{8000});
  EXPECT_EQ(audio.samples, (std::vector<float>{0.0f, -1.0f, 32767.0f, -32768.0f, 123.0f}));
}

TEST(DecodeTest, BadFilesAreDataErrorsNamingThePath) {
  TempDir dir("bad");
  const std::string missing = (dir / "missing.wav").string();
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(missing); }), missing + ": audio file does not exist"));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir.path()); }), "not a regular file"));

  fs::WriteFileAtomic(dir / "empty.wav", std::string());
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "empty.wav"); }), "empty.wav: empty audio file"));

  fs::WriteFileAtomic(dir / "garbage.wav", std::string(1000, 'x'));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "garbage.wav"); }), "garbage.wav"));

  // A WAV cut in the middle of its data chunk.
  ASSERT_TRUE(WriteShorts(dir / "full.wav", Sine(16000, 200.0, 16000), 1, 16000));
  std::string bytes = fs::ReadFile(dir / "full.wav");
  fs::WriteFileAtomic(dir / "cut.wav", bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "cut.wav"); }), "cut.wav: truncated WAV file"));

  // Only a header, no samples.
  ASSERT_TRUE(WriteShorts(dir / "nosamples.wav", {}, 1, 16000));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "nosamples.wav"); }), "contains no audio samples"));

  // A FLAC stream cut short.
  ASSERT_TRUE(WriteShorts(dir / "full.flac", Sine(48000, 200.0, 16000), 1, 16000,
                          SF_FORMAT_FLAC | SF_FORMAT_PCM_16));
  bytes = fs::ReadFile(dir / "full.flac");
  fs::WriteFileAtomic(dir / "cut.flac", bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "cut.flac"); }), "cut.flac"));
}

TEST(DecodeTest, PipesDecodeTheirStdoutAndCheckTheExitStatus) {
  TempDir dir("pipe");
  const std::vector<short> pcm = Sine(3200, 250.0, 16000);
  ASSERT_TRUE(WriteShorts(dir / "a.wav", pcm, 1, 16000));
  const std::string wav = (dir / "a.wav").string();
  EXPECT_EQ(Decode("cat " + wav + " |").samples, ToFloat(pcm));

  const std::string failing = "cat " + wav + "; exit 2";
  const std::string message = ErrorOf([&] { Decode(failing + " |"); });
  EXPECT_TRUE(Contains(message, "'" + failing + " |': command failed: exit status 2")) << message;
  EXPECT_TRUE(Contains(ErrorOf([&] { Decode("cat /nonexistent/x.wav |"); }), "No such file"));
  EXPECT_TRUE(Contains(ErrorOf([&] { Decode("true |"); }), "wrote no audio"));
  EXPECT_TRUE(Contains(ErrorOf([&] { Decode("echo not audio |"); }), "unreadable audio data"));
}

TEST(DecodeTest, StreamedWavHeadersAreAccepted) {
  const std::vector<short> pcm = {1, -2, 3, -4, 5, -6};
  for (const std::uint32_t size : {0xFFFFFFFFu, 0x7FFFF000u}) {
    std::string wav = "RIFF";
    const auto put32 = [&](std::uint32_t v) {
      for (int i = 0; i < 4; ++i) wav += static_cast<char>((v >> (8 * i)) & 0xFF);
    };
    const auto put16 = [&](std::uint16_t v) {
      wav += static_cast<char>(v & 0xFF);
      wav += static_cast<char>(v >> 8);
    };
    put32(size);
    wav += "WAVEfmt ";
    put32(16);
    put16(1);
    put16(1);
    put32(16000);
    put32(32000);
    put16(2);
    put16(16);
    wav += "data";
    put32(size);
    for (const short s : pcm) put16(static_cast<std::uint16_t>(s));
    EXPECT_EQ(DecodeMemory(wav, "streamed").samples, ToFloat(pcm)) << std::hex << size;
  }
}

TEST(DecodeTest, ConcatListsJoinTheDecodedPartsInOrder) {
  TempDir dir("concat");
  const std::vector<short> a = Sine(1000, 100.0, 16000), b = Sine(500, 700.0, 8000);
  ASSERT_TRUE(WriteShorts(dir / "a.wav", a, 1, 16000));
  ASSERT_TRUE(WriteShorts(dir / "b.wav", b, 1, 8000));
  WriteConcatList(dir / "cat" / "s-v.txt", {dir / "a.wav", dir / "b.wav", dir / "a.wav"});
  const Audio audio = Decode("cat:" + (dir / "cat" / "s-v.txt").string());
  ASSERT_EQ(audio.samples.size(), 1000u + 1000u + 1000u);
  EXPECT_TRUE(audio.resampled);
  EXPECT_EQ(audio.source_sample_rate, 16000);
  EXPECT_EQ(std::vector<float>(audio.samples.begin(), audio.samples.begin() + 1000), ToFloat(a));
  EXPECT_EQ(std::vector<float>(audio.samples.begin() + 2000, audio.samples.end()), ToFloat(a));

  WriteConcatList(dir / "bad.txt", {dir / "a.wav", dir / "gone.wav"});
  const std::string message = ErrorOf([&] { DecodeConcat(dir / "bad.txt"); });
  EXPECT_TRUE(Contains(message, "gone.wav: audio file does not exist")) << message;
  EXPECT_TRUE(Contains(message, "part 2 of concatenation list")) << message;
}

// A build without FFmpeg's libraries refuses an m4a with an error naming the file, the missing
// libraries and how to get them (the bytes are never looked at: the extension decides).
TEST(DecodeFileTest, WithoutFfmpegLibrariesAnM4aIsAnErrorNamingFileAndMissingSupport) {
  if (HaveLibavDecoding()) GTEST_SKIP() << "built with FFmpeg's libraries: m4a files decode";
  TempDir dir("nolibav");
  const std::filesystem::path m4a = dir / "id00012_a.m4a";
  std::ofstream(m4a) << "not looked at";
  const std::string message = ErrorOf([&] { DecodeFile(m4a); });
  EXPECT_TRUE(Contains(message, m4a.string() + ": cannot decode")) << message;
  EXPECT_TRUE(Contains(message, "built without them")) << message;
  EXPECT_TRUE(Contains(message, "libavformat-dev")) << message;
}

class FfmpegDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveLibavDecoding()) GTEST_SKIP() << "built without FFmpeg's libraries (ASV_WITH_LIBAV)";
    if (!HaveProgram("ffmpeg")) GTEST_SKIP() << "ffmpeg not installed (Debian package ffmpeg)";
  }
  // Encodes `pcm` (16 kHz mono) to AAC in an .m4a container with ffmpeg.
  static void MakeM4a(const std::filesystem::path& wav, const std::filesystem::path& m4a) {
    const ProcessResult r = RunProcess({"ffmpeg", "-nostdin", "-v", "error", "-y", "-i", wav.string(),
                                        "-c:a", "aac", "-b:a", "64k", m4a.string()});
    ASSERT_TRUE(r.ok()) << r.Describe();
  }
};

// What the ffmpeg program gives for `file` (-map 0:a:0 -f wav -c:a pcm_s16le), read as WAV.
Audio FfmpegProgram(const std::filesystem::path& file, const DecodeOptions& options = {}) {
  const ProcessResult r = RunProcess({"ffmpeg", "-nostdin", "-v", "error", "-i", file.string(), "-map", "0:a:0", "-f",
                                      "wav", "-c:a", "pcm_s16le", "-"});
  EXPECT_TRUE(r.ok()) << r.Describe();
  return DecodeMemory(r.output, file.string(), options);
}

TEST_F(FfmpegDecodeTest, M4aDecodesInProcessToTheSamplesOfTheFfmpegProgram) {
  TempDir dir("m4a");
  const std::vector<short> pcm = Sine(24000, 440.0, 16000, 8000.0);  // 1.5 s
  ASSERT_TRUE(WriteShorts(dir / "a.wav", pcm, 1, 16000));
  MakeM4a(dir / "a.wav", dir / "a.m4a");
  const Audio audio = DecodeFile(dir / "a.m4a");
  EXPECT_EQ(audio.source_sample_rate, 16000);
  EXPECT_FALSE(audio.resampled);
  EXPECT_NEAR(static_cast<double>(audio.samples.size()), 24000.0, 1024.0);
  double energy = 0.0;
  for (const float s : audio.samples) energy += double{s} * s;
  EXPECT_NEAR(std::sqrt(energy / audio.samples.size()), 8000.0 / std::sqrt(2.0), 400.0);
  // Sample for sample what stage 1 got when it ran the ffmpeg program per file.
  EXPECT_EQ(audio.samples, FfmpegProgram(dir / "a.m4a").samples);

  DecodeOptions eight_k;
  eight_k.sample_rate = 8000;
  const Audio down = DecodeFile(dir / "a.m4a", eight_k);
  EXPECT_TRUE(down.resampled);
  EXPECT_EQ(down.samples, FfmpegProgram(dir / "a.m4a", eight_k).samples);

  // Only the start when max_samples bounds it.
  DecodeOptions head;
  head.max_samples = 5000;
  EXPECT_EQ(DecodeFile(dir / "a.m4a", head).samples,
            std::vector<float>(audio.samples.begin(), audio.samples.begin() + 5000));

  // Two channels: channel 0, or the mean, as from the program's WAV.
  std::vector<short> stereo;
  const std::vector<short> right = Sine(24000, 1000.0, 16000, 3000.0);
  for (std::size_t i = 0; i < pcm.size(); ++i) {
    stereo.push_back(pcm[i]);
    stereo.push_back(right[i]);
  }
  ASSERT_TRUE(WriteShorts(dir / "s.wav", stereo, 2, 16000));
  MakeM4a(dir / "s.wav", dir / "s.m4a");
  const Audio first = DecodeFile(dir / "s.m4a");
  EXPECT_EQ(first.source_channels, 2);
  EXPECT_EQ(first.samples, FfmpegProgram(dir / "s.m4a").samples);
  DecodeOptions mix;
  mix.channels = ChannelPolicy::kMix;
  const Audio mean = DecodeFile(dir / "s.m4a", mix);
  EXPECT_EQ(mean.samples, FfmpegProgram(dir / "s.m4a", mix).samples);
  EXPECT_NE(mean.samples, first.samples);

  // A file libsndfile does not know (extension hides the format) falls back to libav.
  std::filesystem::copy_file(dir / "a.m4a", dir / "a.unknown");
  EXPECT_EQ(DecodeFile(dir / "a.unknown").samples, audio.samples);

  // Concatenated m4a parts.
  WriteConcatList(dir / "l.txt", {dir / "a.m4a", dir / "a.m4a"});
  EXPECT_EQ(DecodeConcat(dir / "l.txt").samples.size(), 2 * audio.samples.size());
}

TEST_F(FfmpegDecodeTest, LibavErrorsAreDataErrorsNamingTheFile) {
  TempDir dir("m4a_bad");
  fs::WriteFileAtomic(dir / "bad.m4a", std::string(5000, 'z'));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "bad.m4a"); }), "bad.m4a: unreadable audio file"));
  // libsndfile's reason is kept for a file neither library reads.
  fs::WriteFileAtomic(dir / "bad.xyz", std::string(5000, 'z'));
  const std::string both = ErrorOf([&] { DecodeFile(dir / "bad.xyz"); });
  EXPECT_TRUE(Contains(both, "bad.xyz: unreadable audio file")) << both;
  EXPECT_TRUE(Contains(both, "(libsndfile: ")) << both;

  // An MP4 with a video stream only.
  const ProcessResult video = RunProcess({"ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                          "testsrc=duration=0.2:size=64x48:rate=10", "-c:v", "mpeg4",
                                          (dir / "video.mp4").string()});
  ASSERT_TRUE(video.ok()) << video.Describe();
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "video.mp4"); }), "video.mp4: no audio stream"));

  // The first half of an m4a (its index, written last, is gone).
  ASSERT_TRUE(WriteShorts(dir / "a.wav", Sine(16000, 440.0, 16000), 1, 16000));
  MakeM4a(dir / "a.wav", dir / "a.m4a");
  const std::string whole = fs::ReadFile(dir / "a.m4a");
  fs::WriteFileAtomic(dir / "half.m4a", whole.substr(0, whole.size() / 2));
  EXPECT_TRUE(Contains(ErrorOf([&] { DecodeFile(dir / "half.m4a"); }), "half.m4a: "));
}

TEST_F(FfmpegDecodeTest, ParallelDecodingMatchesSequential) {
  TempDir dir("parallel");
  std::vector<std::string> sources;
  for (int i = 0; i < 6; ++i) {
    const auto wav = dir / ("u" + std::to_string(i) + ".wav");
    ASSERT_TRUE(WriteShorts(wav, Sine(8000 + 800 * i, 200.0 + 50 * i, 16000), 1, i % 2 ? 8000 : 16000));
    sources.push_back(wav.string());
    const auto m4a = dir / ("u" + std::to_string(i) + ".m4a");
    MakeM4a(wav, m4a);
    sources.push_back(m4a.string());
    sources.push_back("cat " + wav.string() + " |");
  }
  std::vector<std::vector<float>> sequential;
  for (const auto& s : sources) sequential.push_back(Decode(s).samples);
  std::vector<std::vector<float>> parallel(sources.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < sources.size(); i += 4) parallel[i] = Decode(sources[i]).samples;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(parallel, sequential);
}

}  // namespace
}  // namespace asv::audio
