// The training and PLDA data of the x-vector recipes: the utterances of some datasets with
// features, less the excluded ones (ASVtorch's sitw/xvector run.py leaves out the VoxCeleb1 video
// id11111-G2QZRjUB_VM with UtteranceSelector().choose_regex('^(?!id11111-G2QZRjUB_VM).*');
// Kaldi's egs/voxceleb/v2 run.sh leaves out the VoxCeleb1 speakers who also speak in SITW).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "asvcpp/features/kaldi_feature_source.h"

namespace asv::recipes::xvector {

struct RecipeSettings;

/// The speaker ids of `path`: one per non-blank line. Throws DataError naming the file when it
/// cannot be read or is empty, and "path:line" for a line of more than one field.
std::set<std::string> ReadSpeakerList(const std::filesystem::path& path);

/// `data` without the utterances whose id starts with one of `id_prefixes` or whose speaker is
/// in `speakers` (order kept). Never throws.
features::DatasetUtterances ExcludeUtterances(const features::DatasetUtterances& data,
                                              const std::vector<std::string>& id_prefixes,
                                              const std::set<std::string>& speakers);

/// features::LoadDatasets(dataset_root, names) less what recipe.excluded_utterance_prefixes and
/// recipe.excluded_speakers_file exclude (the file taken against the current folder when
/// relative), logging how many were left out as `what` ("training data"). Throws what
/// LoadDatasets and ReadSpeakerList throw.
features::DatasetUtterances LoadSelectedData(const std::filesystem::path& dataset_root,
                                             const std::vector<std::string>& names, const RecipeSettings& recipe,
                                             const std::string& what);

}  // namespace asv::recipes::xvector
