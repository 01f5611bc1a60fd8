#include "asvcpp/data/voxceleb.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "asvcpp/audio/audio_source.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/trial_list.h"

namespace asv::data {
namespace {

namespace stdfs = std::filesystem;

// Concatenation lists written per file-system sync (bounds the memory of a batch: VoxCeleb2's
// lists hold ~1 KB each).
constexpr std::size_t kCatListsPerSync = 4096;

enum class EntryType { kDirectory, kFile };

// Entries of `dir` of the given type, hidden names skipped, sorted by name (byte order).
std::vector<stdfs::path> SortedEntries(const stdfs::path& dir, EntryType type,
                                       std::string_view extension = {}) {
  std::vector<stdfs::path> out;
  std::error_code ec;
  stdfs::directory_iterator it(dir, ec);
  if (ec) throw DataError(fmt::format("{}: cannot list folder: {}", dir.string(), ec.message()));
  for (const stdfs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    const bool is_dir = entry.is_directory(ec);
    if (type == EntryType::kDirectory ? !is_dir : (is_dir || !entry.is_regular_file(ec))) continue;
    if (!extension.empty() && entry.path().extension() != extension) continue;
    out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end(), [](const stdfs::path& a, const stdfs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return out;
}

std::string FileId(const stdfs::path& file) {
  const std::string name = file.filename().string();
  return name.substr(0, name.find('.'));
}

stdfs::path Absolute(const stdfs::path& p) {
  std::error_code ec;
  stdfs::path abs = stdfs::absolute(p, ec);
  return (ec ? p : abs).lexically_normal();
}

struct AudioFile {
  std::string speaker;
  std::string video;
  std::string utt;
  stdfs::path path;
};

// Walks `<root>/<spk>/<video>/*<extension>` in sorted order.
void Walk(const stdfs::path& root, std::string_view extension, std::vector<AudioFile>& out) {
  for (const stdfs::path& spk : SortedEntries(root, EntryType::kDirectory)) {
    for (const stdfs::path& video : SortedEntries(spk, EntryType::kDirectory)) {
      for (const stdfs::path& file : SortedEntries(video, EntryType::kFile, extension)) {
        const std::string s = spk.filename().string(), v = video.filename().string();
        out.push_back({s, v, fmt::format("{}-{}-{}", s, v, FileId(file)), file});
      }
    }
  }
}

void CheckUniqueIds(const std::vector<AudioFile>& files) {
  std::map<std::string, const AudioFile*> seen;
  for (const AudioFile& f : files) {
    const auto [it, inserted] = seen.emplace(f.utt, &f);
    if (!inserted) {
      throw DataError(fmt::format("{} and {} both map to utterance id '{}'",
                                  it->second->path.string(), f.path.string(), f.utt));
    }
  }
}

}  // namespace

PreparedDataset PrepareVoxCeleb1(const stdfs::path& corpus, const stdfs::path& dataset_root,
                                 const VoxCelebOptions& options) {
  const stdfs::path wav_root = Absolute(corpus) / "wav";
  std::error_code ec;
  if (!stdfs::is_directory(wav_root, ec)) {
    throw DataError(fmt::format("{}: VoxCeleb1 audio folder does not exist (expected "
                                "<voxceleb1>/wav/<speaker>/<video>/<file>.wav)",
                                wav_root.string()));
  }
  std::vector<AudioFile> files;
  Walk(wav_root, ".wav", files);
  if (files.empty()) {
    throw DataError(fmt::format("{}: no .wav files found under <speaker>/<video>/ folders",
                                wav_root.string()));
  }
  CheckUniqueIds(files);

  PreparedDataset result;
  result.name = "voxceleb1";
  result.list_folder = ListFolder(Absolute(dataset_root), result.name);
  DataDir data;
  for (const AudioFile& f : files) {
    data.wav_scp[f.utt] = f.path.string();
    data.utt2spk[f.utt] = f.speaker;
  }
  data.Save(result.list_folder);
  result.utterances = data.utt2spk.size();
  result.speakers = MakeSpk2Utt(data.utt2spk).size();

  const auto is_known = [&](const std::string& id) { return data.wav_scp.count(id) > 0; };
  std::vector<std::string> list_files(kVoxCeleb1TrialLists.begin(), kVoxCeleb1TrialLists.end());
  for (const std::string& file : options.trial_list_files) {
    if (std::find(list_files.begin(), list_files.end(), file) == list_files.end()) list_files.push_back(file);
  }
  for (const std::string& name : list_files) {
    const stdfs::path source = Absolute(corpus) / std::string(name);
    if (!stdfs::is_regular_file(source, ec)) continue;
    const stdfs::path target = result.list_folder / name;
    const TrialList list = DetectTrialListFormat(source) == TrialListFormat::kVoxCelebOfficial
                               ? ReadVoxCelebTrialList(source)
                               : ReadTrialList(source);
    if (options.allow_unknown_trial_utterances) {
      const auto unknown = FindUnknownUtterances(list, is_known);
      if (!unknown.empty()) {
        ASV_LOG(Warning, "{}: {} utterances not in voxceleb1 (first: line {}, '{}'); kept",
                source.string(), unknown.size(), unknown.front().line, unknown.front().id);
      }
    } else {
      CheckTrialUtterances(list, result.name, is_known);
    }
    WriteTrialList(target, list);
    result.trial_lists.push_back(name);
    result.trials += list.trials.size();
  }
  if (result.trial_lists.empty()) {
    ASV_LOG(Warning, "{}: no VoxCeleb1 trial list (veri_test.txt, veri_test2.txt, ...) found; "
                     "put the official lists there to evaluate on them",
            Absolute(corpus).string());
  }
  ASV_LOG(Info, "voxceleb1: {} utterances of {} speakers, {} trial list(s) with {} trials -> {}",
          result.utterances, result.speakers, result.trial_lists.size(), result.trials,
          result.list_folder.string());
  return result;
}

std::vector<PreparedDataset> PrepareVoxCeleb2(const stdfs::path& corpus, const stdfs::path& dataset_root) {
  const stdfs::path root = Absolute(corpus);
  std::vector<AudioFile> files;
  bool any_folder = false;
  std::error_code ec;
  for (const char* part : {"dev", "test"}) {
    const stdfs::path aac = root / part / "aac";
    if (!stdfs::is_directory(aac, ec)) continue;
    any_folder = true;
    Walk(aac, ".m4a", files);
  }
  if (!any_folder) {
    throw DataError(fmt::format("{}: neither dev/aac nor test/aac exists (expected "
                                "<voxceleb2>/{{dev,test}}/aac/<speaker>/<video>/<file>.m4a)",
                                root.string()));
  }
  if (files.empty()) {
    throw DataError(fmt::format("{}: no .m4a files found under {{dev,test}}/aac/<speaker>/<video>/",
                                root.string()));
  }
  CheckUniqueIds(files);
  const stdfs::path abs_root = Absolute(dataset_root);

  PreparedDataset single;
  single.name = "voxceleb2";
  single.list_folder = ListFolder(abs_root, single.name);
  DataDir per_file;
  // (speaker, video) -> files, in walk order (sorted within a video).
  std::map<std::string, std::pair<std::string, std::vector<stdfs::path>>> videos;
  for (const AudioFile& f : files) {
    per_file.wav_scp[f.utt] = f.path.string();
    per_file.utt2spk[f.utt] = f.speaker;
    auto& video = videos[fmt::format("{}-{}", f.speaker, f.video)];
    video.first = f.speaker;
    video.second.push_back(f.path);
  }
  per_file.Save(single.list_folder);
  single.utterances = per_file.utt2spk.size();
  single.speakers = MakeSpk2Utt(per_file.utt2spk).size();

  PreparedDataset cat;
  cat.name = "voxceleb2_cat";
  cat.list_folder = ListFolder(abs_root, cat.name);
  const stdfs::path cat_folder = cat.list_folder / "cat";
  DataDir concatenated;
  std::set<std::string> written;
  // The lists are written in batches with one file-system sync per batch (fs::WriteFilesAtomic):
  // an fsync per list took ~4 ms, 10 minutes for VoxCeleb2's 150,480 videos.
  std::vector<std::pair<stdfs::path, std::string>> batch;
  for (const auto& [id, video] : videos) {
    const stdfs::path list = cat_folder / (id + ".txt");
    batch.emplace_back(list, audio::ConcatListText(video.second));
    if (batch.size() == kCatListsPerSync) {
      fs::WriteFilesAtomic(batch);
      batch.clear();
    }
    written.insert(list.filename().string());
    concatenated.wav_scp[id] = std::string(audio::kConcatPrefix) + list.string();
    concatenated.utt2spk[id] = video.first;
  }
  if (!batch.empty()) fs::WriteFilesAtomic(batch);
  for (const stdfs::path& old : SortedEntries(cat_folder, EntryType::kFile, ".txt")) {
    if (written.count(old.filename().string()) == 0) stdfs::remove(old, ec);
  }
  concatenated.Save(cat.list_folder);
  cat.utterances = concatenated.utt2spk.size();
  cat.speakers = single.speakers;

  ASV_LOG(Info, "voxceleb2: {} utterances of {} speakers -> {}", single.utterances,
          single.speakers, single.list_folder.string());
  ASV_LOG(Info, "voxceleb2_cat: {} videos of {} speakers -> {}", cat.utterances, cat.speakers,
          cat.list_folder.string());
  return {single, cat};
}

}  // namespace asv::data
