// Stage 2 of the x-vector recipes (voxceleb/xvector, sitw/xvector): augmentation (ASVtorch's
// asvtorch_augment.sh): for each `dataset: factor` of recipe.augmentation_datasets,
// augment::AugmentDataset (asvcpp/augment/dataset_augmentation.h: the copies, the files written,
// determinism) with MUSAN under paths.musan_folder and RIRS_NOISES (OpenSLR 28) under
// paths.rirs_folder, else <paths.kaldi_recipe_folder>/RIRS_NOISES, the stage-1 MFCC options and
// recipe.seed.
#pragma once

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::xvector {

/// Stage 2 for the recipe settings `context` holds: augment::AugmentDataset for every entry of
/// recipe.augmentation_datasets (nothing when it is empty), recording the outputs as artifacts.
/// Throws DataError when a dataset, MUSAN or RIRS_NOISES is missing.
void RunAugmentationStage(recipe::RunContext& context);

}  // namespace asv::recipes::xvector
