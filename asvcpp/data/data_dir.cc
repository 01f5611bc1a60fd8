#include "asvcpp/data/data_dir.h"

#include <fmt/format.h>

#include <algorithm>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::data {
namespace {

namespace stdfs = std::filesystem;

bool Exists(const stdfs::path& p) {
  std::error_code ec;
  return stdfs::is_regular_file(p, ec);
}

// Removes from `table` the keys not in `keep`, collecting them into `dropped`.
template <typename Map>
void Retain(Map& table, const std::vector<std::string>& keep, std::vector<std::string>& dropped) {
  if (table.empty()) return;
  for (auto it = table.begin(); it != table.end();) {
    if (!std::binary_search(keep.begin(), keep.end(), it->first)) {
      dropped.push_back(it->first);
      it = table.erase(it);
    } else {
      ++it;
    }
  }
}

template <typename Map>
void IntersectKeys(const Map& table, std::vector<std::string>& ids, bool& first) {
  if (table.empty()) return;
  std::vector<std::string> keys;
  keys.reserve(table.size());
  for (const auto& kv : table) keys.push_back(kv.first);
  if (first) {
    ids = std::move(keys);
    first = false;
    return;
  }
  std::vector<std::string> out;
  std::set_intersection(ids.begin(), ids.end(), keys.begin(), keys.end(), std::back_inserter(out));
  ids = std::move(out);
}

}  // namespace

stdfs::path DatasetRoot(const stdfs::path& output_folder, std::string_view feature_and_list_folder) {
  return output_folder / std::string(feature_and_list_folder);
}

stdfs::path ListFolder(const stdfs::path& dataset_root, std::string_view dataset) {
  return dataset_root / std::string(dataset) / "lists";
}

stdfs::path FeatureFolder(const stdfs::path& dataset_root, std::string_view dataset) {
  return dataset_root / std::string(dataset) / "features";
}

DataDir DataDir::Load(const stdfs::path& dir) {
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec)) {
    throw DataError(fmt::format("{}: data directory does not exist", dir.string()));
  }
  DataDir data;
  bool any = false;
  const auto path = [&](std::string_view name) { return dir / std::string(name); };
  if (Exists(path(kWavScp))) {
    data.wav_scp = ReadTable(path(kWavScp), ValueFormat::kRestOfLine);
    any = true;
  }
  if (Exists(path(kUtt2Spk))) {
    data.utt2spk = ReadTable(path(kUtt2Spk), ValueFormat::kSingleToken);
    any = true;
  }
  if (Exists(path(kSpk2Utt))) {
    const Table from_spk2utt = MakeUtt2Spk(ReadSpk2Utt(path(kSpk2Utt)));
    if (data.utt2spk.empty() && !Exists(path(kUtt2Spk))) {
      data.utt2spk = from_spk2utt;
    } else if (from_spk2utt != data.utt2spk) {
      throw DataError(fmt::format("{} and {} disagree (regenerate spk2utt from utt2spk)",
                                  path(kUtt2Spk).string(), path(kSpk2Utt).string()));
    }
    any = true;
  }
  if (Exists(path(kFeatsScp))) {
    data.feats_scp = ReadTable(path(kFeatsScp), ValueFormat::kSingleToken);
    any = true;
  }
  if (Exists(path(kVadScp))) {
    data.vad_scp = ReadTable(path(kVadScp), ValueFormat::kSingleToken);
    any = true;
  }
  if (Exists(path(kUtt2NumFrames))) {
    data.utt2num_frames = ReadCounts(path(kUtt2NumFrames));
    any = true;
  }
  if (!any) {
    throw DataError(fmt::format("{}: no data files (wav.scp, utt2spk, feats.scp, ...) found",
                                dir.string()));
  }
  return data;
}

void DataDir::Save(const stdfs::path& dir) const {
  const auto path = [&](std::string_view name) { return dir / std::string(name); };
  if (!wav_scp.empty()) WriteTable(path(kWavScp), wav_scp);
  if (!utt2spk.empty()) {
    WriteTable(path(kUtt2Spk), utt2spk);
    WriteSpk2Utt(path(kSpk2Utt), MakeSpk2Utt(utt2spk));
  }
  if (!feats_scp.empty()) WriteTable(path(kFeatsScp), feats_scp);
  if (!vad_scp.empty()) WriteTable(path(kVadScp), vad_scp);
  if (!utt2num_frames.empty()) WriteCounts(path(kUtt2NumFrames), utt2num_frames);
}

std::size_t DataDir::size() const {
  return std::max({wav_scp.size(), utt2spk.size(), feats_scp.size(), vad_scp.size(),
                   utt2num_frames.size()});
}

std::size_t FixReport::dropped_total() const {
  std::size_t n = 0;
  for (const auto& kv : dropped) n += kv.second.size();
  return n;
}

std::string FixReport::Describe(std::size_t max_ids) const {
  std::string out;
  for (const auto& [file, ids] : dropped) {
    if (ids.empty()) continue;
    std::string names;
    for (std::size_t i = 0; i < ids.size() && i < max_ids; ++i) names += (i ? ", " : "") + ids[i];
    if (ids.size() > max_ids) names += ", ...";
    out += fmt::format("{}{}: dropped {} ({})", out.empty() ? "" : "\n", file, ids.size(), names);
  }
  return out;
}

FixReport FixDataDir(DataDir& data) {
  std::vector<std::string> ids;
  bool first = true;
  IntersectKeys(data.wav_scp, ids, first);
  IntersectKeys(data.utt2spk, ids, first);
  IntersectKeys(data.feats_scp, ids, first);
  IntersectKeys(data.vad_scp, ids, first);
  IntersectKeys(data.utt2num_frames, ids, first);

  FixReport report;
  report.kept = ids.size();
  Retain(data.wav_scp, ids, report.dropped[std::string(kWavScp)]);
  Retain(data.utt2spk, ids, report.dropped[std::string(kUtt2Spk)]);
  Retain(data.feats_scp, ids, report.dropped[std::string(kFeatsScp)]);
  Retain(data.vad_scp, ids, report.dropped[std::string(kVadScp)]);
  Retain(data.utt2num_frames, ids, report.dropped[std::string(kUtt2NumFrames)]);
  for (auto it = report.dropped.begin(); it != report.dropped.end();) {
    it = it->second.empty() ? report.dropped.erase(it) : std::next(it);
  }
  report.sorted_by_speaker = IsSortedBySpeaker(data.utt2spk);
  return report;
}

FixReport FixDataDirOnDisk(const stdfs::path& dir) {
  DataDir data = DataDir::Load(dir);
  const FixReport report = FixDataDir(data);
  if (report.kept == 0) {
    throw DataError(fmt::format("{}: no utterance is present in every list ({})", dir.string(),
                                report.Describe()));
  }
  data.Save(dir);
  if (report.dropped_total() > 0) {
    ASV_LOG(Warning, "{}: kept {} utterances present in every list; {}", dir.string(), report.kept,
            report.Describe());
  } else {
    ASV_LOG(Debug, "{}: {} utterances, nothing to fix", dir.string(), report.kept);
  }
  if (!report.sorted_by_speaker) {
    ASV_LOG(Warning, "{}: utterance ids do not sort with their speaker ids (Kaldi tools expect "
                     "the speaker id as a prefix of the utterance id)", dir.string());
  }
  return report;
}

}  // namespace asv::data
