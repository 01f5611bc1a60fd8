// data::BuildPcmStore and data::PcmStore: round trip of generated WAVs, resuming an interrupted
// build, skipped files, and the errors of a bad store.
#include "asvcpp/data/pcm_store.h"

#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "data_test_util.h"

namespace asv::data {
namespace {

namespace stdfs = std::filesystem;
using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;

// Integer-valued samples (a 16-bit WAV stores them exactly).
std::vector<float> Noise(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-20000, 20000);
  std::vector<float> s(n);
  for (auto& v : s) v = static_cast<float>(value(rng));
  return s;
}

std::string Bytes(const stdfs::path& file) { return fs::ReadFile(file); }

class PcmStoreTest : public ::testing::Test {
 protected:
  // `count` WAVs of 1000 + 137 * i samples at 16 kHz; entries in that order.
  std::vector<PcmStoreEntry> MakeWavs(int count) {
    std::vector<PcmStoreEntry> entries;
    for (int i = 0; i < count; ++i) {
      const stdfs::path wav = dir_ / "wav" / ("u" + std::to_string(i) + ".wav");
      samples_.push_back(Noise(1000 + 137 * static_cast<std::size_t>(i), static_cast<std::uint32_t>(i + 1)));
      audio::WriteWav(wav, samples_.back(), 16000);
      entries.push_back({"utt" + std::to_string(i), wav.string()});
    }
    return entries;
  }
  static PcmStoreOptions Quiet(int threads = 2, std::size_t chunk = 2) {
    PcmStoreOptions options;
    options.threads = threads;
    options.chunk_utterances = chunk;
    options.progress = base::ProgressMode::kSilent;
    return options;
  }
  TempDir dir_{::testing::UnitTest::GetInstance()->current_test_info()->name()};
  std::vector<std::vector<float>> samples_;
};

TEST_F(PcmStoreTest, RoundTripOfGeneratedWavsWithResampling) {
  auto entries = MakeWavs(5);
  // One source at 8 kHz: stored resampled to 16 kHz (twice the samples).
  const stdfs::path low = dir_ / "wav" / "low.wav";
  audio::WriteWav(low, Noise(800, 99), 8000);
  entries.push_back({"low", low.string()});

  const PcmStoreReport report = BuildPcmStore(entries, dir_ / "store", Quiet(3, 2));
  EXPECT_FALSE(report.already_complete);
  EXPECT_EQ(report.utterances, 6u);
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_EQ(report.resampled, 1u);

  const PcmStore store = PcmStore::Open(dir_ / "store");
  ASSERT_EQ(store.NumUtterances(), 6u);
  EXPECT_EQ(store.sample_rate(), 16000);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(store.Id(i), entries[i].id);
    ASSERT_EQ(store.NumSamples(i), static_cast<std::int64_t>(samples_[i].size()));
    std::vector<float> all(samples_[i].size());
    store.Read(i, 0, store.NumSamples(i), all.data());
    EXPECT_EQ(all, samples_[i]) << entries[i].id;
    std::vector<float> part(100);
    store.Read(i, 321, 100, part.data());
    EXPECT_EQ(part, std::vector<float>(samples_[i].begin() + 321, samples_[i].begin() + 421));
    total += store.NumSamples(i);
  }
  EXPECT_EQ(store.Id(5), "low");
  EXPECT_EQ(store.NumSamples(5), 1600);
  total += 1600;
  EXPECT_EQ(store.TotalSamples(), total);
  EXPECT_EQ(report.samples, total);
  EXPECT_EQ(store.Find("utt3"), std::optional<std::size_t>(3));
  EXPECT_EQ(store.Find("nope"), std::nullopt);
  // 2 bytes per sample, and the checksum file agrees with sha256 of the data.
  EXPECT_EQ(stdfs::file_size(dir_ / "store" / "pcm.bin"), static_cast<std::uintmax_t>(2 * total));
  EXPECT_TRUE(fs::VerifyFileChecksum(dir_ / "store" / "pcm.bin"));
  EXPECT_NO_THROW(store.VerifyData());
  EXPECT_FALSE(stdfs::exists(dir_ / "store" / "partial"));

  // Out-of-range reads are refused, not served from a neighbour.
  float x = 0;
  EXPECT_THROW(store.Read(0, 1000, 1, &x), std::out_of_range);
  EXPECT_THROW(store.Read(0, -1, 1, &x), std::out_of_range);
  EXPECT_THROW(store.Read(6, 0, 1, &x), std::out_of_range);
  EXPECT_THROW(store.Id(6), std::out_of_range);
  EXPECT_NO_THROW(store.Read(0, 1000, 0, &x));
}

TEST_F(PcmStoreTest, RerunOnACompleteStoreDoesNothingAndOtherEntriesRebuild) {
  const auto entries = MakeWavs(4);
  BuildPcmStore(entries, dir_ / "store", Quiet());
  const auto mtime = stdfs::last_write_time(dir_ / "store" / "pcm.bin");
  const std::string header = Bytes(dir_ / "store" / "header");

  const PcmStoreReport again = BuildPcmStore(entries, dir_ / "store", Quiet());
  EXPECT_TRUE(again.already_complete);
  EXPECT_EQ(again.utterances, 4u);
  EXPECT_EQ(stdfs::last_write_time(dir_ / "store" / "pcm.bin"), mtime);
  EXPECT_EQ(Bytes(dir_ / "store" / "header"), header);

  // Other entries (here: one fewer) build a new store in place of the old.
  const std::vector<PcmStoreEntry> fewer(entries.begin(), entries.begin() + 3);
  const PcmStoreReport rebuilt = BuildPcmStore(fewer, dir_ / "store", Quiet());
  EXPECT_FALSE(rebuilt.already_complete);
  EXPECT_EQ(PcmStore::Open(dir_ / "store").NumUtterances(), 3u);
  // So does another sample rate.
  PcmStoreOptions rate8k = Quiet();
  rate8k.sample_rate = 8000;
  EXPECT_FALSE(BuildPcmStore(fewer, dir_ / "store", rate8k).already_complete);
  EXPECT_EQ(PcmStore::Open(dir_ / "store").sample_rate(), 8000);
}

TEST_F(PcmStoreTest, InterruptedBuildResumesToTheBytesOfAnUninterruptedOne) {
  auto entries = MakeWavs(7);
  entries.insert(entries.begin() + 3, {"bad", (dir_ / "missing.wav").string()});
  BuildPcmStore(entries, dir_ / "whole", Quiet(1, 3));

  // Interrupted after the second commit (6 entries)...
  PcmStoreOptions failing = Quiet(2, 3);
  failing.after_commit = [](std::size_t committed) {
    if (committed == 6) throw std::runtime_error("simulated kill");
  };
  EXPECT_THROW(BuildPcmStore(entries, dir_ / "resumed", failing), std::runtime_error);
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(dir_ / "resumed"); }), "interrupted"));
  // ... and killed while writing the next chunk: bytes past the commit in every partial file.
  for (const char* name : {"pcm.bin", "index", "skipped"}) {
    std::ofstream(dir_ / "resumed" / "partial" / name, std::ios::app | std::ios::binary) << "garbage of a killed run";
  }

  std::vector<std::size_t> commits;
  PcmStoreOptions rerun = Quiet(3, 3);
  rerun.after_commit = [&](std::size_t committed) { commits.push_back(committed); };
  const PcmStoreReport report = BuildPcmStore(entries, dir_ / "resumed", rerun);
  EXPECT_EQ(report.resumed_entries, 6u);
  EXPECT_EQ(commits, (std::vector<std::size_t>{8}));  // only the rest was decoded
  EXPECT_EQ(report.utterances, 7u);
  ASSERT_EQ(report.skipped.size(), 1u);  // listed although skipped by the first run
  EXPECT_EQ(report.skipped[0].utterance, "bad");
  for (const char* name : {"pcm.bin", "pcm.bin.sha256", "index", "skipped_utterances", "header"}) {
    EXPECT_EQ(Bytes(dir_ / "resumed" / name), Bytes(dir_ / "whole" / name)) << name;
  }
  EXPECT_NO_THROW(PcmStore::Open(dir_ / "resumed").VerifyData());
}

TEST_F(PcmStoreTest, InterruptedAfterTheLastCommitOrWhilePuttingInPlaceFinishesOnRerun) {
  const auto entries = MakeWavs(4);
  BuildPcmStore(entries, dir_ / "whole", Quiet());
  PcmStoreOptions failing = Quiet();
  failing.after_commit = [](std::size_t committed) {
    if (committed == 4) throw std::runtime_error("simulated kill");
  };
  EXPECT_THROW(BuildPcmStore(entries, dir_ / "store", failing), std::runtime_error);
  EXPECT_FALSE(stdfs::exists(dir_ / "store" / "header"));
  const PcmStoreReport report = BuildPcmStore(entries, dir_ / "store", Quiet());
  EXPECT_EQ(report.resumed_entries, 4u);
  EXPECT_EQ(Bytes(dir_ / "store" / "pcm.bin"), Bytes(dir_ / "whole" / "pcm.bin"));
  EXPECT_EQ(Bytes(dir_ / "store" / "header"), Bytes(dir_ / "whole" / "header"));

  // A build stopped between moving the data into place and writing the header: pcm.bin already
  // moved, partial/ still holds the complete progress.
  EXPECT_THROW(BuildPcmStore(entries, dir_ / "store2", failing), std::runtime_error);
  BuildPcmStore(entries, dir_ / "store2", Quiet());  // complete now; redo the last step by hand:
  stdfs::create_directories(dir_ / "store2" / "partial");
  stdfs::remove(dir_ / "store2" / "header");
  stdfs::rename(dir_ / "store2" / "index", dir_ / "store2" / "partial" / "index");
  stdfs::rename(dir_ / "store2" / "skipped_utterances", dir_ / "store2" / "partial" / "skipped");
  const std::string progress = "asvcpp-pcm-store-progress 1\n" + [&] {
    // The progress a complete build writes, reconstructed from the header.
    std::string h = Bytes(dir_ / "whole" / "header");
    auto value = [&](const std::string& key) {
      const auto at = h.find("\n" + key + " ") + key.size() + 2;
      return h.substr(at, h.find('\n', at) - at);
    };
    return "entries_checksum " + value("entries_checksum") + "\nsample_rate 16000\ncommitted_entries 4\nutterances " +
           value("utterances") + "\nskipped 0\nsamples " + value("samples") + "\nclipped_samples 0\nindex_bytes " +
           std::to_string(stdfs::file_size(dir_ / "store2" / "partial" / "index")) +
           "\nskipped_bytes 0\ncomplete 1\ndata_checksum " + value("data_checksum") + "\nindex_checksum " +
           value("index_checksum") + "\nchunk_bytes " + value("chunk_bytes") + "\nchunks_checksum " +
           value("chunks_checksum") + "\n";
  }();
  fs::WriteFileAtomic(dir_ / "store2" / "partial" / "progress", progress);
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(dir_ / "store2"); }), "interrupted"));
  const PcmStoreReport finished = BuildPcmStore(entries, dir_ / "store2", Quiet());
  EXPECT_EQ(finished.resumed_entries, 4u);
  for (const char* name : {"pcm.bin", "index", "header"}) {
    EXPECT_EQ(Bytes(dir_ / "store2" / name), Bytes(dir_ / "whole" / name)) << name;
  }
  EXPECT_FALSE(stdfs::exists(dir_ / "store2" / "partial"));
}

TEST_F(PcmStoreTest, FilesThatFailToDecodeAreSkippedAndListed) {
  auto entries = MakeWavs(3);
  fs::WriteFileAtomic(dir_ / "garbage.wav", "this is not audio");
  fs::WriteFileAtomic(dir_ / "empty.wav", "");
  // A float WAV holding a NaN.
  const stdfs::path nan_wav = dir_ / "nan.wav";
  {
    SF_INFO info{};
    info.samplerate = 16000;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    SNDFILE* f = sf_open(nan_wav.c_str(), SFM_WRITE, &info);
    ASSERT_NE(f, nullptr);
    std::vector<float> v(400, 0.1f);
    v[123] = std::numeric_limits<float>::quiet_NaN();
    ASSERT_EQ(sf_writef_float(f, v.data(), 400), 400);
    sf_close(f);
  }
  entries.insert(entries.begin() + 1, {"missing", (dir_ / "missing.wav").string()});
  entries.push_back({"garbage", (dir_ / "garbage.wav").string()});
  entries.push_back({"empty", (dir_ / "empty.wav").string()});
  entries.push_back({"nan", nan_wav.string()});
  entries.push_back({"failing_pipe", "exit 3 |"});

  const PcmStoreReport report = BuildPcmStore(entries, dir_ / "store", Quiet());
  EXPECT_EQ(report.utterances, 3u);
  std::vector<std::string> skipped;
  for (const auto& s : report.skipped) skipped.push_back(s.utterance);
  EXPECT_EQ(skipped, (std::vector<std::string>{"missing", "garbage", "empty", "nan", "failing_pipe"}));
  EXPECT_TRUE(Contains(report.skipped[0].reason, "missing.wav"));
  EXPECT_TRUE(Contains(report.skipped[3].reason, "NaN"));
  const std::string listed = Bytes(dir_ / "store" / "skipped_utterances");
  EXPECT_TRUE(Contains(listed, "missing ")) << listed;
  EXPECT_TRUE(Contains(listed, "\nnan ")) << listed;
  const PcmStore store = PcmStore::Open(dir_ / "store");
  ASSERT_EQ(store.NumUtterances(), 3u);
  EXPECT_EQ(store.Id(1), "utt1");
  std::vector<float> all(samples_[1].size());
  store.Read(1, 0, store.NumSamples(1), all.data());
  EXPECT_EQ(all, samples_[1]);

  // Nothing usable at all is an error, and nothing is presented as a store.
  const std::vector<PcmStoreEntry> none = {{"missing", (dir_ / "missing.wav").string()}};
  EXPECT_THROW(BuildPcmStore(none, dir_ / "none", Quiet()), StageError);
  EXPECT_THROW(PcmStore::Open(dir_ / "none"), DataError);
}

TEST_F(PcmStoreTest, BadEntriesAndOptionsAreRefused) {
  const auto entries = MakeWavs(2);
  auto dup = entries;
  dup[1].id = dup[0].id;
  EXPECT_TRUE(Contains(ErrorOf([&] { BuildPcmStore(dup, dir_ / "s", Quiet()); }), "utt0' appears more than once"));
  auto spaced = entries;
  spaced[0].id = "a b";
  EXPECT_TRUE(Contains(ErrorOf([&] { BuildPcmStore(spaced, dir_ / "s", Quiet()); }), "whitespace"));
  EXPECT_THROW(BuildPcmStore({}, dir_ / "s", Quiet()), DataError);
  EXPECT_THROW(BuildPcmStore(entries, dir_ / "s", Quiet(0)), std::invalid_argument);
  EXPECT_THROW(BuildPcmStore(entries, dir_ / "s", Quiet(1, 0)), std::invalid_argument);
}

TEST_F(PcmStoreTest, ASecondBuildOfTheSameFolderIsRefusedWhileOneRuns) {
  const auto entries = MakeWavs(3);
  PcmStoreOptions nested = Quiet();
  std::string second_build_error;
  nested.after_commit = [&](std::size_t committed) {
    if (committed == 2) second_build_error = ErrorOf([&] { BuildPcmStore(entries, dir_ / "store", Quiet()); });
  };
  BuildPcmStore(entries, dir_ / "store", nested);
  EXPECT_TRUE(Contains(second_build_error, "another build")) << second_build_error;
  EXPECT_TRUE(Contains(second_build_error, (dir_ / "store").string())) << second_build_error;
  // The first build was not disturbed, and the lock is gone with it.
  EXPECT_EQ(PcmStore::Open(dir_ / "store").NumUtterances(), 3u);
  EXPECT_TRUE(BuildPcmStore(entries, dir_ / "store", Quiet()).already_complete);
}

TEST_F(PcmStoreTest, CorruptOrTruncatedStoresAreDataErrorsNamingTheFolder) {
  const auto entries = MakeWavs(3);
  const stdfs::path store = dir_ / "store";
  BuildPcmStore(entries, store, Quiet());
  const std::string data = Bytes(store / "pcm.bin");
  const std::string index = Bytes(store / "index");
  const std::string header = Bytes(store / "header");
  const auto restore = [&] {
    fs::WriteFileAtomic(store / "pcm.bin", data);
    fs::WriteFileAtomic(store / "index", index);
    fs::WriteFileAtomic(store / "header", header);
  };

  // Truncated data.
  fs::WriteFileAtomic(store / "pcm.bin", data.substr(0, data.size() - 2));
  std::string e = ErrorOf([&] { PcmStore::Open(store); });
  EXPECT_TRUE(Contains(e, store.string()) && Contains(e, "truncated")) << e;
  restore();

  // A flipped sample: Open does not read the data; VerifyData, and a read of its chunk, do.
  std::string flipped = data;
  flipped[data.size() / 2] ^= 0x10;
  fs::WriteFileAtomic(store / "pcm.bin", flipped);
  {
    const PcmStore opened = PcmStore::Open(store);
    e = ErrorOf([&] { opened.VerifyData(); });
    EXPECT_TRUE(Contains(e, store.string()) && Contains(e, "corrupt")) << e;
  }
  restore();

  // An edited index.
  std::string edited = index;
  edited[edited.find(' ') + 1] = '7';
  fs::WriteFileAtomic(store / "index", edited);
  e = ErrorOf([&] { PcmStore::Open(store); });
  EXPECT_TRUE(Contains(e, store.string()) && Contains(e, "index checksum")) << e;
  restore();

  // Headers: another version, another format, a missing key, no header at all.
  std::string v2 = header;
  v2.replace(0, v2.find('\n'), "asvcpp-pcm-store 2");
  fs::WriteFileAtomic(store / "header", v2);
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "version 2 is not supported"));
  std::string f32 = header;
  f32.replace(f32.find("int16le"), 7, "float32");
  fs::WriteFileAtomic(store / "header", f32);
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "sample_format 'float32'"));
  fs::WriteFileAtomic(store / "header", header.substr(0, header.find("samples")));
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "'samples' is missing"));
  fs::WriteFileAtomic(store / "header", "garbage\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), (store / "header").string()));
  stdfs::remove(store / "header");
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "not a PCM store"));
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(dir_ / "nowhere"); }), "nowhere"));
  restore();
  EXPECT_NO_THROW(PcmStore::Open(store).VerifyData());
}

TEST_F(PcmStoreTest, ChunkChecksumsCatchAFlippedByteOnTheFirstReadOfItsChunk) {
  const auto entries = MakeWavs(3);  // 1000, 1137 and 1274 samples: 6822 bytes
  const stdfs::path store = dir_ / "store";
  PcmStoreOptions options = Quiet();
  options.chunk_bytes = 1024;
  BuildPcmStore(entries, store, options);
  EXPECT_EQ(Bytes(store / "pcm.bin.chunks").size(), 7u * 65u);  // ceil(6822 / 1024) lines of 64 hex digits
  std::vector<float> out(1274);
  {
    const PcmStore clean = PcmStore::Open(store);
    EXPECT_EQ(clean.NumChunks(), 7);
    EXPECT_EQ(clean.VerifiedChunks(), 0);
    clean.Read(0, 0, 1000, out.data());  // bytes 0-1999: chunks 1 and 2
    EXPECT_EQ(clean.VerifiedChunks(), 2);
    for (std::size_t i = 0; i < 3; ++i) clean.Read(i, 0, clean.NumSamples(i), out.data());
    EXPECT_EQ(clean.VerifiedChunks(), 7);
  }
  std::string data = Bytes(store / "pcm.bin");
  data[2048 + 5] ^= 0x01;  // in chunk 3 (bytes 2048-3071), utterance 1 (bytes 2000-4273)
  fs::WriteFileAtomic(store / "pcm.bin", data);
  const PcmStore corrupt = PcmStore::Open(store);
  corrupt.Read(0, 0, 1000, out.data());  // chunks 1-2 are intact
  corrupt.Read(2, 0, 1274, out.data());  // chunks 5-7 too
  const std::string e = ErrorOf([&] { corrupt.Read(1, 30, 10, out.data()); });  // bytes 2060-2079
  EXPECT_TRUE(Contains(e, store.string() + ": corrupt PCM store: bytes 2048-3071 of pcm.bin (chunk 3 of 7, read "
                                           "for utterance utt1)"))
      << e;
  EXPECT_THROW(corrupt.Read(1, 30, 10, out.data()), DataError);  // still, on every read
}

TEST_F(PcmStoreTest, AStoreWithoutChunkChecksumsIsCheckedWholeAndGetsThemOnRerun) {
  const auto entries = MakeWavs(3);
  const stdfs::path store = dir_ / "store";
  BuildPcmStore(entries, store, Quiet());
  const std::string data = Bytes(store / "pcm.bin");
  const std::string header = Bytes(store / "header");
  const std::string chunks = Bytes(store / "pcm.bin.chunks");
  // As an older asvcpp wrote it: no chunk_bytes, chunks_checksum, pcm.bin.chunks.
  const std::string old_header = header.substr(0, header.find("chunk_bytes "));
  const auto make_old = [&] {
    fs::WriteFileAtomic(store / "header", old_header);
    stdfs::remove(store / "pcm.bin.chunks");
  };
  make_old();
  {
    const PcmStore opened = PcmStore::Open(store);  // checks all of pcm.bin
    EXPECT_EQ(opened.NumChunks(), 0);
  }
  std::string flipped = data;
  flipped[101] ^= 0x40;
  fs::WriteFileAtomic(store / "pcm.bin", flipped);
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "corrupt"));
  // Rerun of the build: a corrupt old store is built again...
  PcmStoreReport report = BuildPcmStore(entries, store, Quiet());
  EXPECT_FALSE(report.already_complete);
  EXPECT_EQ(Bytes(store / "pcm.bin"), data);
  EXPECT_EQ(Bytes(store / "header"), header);
  // ...an intact one only gets its chunk checksums.
  make_old();
  report = BuildPcmStore(entries, store, Quiet());
  EXPECT_TRUE(report.already_complete);
  EXPECT_EQ(Bytes(store / "header"), header);
  EXPECT_EQ(Bytes(store / "pcm.bin.chunks"), chunks);
  // An edited chunk list is refused when the store is opened.
  fs::WriteFileAtomic(store / "pcm.bin.chunks", (chunks[0] == '0' ? "1" : "0") + chunks.substr(1));
  EXPECT_TRUE(Contains(ErrorOf([&] { PcmStore::Open(store); }), "does not match the chunks checksum"));
}

TEST_F(PcmStoreTest, ConcurrentReadsAndMovesKeepTheData) {
  const auto entries = MakeWavs(6);
  BuildPcmStore(entries, dir_ / "store", Quiet());
  PcmStore opened = PcmStore::Open(dir_ / "store");
  const PcmStore store = std::move(opened);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<std::uint32_t>(t));
      std::vector<float> out(500);
      for (int k = 0; k < 2000; ++k) {
        const std::size_t i = rng() % store.NumUtterances();
        const std::int64_t start = static_cast<std::int64_t>(rng() % 500);
        store.Read(i, start, 500, out.data());
        if (!std::equal(out.begin(), out.end(), samples_[i].begin() + start)) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
  EXPECT_EQ(store.Find("utt5"), std::optional<std::size_t>(5));
}

}  // namespace
}  // namespace asv::data
