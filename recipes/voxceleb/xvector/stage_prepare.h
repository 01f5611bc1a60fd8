// Stage 0 of voxceleb/xvector: utterance and trial lists (ASVtorch run.py stage 0 with its
// VoxCeleb list preparation).
//
// For each dataset of recipe.preparation_datasets (None: every dataset of paths.datasets this
// recipe can prepare) the corpus folder paths.datasets[name] (relative paths are taken against
// the current folder) is walked by asv::data::PrepareVoxCeleb1 (and PrepareVoxCeleb1Cat) /
// PrepareVoxCeleb2, which write Kaldi list folders under
// <output_folder>/<feature_and_list_folder>/<dataset>/lists:
//   voxceleb1  voxceleb1 (wav.scp, utt2spk, spk2utt and the official trial lists found in the
//              corpus folder) and voxceleb1_cat (one utterance per video)
//   voxceleb2  voxceleb2 (one utterance per .m4a file) and voxceleb2_cat (one per video)
// Every list file is recorded as an artifact of kind "list" when a database is attached.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/settings/types.h"
#include "recipes/shared/recipe_stages.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_xvector {

/// The list preparation shared with the other recipes (recipes/shared/recipe_stages.h).
using shared::PreparableDatasets;
using shared::PreparationJob;
using shared::ResolvePreparationJobs;

/// Runs stage 0 (see the header comment; shared::PrepareDatasets) for the recipe settings
/// `context` holds. Throws what PrepareDatasets throws.
void RunPrepareStage(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_xvector
