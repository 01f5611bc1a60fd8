#include "recipes/voxceleb/margin/margin_data.h"

#include <algorithm>

#include <fmt/format.h>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/rng.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "recipes/voxceleb/margin/stage_pcm.h"

namespace asv::recipes::voxceleb_margin {
namespace stdfs = std::filesystem;

features::FbankOptions FbankOf(const MarginSettings& settings) {
  auto options = features::WespeakerFbankOptions();
  options.mel_opts.num_bins = settings.recipe().num_mel_bins;
  options.frame_opts.frame_length_ms = static_cast<float>(settings.recipe().frame_length);
  options.frame_opts.frame_shift_ms = static_cast<float>(settings.recipe().frame_shift);
  return options;
}

std::shared_ptr<const data::PcmStore> OpenStore(recipe::RunContext& context, const std::string& dataset) {
  const stdfs::path folder = PcmFolder(context.feature_and_list_folder(), dataset);
  if (!stdfs::exists(folder / std::string(data::kPcmHeaderFile)) &&
      !stdfs::exists(folder / std::string(data::kPcmPartialFolder))) {
    throw DataError(fmt::format("{}: no PCM store of dataset '{}': run stage 1 with it in recipe.pcm_datasets",
                                folder.string(), dataset));
  }
  return std::make_shared<const data::PcmStore>(data::PcmStore::Open(folder));
}

std::vector<std::string> StoreSpeakers(recipe::RunContext& context, const std::string& dataset,
                                       const data::PcmStore& store) {
  const auto utt2spk = data::ReadTable(data::ListFolder(context.feature_and_list_folder(), dataset) / data::kUtt2Spk,
                                       data::ValueFormat::kSingleToken);
  std::vector<std::string> speakers(store.NumUtterances());
  for (std::size_t i = 0; i < store.NumUtterances(); ++i) {
    const auto it = utt2spk.find(store.Id(i));
    if (it != utt2spk.end()) speakers[i] = it->second;
  }
  return speakers;
}

LabelledSource BackendUtterances(recipe::RunContext& context) {
  const auto& settings = SettingsOf(context);
  const auto& r = settings.recipe();
  const auto store = OpenStore(context, r.training_dataset);
  const auto speakers = StoreSpeakers(context, r.training_dataset, *store);
  std::vector<std::size_t> labelled;
  for (std::size_t i = 0; i < speakers.size(); ++i) {
    if (!speakers[i].empty()) labelled.push_back(i);
  }
  std::vector<std::size_t> chosen = labelled;
  if (labelled.size() > static_cast<std::size_t>(r.backend_utterances)) {
    train::Rng rng(static_cast<std::uint64_t>(r.seed), 0xbac4e9d);
    chosen.clear();
    for (auto k : rng.Sample(labelled.size(), static_cast<std::size_t>(r.backend_utterances))) {
      chosen.push_back(labelled[k]);
    }
    std::sort(chosen.begin(), chosen.end());
  }
  LabelledSource out;
  for (auto i : chosen) out.speakers.push_back(speakers[i]);
  out.source = std::make_shared<features::PcmFbankSource>(store, chosen, FbankOf(settings));
  return out;
}

std::shared_ptr<features::PcmFbankSource> TrialUtterances(
    recipe::RunContext& context, const std::vector<std::pair<std::string, std::filesystem::path>>& lists) {
  const auto& settings = SettingsOf(context);
  const auto store = OpenStore(context, settings.recipe().trial_dataset);
  std::vector<std::size_t> indices;
  std::vector<std::string> missing;
  for (const auto& id : backend::TrialSides(lists)) {
    if (const auto i = store->Find(id)) {
      indices.push_back(*i);
    } else {
      missing.push_back(id);
    }
  }
  if (!missing.empty()) {
    std::string first;
    for (std::size_t k = 0; k < missing.size() && k < 5; ++k) first += (k ? ", " : "") + missing[k];
    throw DataError(fmt::format("{} trial utterance(s) are not in the PCM store {} (skipped by stage 1, or not of "
                                "recipe.trial_dataset): {}{}",
                                missing.size(), store->folder().string(), first, missing.size() > 5 ? ", ..." : ""));
  }
  return std::make_shared<features::PcmFbankSource>(store, indices, FbankOf(settings));
}

}  // namespace asv::recipes::voxceleb_margin
