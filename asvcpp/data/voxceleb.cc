#include "asvcpp/data/voxceleb.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "asvcpp/audio/audio_source.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/table_text.h"
#include "asvcpp/data/trial_list.h"
#include "asvcpp/eval/trial_label.h"

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

std::string_view FileId(std::string_view name) { return name.substr(0, name.find('.')); }

stdfs::path Absolute(const stdfs::path& p) {
  std::error_code ec;
  stdfs::path abs = stdfs::absolute(p, ec);
  return (ec ? p : abs).lexically_normal();
}

// The files of a walk, compactly: VoxCeleb2 has 1.1 M files, and a record per file of
// std::strings and a std::filesystem::path, with the same strings again in the sorted maps of the
// list files, took ~1.8 KB per file (2.3 GB at full size). Here a file is 24 bytes plus its id and
// name in two shared buffers (~60 bytes in all); its path is its video's folder and its name.
struct Corpus {
  struct Video {
    std::string folder;  ///< Absolute path of the video's folder.
    std::string name;
    std::uint32_t speaker = 0;  ///< Index into `speakers`.
    std::size_t files_begin = 0, files_end = 0;  ///< Its files, a range of `files`.
  };
  struct File {
    std::size_t id_begin = 0;    ///< Into `ids`.
    std::size_t name_begin = 0;  ///< Into `names`.
    std::uint32_t video = 0;
    std::uint16_t id_size = 0;
    std::uint16_t name_size = 0;
  };

  std::vector<std::string> speakers;  ///< Distinct speaker folder names.
  std::map<std::string, std::uint32_t, std::less<>> speaker_index;
  std::vector<Video> videos;
  std::vector<File> files;  ///< In walk order.
  std::string ids, names;

  std::string_view Id(std::size_t f) const { return std::string_view(ids).substr(files[f].id_begin, files[f].id_size); }
  std::string_view Name(std::size_t f) const {
    return std::string_view(names).substr(files[f].name_begin, files[f].name_size);
  }
  std::string Path(std::size_t f) const {  // As directory_iterator gives it: folder / name.
    const std::string& folder = videos[files[f].video].folder;
    const std::string_view name = Name(f);
    std::string path;
    path.reserve(folder.size() + 1 + name.size());
    path.append(folder).append(1, '/').append(name);
    return path;
  }
  std::uint32_t Speaker(std::size_t f) const { return videos[files[f].video].speaker; }
};

// Walks `<root>/<spk>/<video>/*<extension>` in sorted order into `corpus`.
void Walk(const stdfs::path& root, std::string_view extension, Corpus& corpus) {
  for (const stdfs::path& spk : SortedEntries(root, EntryType::kDirectory)) {
    const std::string s = spk.filename().string();
    const auto [it, added] = corpus.speaker_index.emplace(s, static_cast<std::uint32_t>(corpus.speakers.size()));
    if (added) corpus.speakers.push_back(s);
    for (const stdfs::path& video : SortedEntries(spk, EntryType::kDirectory)) {
      Corpus::Video& v = corpus.videos.emplace_back();
      v.folder = video.string();
      v.name = video.filename().string();
      v.speaker = it->second;
      v.files_begin = corpus.files.size();
      for (const stdfs::path& file : SortedEntries(video, EntryType::kFile, extension)) {
        const std::string name = file.filename().string();
        const std::string id = fmt::format("{}-{}-{}", s, v.name, FileId(name));
        if (id.size() > UINT16_MAX || name.size() > UINT16_MAX) {  // Never with names of at most 255 bytes.
          throw DataError(fmt::format("{}: file name or utterance id longer than 65,535 bytes", file.string()));
        }
        Corpus::File& f = corpus.files.emplace_back();
        f.id_begin = corpus.ids.size();
        f.id_size = static_cast<std::uint16_t>(id.size());
        f.name_begin = corpus.names.size();
        f.name_size = static_cast<std::uint16_t>(name.size());
        f.video = static_cast<std::uint32_t>(corpus.videos.size() - 1);
        corpus.ids += id;
        corpus.names += name;
      }
      v.files_end = corpus.files.size();
    }
  }
}

// The files in id order (byte order, as std::map sorts them), files of one id in walk order.
std::vector<std::uint32_t> IdOrder(const Corpus& corpus) {
  if (corpus.files.size() > UINT32_MAX) throw DataError("more than 2^32 files");
  std::vector<std::uint32_t> order(corpus.files.size());
  for (std::size_t f = 0; f < order.size(); ++f) order[f] = static_cast<std::uint32_t>(f);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return corpus.Id(a) < corpus.Id(b); });
  return order;
}

// Throws for the first file in walk order whose id an earlier file has, naming both (the earlier
// one first).
void CheckUniqueIds(const Corpus& corpus, const std::vector<std::uint32_t>& order) {
  std::size_t first = 0, again = SIZE_MAX;
  for (std::size_t k = 1; k < order.size(); ++k) {
    // `order` is stable: the first two files of a run of equal ids are its first two in walk order.
    if (corpus.Id(order[k]) == corpus.Id(order[k - 1]) && (k < 2 || corpus.Id(order[k - 2]) != corpus.Id(order[k]))) {
      if (order[k] < again) {
        first = order[k - 1];
        again = order[k];
      }
    }
  }
  if (again != SIZE_MAX) {
    throw DataError(fmt::format("{} and {} both map to utterance id '{}'", corpus.Path(first), corpus.Path(again),
                                corpus.Id(again)));
  }
}

// Writes wav.scp, utt2spk and spk2utt into `folder` byte for byte as DataDir::Save writes the
// tables utt -> value and utt -> speaker, with the same checks, for `n` utterances given in id
// order (ids distinct): id(k), value(k) (a std::string) and speaker(k) (an index into `speakers`,
// whose names are distinct). Nothing but two indices per utterance is held.
template <typename IdFn, typename ValueFn, typename SpeakerFn>
void WriteLists(const stdfs::path& folder, std::size_t n, const IdFn& id, const ValueFn& value,
                const SpeakerFn& speaker, const std::vector<std::string>& speakers) {
  for (std::size_t k = 0; k < n; ++k) table_text::CheckWritable(id(k), value(k));
  fs::WriteFileAtomic(folder / std::string(kWavScp), [&](std::ostream& out) {
    for (std::size_t k = 0; k < n; ++k) out << id(k) << ' ' << value(k) << '\n';
  });
  for (std::size_t k = 0; k < n; ++k) table_text::CheckWritable(id(k), speakers[speaker(k)]);
  fs::WriteFileAtomic(folder / std::string(kUtt2Spk), [&](std::ostream& out) {
    for (std::size_t k = 0; k < n; ++k) out << id(k) << ' ' << speakers[speaker(k)] << '\n';
  });
  // spk2utt: speakers by name, each with its utterances in id order (MakeSpk2Utt, WriteSpk2Utt).
  std::vector<std::uint32_t> rank(speakers.size());
  {
    std::vector<std::uint32_t> by_name(speakers.size());
    for (std::size_t s = 0; s < by_name.size(); ++s) by_name[s] = static_cast<std::uint32_t>(s);
    std::sort(by_name.begin(), by_name.end(), [&](std::uint32_t a, std::uint32_t b) { return speakers[a] < speakers[b]; });
    for (std::size_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = static_cast<std::uint32_t>(r);
  }
  std::vector<std::uint32_t> by_speaker(n);
  for (std::size_t k = 0; k < n; ++k) by_speaker[k] = static_cast<std::uint32_t>(k);
  std::stable_sort(by_speaker.begin(), by_speaker.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return rank[speaker(a)] < rank[speaker(b)]; });
  for (std::size_t k = 0; k < n; ++k) {
    if (k == 0 || speaker(by_speaker[k]) != speaker(by_speaker[k - 1]))
      table_text::CheckWritable(speakers[speaker(by_speaker[k])], "");
  }
  fs::WriteFileAtomic(folder / std::string(kSpk2Utt), [&](std::ostream& out) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint32_t s = speaker(by_speaker[k]);
      const bool first = k == 0 || s != speaker(by_speaker[k - 1]);
      const bool last = k + 1 == n || s != speaker(by_speaker[k + 1]);
      if (first) out << speakers[s];
      out << ' ' << id(by_speaker[k]);
      if (last) out << '\n';
    }
  });
}

// The id of file `f` of `corpus`, or `id` itself (for searches in an IdOrder).
std::string_view IdOf(const Corpus& corpus, std::uint32_t f) { return corpus.Id(f); }
std::string_view IdOf(const Corpus&, const std::string& id) { return id; }

// The number of distinct speakers of the files.
std::size_t SpeakerCount(const Corpus& corpus) {
  std::vector<char> seen(corpus.speakers.size(), 0);
  std::size_t count = 0;
  for (const Corpus::Video& v : corpus.videos) {
    if (v.files_end > v.files_begin && !seen[v.speaker]) {
      seen[v.speaker] = 1;
      ++count;
    }
  }
  return count;
}

// WriteLists for one utterance per file.
void WritePerFileLists(const stdfs::path& folder, const Corpus& corpus, const std::vector<std::uint32_t>& order) {
  WriteLists(
      folder, order.size(), [&](std::size_t k) { return corpus.Id(order[k]); },
      [&](std::size_t k) { return corpus.Path(order[k]); }, [&](std::size_t k) { return corpus.Speaker(order[k]); },
      corpus.speakers);
}

// Walks `<corpus>/wav/<spk>/<video>/*.wav`, the layout of VoxCeleb1. Throws DataError naming the
// wav folder when it is missing or holds no .wav file.
Corpus WalkVoxCeleb1(const stdfs::path& corpus_folder) {
  const stdfs::path wav_root = Absolute(corpus_folder) / "wav";
  std::error_code ec;
  if (!stdfs::is_directory(wav_root, ec)) {
    throw DataError(fmt::format("{}: VoxCeleb1 audio folder does not exist (expected "
                                "<voxceleb1>/wav/<speaker>/<video>/<file>.wav)",
                                wav_root.string()));
  }
  Corpus corpus;
  Walk(wav_root, ".wav", corpus);
  if (corpus.files.empty()) {
    throw DataError(fmt::format("{}: no .wav files found under <speaker>/<video>/ folders",
                                wav_root.string()));
  }
  return corpus;
}

// Writes the list folder of dataset `name` under `dataset_root` (absolute) with one utterance per
// "<speaker>-<video>" with files (videos of several walked roots, or of names that join to the
// same id, are one utterance): its files in walk order in the concatenation list
// `cat/<id>.txt`, wav.scp value "cat:<list>", its speaker that of its last video. Lists in cat/
// that are no utterance's are deleted.
PreparedDataset WriteCatDataset(const Corpus& corpus, const stdfs::path& dataset_root, std::string name) {
  std::vector<std::uint32_t> videos;  // Videos with files, by id; of one id in walk order.
  const auto video_id = [&](std::uint32_t v) {
    return fmt::format("{}-{}", corpus.speakers[corpus.videos[v].speaker], corpus.videos[v].name);
  };
  std::vector<std::string> video_ids(corpus.videos.size());
  for (std::size_t v = 0; v < corpus.videos.size(); ++v) {
    if (corpus.videos[v].files_end == corpus.videos[v].files_begin) continue;
    videos.push_back(static_cast<std::uint32_t>(v));
    video_ids[v] = video_id(static_cast<std::uint32_t>(v));
  }
  std::stable_sort(videos.begin(), videos.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return video_ids[a] < video_ids[b]; });
  struct Utterance {
    std::size_t begin, end;  ///< Range of `videos`.
  };
  std::vector<Utterance> utterances;
  for (std::size_t k = 0; k < videos.size(); ++k) {
    if (k == 0 || video_ids[videos[k]] != video_ids[videos[k - 1]]) utterances.push_back({k, k});
    utterances.back().end = k + 1;
  }

  PreparedDataset cat;
  cat.name = std::move(name);
  cat.list_folder = ListFolder(dataset_root, cat.name);
  const stdfs::path cat_folder = cat.list_folder / "cat";
  const auto id_of = [&](std::size_t u) -> const std::string& { return video_ids[videos[utterances[u].begin]]; };
  const auto list_of = [&](std::size_t u) { return cat_folder / (id_of(u) + ".txt"); };
  // The lists are written in batches with one file-system sync per batch (fs::WriteFilesAtomic):
  // an fsync per list took ~4 ms, 10 minutes for VoxCeleb2's 150,480 videos.
  std::vector<std::pair<stdfs::path, std::string>> batch;
  std::vector<stdfs::path> parts;
  for (std::size_t u = 0; u < utterances.size(); ++u) {
    parts.clear();
    for (std::size_t k = utterances[u].begin; k < utterances[u].end; ++k) {
      const Corpus::Video& v = corpus.videos[videos[k]];
      for (std::size_t f = v.files_begin; f < v.files_end; ++f) parts.emplace_back(corpus.Path(f));
    }
    batch.emplace_back(list_of(u), audio::ConcatListText(parts));
    if (batch.size() == kCatListsPerSync) {
      fs::WriteFilesAtomic(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) fs::WriteFilesAtomic(batch);
  batch.clear();
  batch.shrink_to_fit();
  // Lists left over from an earlier run: names that are no utterance id plus ".txt".
  const auto is_list = [&](const std::string& file_name) {
    constexpr std::string_view kTxt = ".txt";
    if (file_name.size() <= kTxt.size() || file_name.compare(file_name.size() - kTxt.size(), kTxt.size(), kTxt) != 0) {
      return false;
    }
    const std::string_view id = std::string_view(file_name).substr(0, file_name.size() - kTxt.size());
    const auto it =
        std::lower_bound(utterances.begin(), utterances.end(), id,
                         [&](const Utterance& u, std::string_view x) { return video_ids[videos[u.begin]] < x; });
    return it != utterances.end() && video_ids[videos[it->begin]] == id;
  };
  for (const stdfs::path& old : SortedEntries(cat_folder, EntryType::kFile, ".txt")) {
    std::error_code ec;
    if (!is_list(old.filename().string())) stdfs::remove(old, ec);
  }
  WriteLists(
      cat.list_folder, utterances.size(), id_of,
      [&](std::size_t u) { return std::string(audio::kConcatPrefix) + list_of(u).string(); },
      [&](std::size_t u) { return corpus.videos[videos[utterances[u].end - 1]].speaker; }, corpus.speakers);
  cat.utterances = utterances.size();
  cat.speakers = SpeakerCount(corpus);
  ASV_LOG(Info, "{}: {} videos of {} speakers -> {}", cat.name, cat.utterances, cat.speakers,
          cat.list_folder.string());
  return cat;
}

}  // namespace

PreparedDataset PrepareVoxCeleb1(const stdfs::path& corpus, const stdfs::path& dataset_root,
                                 const VoxCelebOptions& options) {
  const Corpus files = WalkVoxCeleb1(corpus);
  const std::vector<std::uint32_t> order = IdOrder(files);
  CheckUniqueIds(files, order);

  PreparedDataset result;
  result.name = "voxceleb1";
  result.list_folder = ListFolder(Absolute(dataset_root), result.name);
  WritePerFileLists(result.list_folder, files, order);
  result.utterances = order.size();
  result.speakers = SpeakerCount(files);

  const auto is_known = [&](const std::string& id) {
    return std::binary_search(order.begin(), order.end(), id, [&](const auto& a, const auto& b) {
      return IdOf(files, a) < IdOf(files, b);
    });
  };
  std::vector<std::string> list_files(kVoxCeleb1TrialLists.begin(), kVoxCeleb1TrialLists.end());
  for (const std::string& file : options.trial_list_files) {
    if (std::find(list_files.begin(), list_files.end(), file) == list_files.end()) list_files.push_back(file);
  }
  for (const std::string& name : list_files) {
    const stdfs::path source = Absolute(corpus) / std::string(name);
    std::error_code ec;
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
    RequireBothClasses(list);
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

PreparedDataset PrepareVoxCeleb1Cat(const stdfs::path& corpus, const stdfs::path& dataset_root) {
  return WriteCatDataset(WalkVoxCeleb1(corpus), Absolute(dataset_root), "voxceleb1_cat");
}

std::vector<PreparedDataset> PrepareVoxCeleb2(const stdfs::path& corpus_folder, const stdfs::path& dataset_root) {
  const stdfs::path root = Absolute(corpus_folder);
  Corpus corpus;
  bool any_folder = false;
  std::error_code ec;
  for (const char* part : {"dev", "test"}) {
    const stdfs::path aac = root / part / "aac";
    if (!stdfs::is_directory(aac, ec)) continue;
    any_folder = true;
    Walk(aac, ".m4a", corpus);
  }
  if (!any_folder) {
    throw DataError(fmt::format("{}: neither dev/aac nor test/aac exists (expected "
                                "<voxceleb2>/{{dev,test}}/aac/<speaker>/<video>/<file>.m4a)",
                                root.string()));
  }
  if (corpus.files.empty()) {
    throw DataError(fmt::format("{}: no .m4a files found under {{dev,test}}/aac/<speaker>/<video>/",
                                root.string()));
  }
  const std::vector<std::uint32_t> order = IdOrder(corpus);
  CheckUniqueIds(corpus, order);
  const stdfs::path abs_root = Absolute(dataset_root);

  PreparedDataset single;
  single.name = "voxceleb2";
  single.list_folder = ListFolder(abs_root, single.name);
  WritePerFileLists(single.list_folder, corpus, order);
  single.utterances = order.size();
  single.speakers = SpeakerCount(corpus);
  ASV_LOG(Info, "voxceleb2: {} utterances of {} speakers -> {}", single.utterances,
          single.speakers, single.list_folder.string());

  // voxceleb2_cat: a video in both dev and test is one utterance.
  return {single, WriteCatDataset(corpus, abs_root, "voxceleb2_cat")};
}

}  // namespace asv::data
