#include "recipes/voxceleb/xvector/datasets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/train/trainer.h"

namespace asv::recipes::voxceleb_xvector {
namespace fs = std::filesystem;

XvectorSettings& SettingsOf(recipe::RunContext& context) {
  return dynamic_cast<XvectorSettings&>(context.settings());
}

fs::path ListFolderOf(recipe::RunContext& context, const std::string& dataset) {
  const auto& paths = context.settings().common().paths;
  return data::ListFolder(data::DatasetRoot(context.output_folder(), paths.feature_and_list_folder), dataset);
}

DatasetUtterances LoadDatasets(recipe::RunContext& context, const std::vector<std::string>& names) {
  if (names.empty()) throw DataError("no datasets given");
  DatasetUtterances out;
  std::map<std::string, std::string> utt2spk;
  for (const auto& name : names) {
    const fs::path lists = ListFolderOf(context, name);
    if (!fs::exists(lists / "utt2spk")) {
      throw DataError(fmt::format("{}: dataset '{}' has no utt2spk: it has not been prepared (stage 0) or is not "
                                  "a dataset of this output folder",
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
      ASV_LOG(Warning, "dataset '{}': {} of {} utterances have no features (skipped by stage 1?) and are left out",
              name, missing, table.size());
    }
  }
  for (const auto& [utt, spk] : utt2spk) {
    out.ids.push_back(utt);
    out.speakers.push_back(spk);
  }
  return out;
}

std::string DeviceOf(const recipe::RunContext& context, const XvectorSettings& settings) {
  if (!context.device().empty()) return context.device();
  const auto& computing = settings.common().computing;
  const int gpu = computing.gpu_ids.empty() ? 0 : computing.gpu_ids.front();
  return train::SelectDevice(computing.use_gpu, gpu);
}

}  // namespace asv::recipes::voxceleb_xvector
