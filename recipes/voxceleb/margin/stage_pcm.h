// Stage 1 of voxceleb/margin: the audio of each dataset of recipe.pcm_datasets decoded once into a
// PCM store (asvcpp/data/pcm_store.h) at <output>/<feature_and_list_folder>/<dataset>/pcm, from
// the dataset's wav.scp (stage 0), with computing.feature_extraction_workers decoding threads.
// Resumable: an interrupted build continues; a complete store for the same wav.scp is left as it
// is. Files that cannot be decoded are skipped and listed in the store's skipped_utterances.
#pragma once

#include <filesystem>
#include <string_view>

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_margin {

/// `<dataset_root>/<dataset>/pcm`.
std::filesystem::path PcmFolder(const std::filesystem::path& dataset_root, std::string_view dataset);

/// Runs stage 1. Throws DataError for a dataset without wav.scp (naming the file) and what
/// data::BuildPcmStore throws.
void RunPcmStage(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_margin
