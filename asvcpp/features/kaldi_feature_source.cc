#include "asvcpp/features/kaldi_feature_source.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/trial_list.h"
#include "asvcpp/features/cmn.h"
#include "asvcpp/features/deltas.h"
#include "asvcpp/features/kaldi_io.h"

namespace asv::features {
namespace stdfs = std::filesystem;

std::map<std::string, StoredUtterance> ReadStoredFeatures(const stdfs::path& list_folder) {
  const stdfs::path feats_scp = list_folder / "feats.scp";
  const stdfs::path vad_scp = list_folder / "vad.scp";
  if (!stdfs::exists(feats_scp) || !stdfs::exists(vad_scp)) {
    throw DataError(
        fmt::format("{}: no feats.scp/vad.scp: the features of this dataset have not been computed "
                    "(stage 1, recipe.feature_extraction_datasets)",
                    list_folder.string()));
  }
  const auto feats = data::ReadTable(feats_scp, data::ValueFormat::kRestOfLine);
  const auto vad = data::ReadTable(vad_scp, data::ValueFormat::kRestOfLine);
  std::map<std::string, StoredUtterance> stored;
  for (const auto& [id, rx] : feats) {
    const auto it = vad.find(id);
    if (it == vad.end()) {
      throw DataError(
          fmt::format("{}: utterance '{}' has features but no VAD in {}", feats_scp.string(), id, vad_scp.string()));
    }
    stored[id] = StoredUtterance{rx, it->second};
  }
  if (vad.size() != feats.size()) {
    throw DataError(fmt::format("{} and {} list different utterances ({} vs {})", feats_scp.string(), vad_scp.string(),
                                feats.size(), vad.size()));
  }
  return stored;
}

namespace {

std::vector<float> ReadVad(const std::string& rx, const std::string& id) {
  try {
    return features::ReadKaldiVector(rx);
  } catch (const DataError& e) {
    throw DataError(fmt::format("VAD of utterance '{}': {}", id, e.what()));
  }
}

// Applies the VAD-length tolerance of ASVtorch's FrameSelector (reference 4.4).
void FitVad(std::vector<float>& vad, std::int64_t frames, int tolerance, const std::string& id) {
  const auto n = static_cast<std::int64_t>(vad.size());
  if (n == frames) return;
  if (std::abs(n - frames) > tolerance) {
    throw DataError(
        fmt::format("utterance '{}': VAD has {} frames, features {} (features.vad_mismatch_tolerance "
                    "= {})",
                    id, n, frames, tolerance));
  }
  vad.resize(static_cast<std::size_t>(frames), 0.0f);
}

}  // namespace

KaldiFeatureSource::KaldiFeatureSource(std::vector<std::string> ids,
                                       const std::map<std::string, StoredUtterance>& stored,
                                       const settings::FeatureSettings& features)
    : ids_(std::move(ids)), features_(features) {
  parts_.reserve(ids_.size());
  speech_frames_.reserve(ids_.size());
  for (const auto& id : ids_) {
    std::vector<StoredUtterance> parts;
    std::int64_t speech = 0;
    for (const auto& part : data::SplitSessions(id)) {
      const auto it = stored.find(part);
      if (it == stored.end()) throw DataError(fmt::format("utterance '{}' has no stored features", part));
      parts.push_back(it->second);
      if (features_.sad_enabled) {
        const auto vad = ReadVad(it->second.vad, part);
        speech += std::count_if(vad.begin(), vad.end(), [](float v) { return v > 0.5f; });
      }
    }
    parts_.push_back(std::move(parts));
    speech_frames_.push_back(speech);
  }
  if (!ids_.empty()) {
    const asv::Matrix first = PartFrames(parts_.front().front(), ids_.front());
    feat_dim_ = static_cast<int>(first.cols());
    if (!features_.sad_enabled) {
      // Without VAD every frame counts: read the frame counts from the matrices themselves.
      for (std::size_t u = 0; u < ids_.size(); ++u) {
        std::int64_t frames = 0;
        for (const auto& part : parts_[u]) frames += features::ReadKaldiMatrix(part.feats).rows();
        speech_frames_[u] = frames;
      }
    }
  }
}

asv::Matrix KaldiFeatureSource::PartFrames(const StoredUtterance& part, const std::string& id) const {
  asv::Matrix feats;
  try {
    feats = features::ReadKaldiMatrix(part.feats);
  } catch (const DataError& e) {
    throw DataError(fmt::format("features of utterance '{}': {}", id, e.what()));
  }
  if (features_.deltas != features::Deltas::kBase) {
    features::DeltaOptions delta;
    delta.order = features_.deltas == features::Deltas::kDelta ? 1 : 2;
    delta.window = features_.delta_reach;
    feats = features::ComputeDeltas(delta, feats);
  }
  if (features_.cmvn != features::Cmvn::kNone) {
    feats = features::ApplySlidingCmn(
        features::SlidingCmnOptions::AsvTorch(features_.cmvn_window, features_.cmvn == features::Cmvn::kMeanVariance),
        feats);
  }
  if (!features_.sad_enabled) return feats;
  auto vad = ReadVad(part.vad, id);
  FitVad(vad, feats.rows(), features_.vad_mismatch_tolerance, id);
  const auto selected = std::count_if(vad.begin(), vad.end(), [](float v) { return v > 0.5f; });
  asv::Matrix out(selected, feats.cols());
  std::int64_t r = 0;
  for (std::int64_t t = 0; t < feats.rows(); ++t) {
    if (vad[static_cast<std::size_t>(t)] > 0.5f) {
      std::copy(feats.row(t), feats.row(t) + feats.cols(), out.row(r++));
    }
  }
  return out;
}

asv::Matrix KaldiFeatureSource::Frames(int utterance) const {
  const auto& parts = parts_.at(static_cast<std::size_t>(utterance));
  const auto& id = ids_.at(static_cast<std::size_t>(utterance));
  if (parts.size() == 1) return PartFrames(parts.front(), id);
  std::vector<asv::Matrix> pieces;
  std::int64_t rows = 0;
  for (const auto& part : parts) {
    pieces.push_back(PartFrames(part, id));
    rows += pieces.back().rows();
  }
  asv::Matrix out(rows, feat_dim_);
  std::int64_t r = 0;
  for (const auto& piece : pieces) {
    std::copy(piece.data(), piece.data() + piece.rows() * piece.cols(), out.row(r));
    r += piece.rows();
  }
  return out;
}

DatasetUtterances LoadDatasets(const std::filesystem::path& dataset_root, const std::vector<std::string>& names) {
  if (names.empty()) throw DataError("no datasets given");
  DatasetUtterances out;
  std::map<std::string, std::string> utt2spk;
  for (const auto& name : names) {
    const std::filesystem::path lists = data::ListFolder(dataset_root, name);
    if (!std::filesystem::exists(lists / "utt2spk")) {
      throw DataError(
          fmt::format("{}: dataset '{}' has no utt2spk: it has not been prepared or is not a dataset "
                      "of this output folder",
                      lists.string(), name));
    }
    const auto table = data::ReadTable(lists / "utt2spk", data::ValueFormat::kSingleToken);
    auto stored = ReadStoredFeatures(lists);
    std::size_t missing = 0;
    for (const auto& [utt, spk] : table) {
      const auto it = stored.find(utt);
      if (it == stored.end()) {
        ++missing;
        continue;
      }
      if (!utt2spk.emplace(utt, spk).second) {
        throw DataError(fmt::format("utterance '{}' is in more than one of the datasets {}", utt,
                                    fmt::format("{}", fmt::join(names, ", "))));
      }
      out.stored.emplace(utt, it->second);
    }
    if (missing > 0) {
      ASV_LOG(Warning,
              "dataset '{}': {} of {} utterances have no features (skipped by the feature extraction?) and are "
              "left out",
              name, missing, table.size());
    }
  }
  for (const auto& [utt, spk] : utt2spk) {
    out.ids.push_back(utt);
    out.speakers.push_back(spk);
  }
  return out;
}

}  // namespace asv::features
