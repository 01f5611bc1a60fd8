#include "recipes/shared/xvector/stage_augment.h"

#include "asvcpp/augment/augmenter.h"
#include "asvcpp/augment/dataset_augmentation.h"
#include "asvcpp/augment/noise_sets.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/shared/xvector/xvector_settings.h"

namespace asv::recipes::xvector {

namespace stdfs = std::filesystem;

void RunAugmentationStage(recipe::RunContext& context) {
  const XvectorSettings& settings = SettingsOf(context);
  const auto& datasets = settings.recipe().augmentation_datasets;
  if (datasets.empty()) {
    ASV_LOG(Info, "stage 2: recipe.augmentation_datasets is empty: no augmentation");
    return;
  }
  const auto& paths = settings.common().paths;
  const stdfs::path rirs = paths.rirs_folder.empty() ? stdfs::path(paths.kaldi_recipe_folder) / "RIRS_NOISES"
                                                     : stdfs::path(paths.rirs_folder);
  const prep::FeatureExtractionOptions options = prep::FeatureOptionsFromSettings(settings.common());
  augment::MusanSets musan = augment::ScanMusan(paths.musan_folder);
  std::vector<augment::RirSet> rir_sets = augment::SimulatedRoomRirs(rirs);
  const augment::Augmenter augmenter(std::move(musan), std::move(rir_sets),
                                     static_cast<int>(options.mfcc.frame_opts.samp_freq));
  const stdfs::path dataset_root = context.feature_and_list_folder();
  const auto seed = static_cast<std::uint64_t>(settings.recipe().seed);
  for (const auto& [dataset, factor] : datasets) {
    augment::AugmentationReport report =
        augment::AugmentDataset(dataset, factor, dataset_root, augmenter, options, seed);
    if (report.augmented > 0) {
      context.RecordArtifact(data::FeatureFolder(dataset_root, dataset + "_aug_subset") / "mfcc.ark", "features");
      context.RecordArtifact(report.aug_list_folder / data::kFeatsScp, "features");
      context.RecordArtifact(report.aug_list_folder / augment::kAugmentationList, "list");
    }
    context.RecordArtifact(report.combined_list_folder / data::kFeatsScp, "features");
    context.RecordArtifact(report.combined_list_folder / data::kUtt2Spk, "list");
    ASV_LOG(Info, "{}", report.Summary());
  }
}

}  // namespace asv::recipes::xvector
