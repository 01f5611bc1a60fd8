// Stage 0 of voxceleb/xvector: utterance and trial lists (ASVtorch run.py stage 0 with its
// VoxCeleb list preparation).
//
// For each dataset of recipe.preparation_datasets (None: every dataset of paths.datasets this
// recipe can prepare) the corpus folder paths.datasets[name] (relative paths are taken against
// the current folder) is walked by asv::data::PrepareVoxCeleb1 / PrepareVoxCeleb2, which write
// Kaldi list folders under <output_folder>/<feature_and_list_folder>/<dataset>/lists:
//   voxceleb1  wav.scp, utt2spk, spk2utt and the official trial lists found in the corpus folder
//   voxceleb2  voxceleb2 (one utterance per .m4a file) and voxceleb2_cat (one per video)
// Every list file is recorded as an artifact of kind "list" when a database is attached.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/settings/types.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_xvector {

class XvectorSettings;

/// Names accepted in recipe.preparation_datasets: {"voxceleb1", "voxceleb2"}.
std::vector<std::string> PreparableDatasets();

/// One dataset to prepare: its name and the absolute corpus folder.
struct PreparationJob {
  std::string name;
  std::filesystem::path corpus;
};

/// Checks the request against what the recipe knows and what paths.datasets names, before
/// anything is written. `requested` nullopt: every preparable dataset present in `datasets`, in
/// the order of `datasets`. Duplicates are prepared once. Throws DataError naming the dataset
/// (and listing the known ones or the keys of paths.datasets) for an unknown name, for
/// voxceleb2_cat (prepared with voxceleb2), for a name missing from paths.datasets, and when the
/// resulting list is empty.
std::vector<PreparationJob> ResolvePreparationJobs(const std::optional<std::vector<std::string>>& requested,
                                                   const settings::OrderedDict<std::string>& datasets);

/// Runs stage 0 (see the header comment) for the recipe settings `context` holds;
/// PrepareVoxCeleb1/2 log one summary line per list folder (utterances, speakers, trial lists,
/// trials). Throws DataError for bad requests (see ResolvePreparationJobs) and whatever the
/// preparation functions throw (DataError naming the corpus folder or file).
void RunPrepareStage(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_xvector
