#include "recipes/shared/xvector/data_selection.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/table_text.h"
#include "recipes/shared/xvector/recipe_settings.h"

namespace asv::recipes::xvector {

std::set<std::string> ReadSpeakerList(const std::filesystem::path& path) {
  std::set<std::string> speakers;
  data::table_text::ForEachFieldLine(path, [&](int line, const std::vector<std::string_view>& fields) {
    if (fields.size() != 1) {
      throw DataError(fmt::format("{}:{}: expected one speaker id per line, found {} fields", path.string(), line,
                                  fields.size()));
    }
    speakers.emplace(fields[0]);
    return true;
  });
  if (speakers.empty()) throw DataError(fmt::format("{}: the speaker list is empty", path.string()));
  return speakers;
}

features::DatasetUtterances ExcludeUtterances(const features::DatasetUtterances& data,
                                              const std::vector<std::string>& id_prefixes,
                                              const std::set<std::string>& speakers) {
  features::DatasetUtterances kept;
  kept.stored = data.stored;
  for (std::size_t i = 0; i < data.ids.size(); ++i) {
    const std::string& id = data.ids[i];
    bool excluded = speakers.count(data.speakers[i]) > 0;
    for (const auto& prefix : id_prefixes) excluded = excluded || id.compare(0, prefix.size(), prefix) == 0;
    if (excluded) {
      kept.stored.erase(id);
      continue;
    }
    kept.ids.push_back(id);
    kept.speakers.push_back(data.speakers[i]);
  }
  return kept;
}

features::DatasetUtterances LoadSelectedData(const std::filesystem::path& dataset_root,
                                             const std::vector<std::string>& names, const RecipeSettings& recipe,
                                             const std::string& what) {
  auto data = features::LoadDatasets(dataset_root, names);
  if (recipe.excluded_utterance_prefixes.empty() && recipe.excluded_speakers_file.empty()) return data;
  const std::set<std::string> speakers = recipe.excluded_speakers_file.empty()
                                             ? std::set<std::string>{}
                                             : ReadSpeakerList(recipe.excluded_speakers_file);
  auto kept = ExcludeUtterances(data, recipe.excluded_utterance_prefixes, speakers);
  ASV_LOG0(Info, "{}: {} of {} utterances left out (recipe.excluded_utterance_prefixes, {} speakers of "
           "recipe.excluded_speakers_file)",
           what, data.ids.size() - kept.ids.size(), data.ids.size(), speakers.size());
  return kept;
}

}  // namespace asv::recipes::xvector
