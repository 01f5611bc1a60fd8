#include "recipes/shared/xvector/stage_features.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/prep/dataset_features.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {

namespace stdfs = std::filesystem;

void RunFeatureStage(recipe::RunContext& context) {
  const XvectorSettings& settings = SettingsOf(context);
  const std::vector<std::string>& datasets = settings.recipe().feature_extraction_datasets;
  if (datasets.empty()) {
    throw DataError("recipe.feature_extraction_datasets is empty: stage 1 has nothing to extract");
  }
  const stdfs::path dataset_root = context.feature_and_list_folder();
  for (const auto& dataset : datasets) {
    const stdfs::path wav_scp = data::ListFolder(dataset_root, dataset) / data::kWavScp;
    std::error_code ec;
    if (!stdfs::is_regular_file(wav_scp, ec)) {
      throw DataError(
          fmt::format("recipe.feature_extraction_datasets names '{}', but {} does not exist; prepare the dataset first "
                      "(stage 0, e.g. the 'prepare' config)",
                      dataset, wav_scp.string()));
    }
  }
  const prep::FeatureExtractionOptions options = prep::FeatureOptionsFromSettings(settings.common());

  for (const auto& dataset : datasets) {
    prep::FeatureExtractionReport report = prep::ExtractDatasetFeatures(dataset, dataset_root, options);
    context.RecordArtifact(report.feature_folder / "mfcc.ark", "features");
    context.RecordArtifact(report.list_folder / data::kFeatsScp, "features");
    context.RecordArtifact(report.list_folder / data::kUtt2NumFrames, "features");
    context.RecordArtifact(report.feature_folder / "vad.ark", "vad");
    context.RecordArtifact(report.list_folder / data::kVadScp, "vad");
    if (!report.skipped.empty()) context.RecordArtifact(report.list_folder / prep::kSkippedUtterances, "list");
    ASV_LOG(Info, "{}", report.Summary());
  }
}

}  // namespace asv::recipes::xvector
