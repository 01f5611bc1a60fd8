#include "asvcpp/data/voxceleb.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <fstream>
#include <map>
#include <new>

#include "asvcpp/audio/audio_source.h"
#include "asvcpp/audio/decode.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/trial_list.h"
#include "tests/asvcpp/data/data_test_util.h"

// Every operator new of this test binary is counted (bytes held now and their peak), so that a
// test can bound the memory a function takes without timing or reading the process's RSS.
namespace {
std::atomic<std::size_t> g_held{0};  // Bytes (malloc_usable_size) held through operator new.
std::atomic<std::size_t> g_peak{0};
}  // namespace

void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t held = g_held.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  std::size_t peak = g_peak.load(std::memory_order_relaxed);
  while (held > peak && !g_peak.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_held.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace asv::data {
namespace {

using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;
using testing::Write;

void MakeWav(const std::filesystem::path& path, std::size_t samples) {
  audio::WriteWav(path, std::vector<float>(samples, 100.0f), 16000);
}

// <root>/wav/{id10001,id10002}/{vidA,vidB}/0000{1,2}.wav, created in reverse order so that
// directory listing order is unlikely to be sorted.
std::filesystem::path MakeVox1(const TempDir& dir) {
  const auto root = dir / "vox1";
  for (const char* spk : {"id10002", "id10001"}) {
    for (const char* video : {"vidB", "-vidA"}) {
      for (const char* file : {"00002.wav", "00001.wav"}) {
        MakeWav(root / "wav" / spk / video / file, 160);
      }
    }
  }
  Write(root / "wav" / "id10001" / "-vidA" / "notes.txt", "not audio\n");
  Write(root / "wav" / "README", "stray file at speaker level\n");
  return root;
}

TEST(VoxCelebTest, PrepareVoxCeleb1WritesSortedListsAndConvertsTrials) {
  TempDir dir("vox1");
  const auto corpus = MakeVox1(dir);
  Write(corpus / "veri_test.txt",
        "1 id10001/-vidA/00001.wav id10001/vidB/00002.wav\n"
        "0 id10001/-vidA/00001.wav id10002/vidB/00001.wav\n");
  Write(corpus / "list_test_hard2.txt",
        "id10002--vidA-00002 id10001-vidB-00001 0\nid10002--vidA-00002 id10002-vidB-00001 1\n");
  const auto root = dir / "out" / "datasets";
  const PreparedDataset ds = PrepareVoxCeleb1(corpus, root);
  EXPECT_EQ(ds.name, "voxceleb1");
  EXPECT_EQ(ds.list_folder, ListFolder(root, "voxceleb1"));
  EXPECT_EQ(ds.utterances, 8u);
  EXPECT_EQ(ds.speakers, 2u);
  EXPECT_EQ(ds.trial_lists, (std::vector<std::string>{"veri_test.txt", "list_test_hard2.txt"}));
  EXPECT_EQ(ds.trials, 4u);

  const std::string wav_scp = fs::ReadFile(ds.list_folder / "wav.scp");
  const std::string abs = (corpus / "wav").string();
  EXPECT_EQ(wav_scp.substr(0, wav_scp.find('\n')),
            "id10001--vidA-00001 " + abs + "/id10001/-vidA/00001.wav");
  EXPECT_EQ(fs::ReadFile(ds.list_folder / "utt2spk").substr(0, 28), "id10001--vidA-00001 id10001\n");
  EXPECT_EQ(fs::ReadFile(ds.list_folder / "spk2utt"),
            "id10001 id10001--vidA-00001 id10001--vidA-00002 id10001-vidB-00001 id10001-vidB-00002\n"
            "id10002 id10002--vidA-00001 id10002--vidA-00002 id10002-vidB-00001 id10002-vidB-00002\n");
  EXPECT_EQ(fs::ReadFile(ds.list_folder / "veri_test.txt"),
            "id10001--vidA-00001 id10001-vidB-00002 1\n"
            "id10001--vidA-00001 id10002-vidB-00001 0\n");
  EXPECT_EQ(ReadTrialList(ds.list_folder / "list_test_hard2.txt").trials.size(), 2u);
  const DataDir data = DataDir::Load(ds.list_folder);
  EXPECT_EQ(data.wav_scp.size(), 8u);

  // Idempotent: a second run leaves identical files.
  PrepareVoxCeleb1(corpus, root);
  EXPECT_EQ(fs::ReadFile(ds.list_folder / "wav.scp"), wav_scp);

  // Trial lists under other names are prepared when asked for (a recipe's trial_lists setting);
  // names that are not in the corpus are not an error here.
  Write(corpus / "my_trials.txt",
        "1 id10002/vidB/00001.wav id10002/-vidA/00002.wav\n0 id10002/vidB/00001.wav id10001/vidB/00002.wav\n");
  VoxCelebOptions options;
  options.trial_list_files = {"my_trials.txt", "veri_test.txt", "not_there.txt"};
  const PreparedDataset more = PrepareVoxCeleb1(corpus, root, options);
  EXPECT_EQ(more.trial_lists, (std::vector<std::string>{"veri_test.txt", "list_test_hard2.txt", "my_trials.txt"}));
  EXPECT_EQ(fs::ReadFile(ds.list_folder / "my_trials.txt"),
            "id10002-vidB-00001 id10002--vidA-00002 1\nid10002-vidB-00001 id10001-vidB-00002 0\n");
}

TEST(VoxCelebTest, PrepareVoxCeleb1Errors) {
  TempDir dir("vox1_errors");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1(dir / "nothing", dir / "out"); }),
                       "nothing/wav: VoxCeleb1 audio folder does not exist"));
  std::filesystem::create_directories(dir / "empty" / "wav" / "id1" / "v");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1(dir / "empty", dir / "out"); }),
                       "empty/wav: no .wav files found"));

  const auto corpus = MakeVox1(dir);
  Write(corpus / "veri_test.txt", "1 id10001/-vidA/00001.wav id10001/vidB/00002.wav\n"
                                  "1 id10001/-vidA/00001.wav id10009/zz/00001.wav\n");
  const std::string message = ErrorOf([&] { PrepareVoxCeleb1(corpus, dir / "out"); });
  EXPECT_TRUE(Contains(message, "veri_test.txt:2: unknown utterance 'id10009-zz-00001'")) << message;
  VoxCelebOptions lenient;
  lenient.allow_unknown_trial_utterances = true;
  // Both trials are targets: no EER can be computed on the list.
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1(corpus, dir / "out", lenient); }),
                       "veri_test.txt: 2 target, 0 non-target trials: a trial list needs both"));
  Write(corpus / "veri_test.txt", "1 id10001/-vidA/00001.wav id10001/vidB/00002.wav\n"
                                  "0 id10001/-vidA/00001.wav id10009/zz/00001.wav\n");
  EXPECT_EQ(PrepareVoxCeleb1(corpus, dir / "out", lenient).trials, 2u);

  MakeWav(corpus / "wav" / "id10001" / "vidB" / "00001.x.wav", 160);
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1(corpus, dir / "out", lenient); }),
                       "both map to utterance id 'id10001-vidB-00001'"));
}

// Writes `values` (int16 value range) as a 16 kHz WAV file and returns them.
std::vector<float> MakeWavOf(const std::filesystem::path& path, std::vector<float> values) {
  audio::WriteWav(path, values, 16000);
  return values;
}

std::vector<float> Concatenated(const std::vector<std::vector<float>>& parts) {
  std::vector<float> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

TEST(VoxCelebTest, PrepareVoxCeleb1CatConcatenatesTheFilesOfEachVideo) {
  TempDir dir("vox1_cat");
  const auto corpus = dir / "vox1";
  const auto wav = corpus / "wav";
  // Created in reverse order so that directory listing order is unlikely to be sorted; every
  // file has samples of its own, so that the decoded concatenation shows the order of its parts.
  const auto b2_3 = MakeWavOf(wav / "id10002/vidB/00003.wav", {7, 8, 9, -7});
  const auto b2_1 = MakeWavOf(wav / "id10002/vidB/00001.wav", {-300, 300});
  const auto b1_1 = MakeWavOf(wav / "id10001/vidB/00001.wav", {42, 43, 44});
  const auto a1_2 = MakeWavOf(wav / "id10001/-vidA/00002.wav", {10, 20});
  const auto a1_10 = MakeWavOf(wav / "id10001/-vidA/00010.wav", {-32768, 32767, 0});
  const auto a1_1 = MakeWavOf(wav / "id10001/-vidA/00001.wav", {1, 2, 3, 4, 5});
  Write(wav / "id10001/-vidA/notes.txt", "not audio\n");
  Write(wav / "README", "stray file at speaker level\n");
  std::filesystem::create_directories(wav / "id10002/no_audio");  // a video without .wav files
  Write(corpus / "veri_test.txt", "1 id10001/-vidA/00001.wav id10001/vidB/00001.wav\n");

  const auto root = dir / "out" / "datasets";
  const auto folder = ListFolder(root, "voxceleb1_cat");
  const auto lists = folder / "cat";
  Write(lists / "old-video.txt", "file '/x.wav'\n");  // a stale list from an earlier run
  Write(lists / "keep.lst", "not a list\n");

  const PreparedDataset ds = PrepareVoxCeleb1Cat(corpus, root);
  EXPECT_EQ(ds.name, "voxceleb1_cat");
  EXPECT_EQ(ds.list_folder, folder);
  EXPECT_EQ(ds.utterances, 3u);
  EXPECT_EQ(ds.speakers, 2u);
  EXPECT_TRUE(ds.trial_lists.empty());
  EXPECT_EQ(ds.trials, 0u);
  EXPECT_FALSE(std::filesystem::exists(folder / "veri_test.txt"));

  const std::string wav_scp = fs::ReadFile(folder / "wav.scp");
  EXPECT_EQ(wav_scp, "id10001--vidA cat:" + (lists / "id10001--vidA.txt").string() + "\n" +
                         "id10001-vidB cat:" + (lists / "id10001-vidB.txt").string() + "\n" +
                         "id10002-vidB cat:" + (lists / "id10002-vidB.txt").string() + "\n");
  EXPECT_EQ(fs::ReadFile(folder / "utt2spk"), "id10001--vidA id10001\nid10001-vidB id10001\nid10002-vidB id10002\n");
  EXPECT_EQ(fs::ReadFile(folder / "spk2utt"), "id10001 id10001--vidA id10001-vidB\nid10002 id10002-vidB\n");
  const DataDir data = DataDir::Load(folder);
  EXPECT_EQ(data.wav_scp.size(), 3u);

  // Each list names its video's .wav files in sorted order, with absolute paths.
  const std::string a = (wav / "id10001/-vidA").string();
  EXPECT_EQ(fs::ReadFile(lists / "id10001--vidA.txt"),
            "file '" + a + "/00001.wav'\nfile '" + a + "/00002.wav'\nfile '" + a + "/00010.wav'\n");
  EXPECT_EQ(audio::ReadConcatList(lists / "id10002-vidB.txt"),
            (std::vector<std::filesystem::path>{wav / "id10002/vidB/00001.wav", wav / "id10002/vidB/00003.wav"}));
  EXPECT_EQ(audio::ReadConcatList(lists / "id10001-vidB.txt"),
            (std::vector<std::filesystem::path>{wav / "id10001/vidB/00001.wav"}));
  EXPECT_FALSE(std::filesystem::exists(lists / "old-video.txt"));
  EXPECT_TRUE(std::filesystem::exists(lists / "keep.lst"));  // only .txt files are lists
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(lists)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"id10001--vidA.txt", "id10001-vidB.txt", "id10002-vidB.txt", "keep.lst"}));

  // The cat: utterance decodes to exactly the samples of its files, one after another.
  const audio::Audio a1 = audio::Decode(data.wav_scp.at("id10001--vidA"));
  EXPECT_EQ(a1.samples, Concatenated({a1_1, a1_2, a1_10}));
  EXPECT_EQ(a1.samples.size(), 10u);
  EXPECT_EQ(a1.sample_rate, 16000);
  EXPECT_FALSE(a1.resampled);
  EXPECT_EQ(audio::Decode(data.wav_scp.at("id10002-vidB")).samples, Concatenated({b2_1, b2_3}));
  EXPECT_EQ(audio::Decode(data.wav_scp.at("id10001-vidB")).samples, b1_1);

  // Re-running on the same corpus rewrites the same files.
  PrepareVoxCeleb1Cat(corpus, root);
  EXPECT_EQ(fs::ReadFile(folder / "wav.scp"), wav_scp);
  EXPECT_EQ(fs::ReadFile(lists / "id10001--vidA.txt"),
            "file '" + a + "/00001.wav'\nfile '" + a + "/00002.wav'\nfile '" + a + "/00010.wav'\n");

  // A video gone and a file added: its list is deleted, the other list gets the new file. Per-file
  // ids that coincide (00001.wav, 00001.x.wav) are no error here: both files are parts.
  std::filesystem::remove_all(wav / "id10001/vidB");
  const auto b2_1x = MakeWavOf(wav / "id10002/vidB/00001.x.wav", {555});
  const PreparedDataset again = PrepareVoxCeleb1Cat(corpus, root);
  EXPECT_EQ(again.utterances, 2u);
  EXPECT_EQ(again.speakers, 2u);
  EXPECT_FALSE(std::filesystem::exists(lists / "id10001-vidB.txt"));
  EXPECT_EQ(fs::ReadFile(folder / "wav.scp"), "id10001--vidA cat:" + (lists / "id10001--vidA.txt").string() + "\n" +
                                                  "id10002-vidB cat:" + (lists / "id10002-vidB.txt").string() + "\n");
  EXPECT_EQ(fs::ReadFile(folder / "spk2utt"), "id10001 id10001--vidA\nid10002 id10002-vidB\n");
  EXPECT_EQ(audio::ReadConcatList(lists / "id10002-vidB.txt"),
            (std::vector<std::filesystem::path>{wav / "id10002/vidB/00001.wav", wav / "id10002/vidB/00001.x.wav",
                                                wav / "id10002/vidB/00003.wav"}));
  EXPECT_EQ(audio::Decode("cat:" + (lists / "id10002-vidB.txt").string()).samples,
            Concatenated({b2_1, b2_1x, b2_3}));
}

TEST(VoxCelebTest, PrepareVoxCeleb1CatErrors) {
  TempDir dir("vox1_cat_errors");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1Cat(dir / "nothing", dir / "out"); }),
                       "nothing/wav: VoxCeleb1 audio folder does not exist"));
  std::filesystem::create_directories(dir / "empty" / "wav" / "id1" / "v");
  Write(dir / "empty" / "wav" / "id1" / "v" / "a.flac", "x");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb1Cat(dir / "empty", dir / "out"); }),
                       "empty/wav: no .wav files found"));
  EXPECT_FALSE(std::filesystem::exists(ListFolder(dir / "out", "voxceleb1_cat")));
}

TEST(VoxCelebTest, PrepareVoxCeleb2WritesPerFileAndPerVideoLists) {
  TempDir dir("vox2");
  const auto corpus = dir / "vox2";
  // Content does not matter for preparation; decoding is tested with the demo corpus.
  for (const char* f : {"dev/aac/id00012/vid2/00002.m4a", "dev/aac/id00012/vid2/00001.m4a",
                        "dev/aac/id00012/vid1/00001.m4a", "dev/aac/id00015/v/00003.m4a",
                        "test/aac/id09999/t/00001.m4a", "dev/aac/id00012/vid1/skip.txt"}) {
    Write(corpus / f, "x");
  }
  const auto root = dir / "out" / "datasets";
  // A stale list from an earlier run of another corpus.
  Write(ListFolder(root, "voxceleb2_cat") / "cat" / "old-video.txt", "file '/x.m4a'\n");
  const std::vector<PreparedDataset> ds = PrepareVoxCeleb2(corpus, root);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].name, "voxceleb2");
  EXPECT_EQ(ds[0].utterances, 5u);
  EXPECT_EQ(ds[0].speakers, 3u);
  EXPECT_EQ(ds[1].name, "voxceleb2_cat");
  EXPECT_EQ(ds[1].utterances, 4u);

  const DataDir single = DataDir::Load(ds[0].list_folder);
  EXPECT_EQ(single.wav_scp.at("id00012-vid2-00001"), (corpus / "dev/aac/id00012/vid2/00001.m4a").string());
  EXPECT_EQ(single.utt2spk.at("id09999-t-00001"), "id09999");
  EXPECT_EQ(audio::AudioSource::Parse(single.wav_scp.begin()->second).kind, audio::AudioSource::Kind::kFile);

  const DataDir cat = DataDir::Load(ds[1].list_folder);
  const auto list_path = ds[1].list_folder / "cat" / "id00012-vid2.txt";
  EXPECT_EQ(cat.wav_scp.at("id00012-vid2"), "cat:" + list_path.string());
  EXPECT_EQ(cat.utt2spk.at("id00012-vid2"), "id00012");
  EXPECT_EQ(audio::ReadConcatList(list_path),
            (std::vector<std::filesystem::path>{corpus / "dev/aac/id00012/vid2/00001.m4a",
                                                corpus / "dev/aac/id00012/vid2/00002.m4a"}));
  EXPECT_FALSE(std::filesystem::exists(ListFolder(root, "voxceleb2_cat") / "cat" / "old-video.txt"));
  EXPECT_EQ(fs::ReadFile(ds[1].list_folder / "spk2utt"),
            "id00012 id00012-vid1 id00012-vid2\nid00015 id00015-v\nid09999 id09999-t\n");
}

TEST(VoxCelebTest, PrepareVoxCeleb2SyncsTheConcatenationListsTogether) {
  // VoxCeleb2 has 150,480 videos: one fsync per concatenation list took minutes. The lists are
  // synced in batches, so the number of syncs does not grow with the videos (the six list files
  // voxceleb2 and voxceleb2_cat's wav.scp, utt2spk and spk2utt are synced one by one).
  TempDir dir("vox2_syncs");
  const auto corpus = dir / "vox2";
  constexpr int kVideos = 100;
  for (int v = 0; v < kVideos; ++v) {
    const auto video = corpus / "dev/aac" / ("id0" + std::to_string(v % 7)) / ("v" + std::to_string(v));
    std::filesystem::create_directories(video);
    std::ofstream(video / "00001.m4a") << "x";  // no fsync: the test counts the preparation's syncs
  }
  const std::int64_t syncs_before = fs::SyncCalls();
  const std::vector<PreparedDataset> ds = PrepareVoxCeleb2(corpus, dir / "out" / "datasets");
  EXPECT_LE(fs::SyncCalls() - syncs_before, 6 + 1);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[1].utterances, static_cast<std::size_t>(kVideos));
  const auto list = ds[1].list_folder / "cat" / "id03-v10.txt";
  EXPECT_EQ(audio::ReadConcatList(list),
            (std::vector<std::filesystem::path>{corpus / "dev/aac/id03/v10/00001.m4a"}));
}

// The lists as the straightforward preparation writes them: every file's id, path and speaker in
// sorted maps (DataDir), one concatenation list per "<speaker>-<video>". The preparation keeps
// compact records instead; its files must be byte for byte these.
struct ReferenceLists {
  DataDir per_file, cat;
  std::map<std::string, std::string> cat_lists;  // file name -> contents
};

ReferenceLists Reference(const std::vector<std::filesystem::path>& roots, const std::string& extension,
                         const std::filesystem::path& cat_folder) {
  const auto sorted = [](const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().filename().string()[0] != '.') out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  ReferenceLists r;
  std::map<std::string, std::pair<std::string, std::vector<std::filesystem::path>>> videos;
  for (const auto& root : roots) {
    for (const auto& spk : sorted(root)) {
      if (!std::filesystem::is_directory(spk)) continue;
      for (const auto& video : sorted(spk)) {
        if (!std::filesystem::is_directory(video)) continue;
        for (const auto& file : sorted(video)) {
          if (!std::filesystem::is_regular_file(file) || file.extension() != extension) continue;
          const std::string s = spk.filename().string(), v = video.filename().string();
          const std::string name = file.filename().string();
          const std::string id = s + "-" + v + "-" + name.substr(0, name.find('.'));
          r.per_file.wav_scp[id] = file.string();
          r.per_file.utt2spk[id] = s;
          auto& cat = videos[s + "-" + v];
          cat.first = s;
          cat.second.push_back(file);
        }
      }
    }
  }
  for (const auto& [id, video] : videos) {
    r.cat.wav_scp[id] = "cat:" + (cat_folder / (id + ".txt")).string();
    r.cat.utt2spk[id] = video.first;
    r.cat_lists[id + ".txt"] = audio::ConcatListText(video.second);
  }
  return r;
}

void ExpectSameLists(const DataDir& reference, const std::filesystem::path& folder) {
  const TempDir expected("vox_expected");
  reference.Save(expected.path());
  for (const char* file : {"wav.scp", "utt2spk", "spk2utt"}) {
    EXPECT_EQ(fs::ReadFile(folder / file), fs::ReadFile(expected / file)) << folder / file;
  }
}

// The concatenation lists in `cat_folder` are exactly those of `reference`, byte for byte.
void ExpectSameCatLists(const ReferenceLists& reference, const std::filesystem::path& cat_folder) {
  std::size_t lists = 0;
  for (const auto& e : std::filesystem::directory_iterator(cat_folder)) {
    ++lists;
    const auto it = reference.cat_lists.find(e.path().filename().string());
    ASSERT_NE(it, reference.cat_lists.end()) << e.path();
    EXPECT_EQ(fs::ReadFile(e.path()), it->second) << e.path();
  }
  EXPECT_EQ(lists, reference.cat_lists.size());
}

// Names where id order and walk order differ ("a-b" sorts before "a-vid" as an id, after "a" as
// a speaker folder), ids of different speakers that join to one "<speaker>-<video>", a video in
// both dev and test, file names with several dots, a speaker and a video without files; for
// VoxCeleb1 and voxceleb1_cat too.
TEST(VoxCelebTest, ListsAreByteForByteThoseOfTheSortedTables) {
  TempDir dir("vox_lists");
  const auto vox2 = dir / "vox2";
  for (const char* f : {"dev/aac/a/vid/00001.m4a", "dev/aac/a/vid/00002.x.m4a", "dev/aac/a-b/vid/00001.m4a",
                        "dev/aac/a/b-vid/00003.m4a", "dev/aac/a_c/zz/00001.m4a", "dev/aac/id2/v/00001.m4a",
                        "test/aac/id2/v/00003.m4a", "test/aac/id3/w/00001.m4a", "dev/aac/a/vid/notes.txt"}) {
    Write(vox2 / f, "x");
  }
  std::filesystem::create_directories(vox2 / "dev/aac/empty/none");
  std::filesystem::create_directories(vox2 / "dev/aac/a/nothing");
  const auto root = dir / "out" / "datasets";
  const std::vector<PreparedDataset> ds = PrepareVoxCeleb2(vox2, root);
  ASSERT_EQ(ds.size(), 2u);
  const ReferenceLists r =
      Reference({vox2 / "dev/aac", vox2 / "test/aac"}, ".m4a", ds[1].list_folder / "cat");
  ExpectSameLists(r.per_file, ds[0].list_folder);
  ExpectSameLists(r.cat, ds[1].list_folder);
  EXPECT_EQ(ds[0].utterances, r.per_file.wav_scp.size());
  EXPECT_EQ(ds[0].speakers, MakeSpk2Utt(r.per_file.utt2spk).size());
  EXPECT_EQ(ds[1].utterances, r.cat.wav_scp.size());
  ExpectSameCatLists(r, ds[1].list_folder / "cat");
  EXPECT_EQ(r.cat.utt2spk.at("a-b-vid"), "a-b");  // two videos, the speaker of the last one

  const auto vox1 = dir / "vox1";
  for (const char* f : {"wav/a/vid/00001.wav", "wav/a-b/vid/00001.wav", "wav/a/b-vid/00002.wav", "wav/a_c/z/1.2.wav"}) {
    Write(vox1 / f, "x");
  }
  const PreparedDataset one = PrepareVoxCeleb1(vox1, root);
  ExpectSameLists(Reference({vox1 / "wav"}, ".wav", {}).per_file, one.list_folder);
  EXPECT_EQ(one.utterances, 4u);
  EXPECT_EQ(one.speakers, 3u);
  const PreparedDataset one_cat = PrepareVoxCeleb1Cat(vox1, root);
  const ReferenceLists r1 = Reference({vox1 / "wav"}, ".wav", one_cat.list_folder / "cat");
  ExpectSameLists(r1.cat, one_cat.list_folder);
  EXPECT_EQ(one_cat.utterances, 3u);  // a/b-vid and a-b/vid are one utterance "a-b-vid"
  EXPECT_EQ(one_cat.speakers, 3u);
  EXPECT_EQ(r1.cat.utt2spk.at("a-b-vid"), "a-b");
  ExpectSameCatLists(r1, one_cat.list_folder / "cat");
}

// The preparation's memory per file (VoxCeleb1+2 has 1.28 M files): a record per file of
// std::strings and a path, then the same strings in sorted maps, took ~1.8 KB per file, 2.3 GB at
// full size. Bytes held at the peak of PrepareVoxCeleb2, per file, on 3,000 files of 300 videos
// with VoxCeleb's names (paths as long as the real ones); the bound leaves room for the
// allocator's rounding and for the batch of concatenation lists, which does not grow with the corpus.
TEST(VoxCelebTest, PreparationHoldsLittleMemoryPerFile) {
  TempDir dir("vox2_memory");
  const auto corpus = dir / "vox2";
  constexpr int kVideos = 300, kFilesPerVideo = 10;
  for (int v = 0; v < kVideos; ++v) {
    const auto video = corpus / "dev/aac" / fmt::format("id{:05d}", v % 60) / fmt::format("{:011d}", v * 7919);
    std::filesystem::create_directories(video);
    for (int f = 1; f <= kFilesPerVideo; ++f) std::ofstream(video / fmt::format("{:05d}.m4a", f));
  }
  const std::size_t held_before = g_held.load();
  g_peak = held_before;
  const std::vector<PreparedDataset> ds = PrepareVoxCeleb2(corpus, dir / "out");
  const std::size_t peak = g_peak - held_before;
  ASSERT_EQ(ds[0].utterances, static_cast<std::size_t>(kVideos * kFilesPerVideo));
  EXPECT_LT(peak / ds[0].utterances, 600u) << peak << " bytes at the peak";
}

TEST(VoxCelebTest, PrepareVoxCeleb2Errors) {
  TempDir dir("vox2_errors");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb2(dir / "none", dir / "out"); }),
                       "neither dev/aac nor test/aac exists"));
  std::filesystem::create_directories(dir / "empty" / "dev" / "aac" / "id1");
  EXPECT_TRUE(Contains(ErrorOf([&] { PrepareVoxCeleb2(dir / "empty", dir / "out"); }), "no .m4a files found"));
}

}  // namespace
}  // namespace asv::data
