// Reading the prepared datasets of the recipe (stage 0/1 outputs) for stages 5, 7 and 9.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/recipe/run_context.h"
#include "asvcpp/train/feature_source.h"
#include "recipes/voxceleb/xvector/kaldi_feature_source.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {

/// The settings of a voxceleb/xvector run (the context's settings are always XvectorSettings).
XvectorSettings& SettingsOf(recipe::RunContext& context);

/// <output_folder>/<feature_and_list_folder>/<dataset>/lists
std::filesystem::path ListFolderOf(recipe::RunContext& context, const std::string& dataset);

/// The utterances of one or more datasets with their features: ids sorted, speaker of each.
struct DatasetUtterances {
  std::vector<std::string> ids;
  std::vector<std::string> speakers;  ///< [ids.size()]
  std::map<std::string, StoredUtterance> stored;
};

/// Reads utt2spk, feats.scp and vad.scp of every dataset in `names`. Utterances without
/// features are left out with a warning (stage 1 may have skipped unreadable audio). Throws
/// DataError when a dataset has no lists or no features, or two datasets share an utterance id.
DatasetUtterances LoadDatasets(recipe::RunContext& context, const std::vector<std::string>& names);

/// A view of some utterances of another source (training data after filtering, PLDA subsets).
class SubsetFeatureSource : public train::FeatureSource {
 public:
  SubsetFeatureSource(std::shared_ptr<const train::FeatureSource> base, std::vector<int> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {}
  int NumUtterances() const override { return static_cast<int>(indices_.size()); }
  int FeatDim() const override { return base_->FeatDim(); }
  std::int64_t NumFrames(int u) const override { return base_->NumFrames(indices_.at(u)); }
  asv::Matrix Frames(int u) const override { return base_->Frames(indices_.at(u)); }
  asv::Matrix Clip(int u, std::int64_t start, std::int64_t length) const override {
    return base_->Clip(indices_.at(u), start, length);
  }
  std::string Name(int u) const override { return base_->Name(indices_.at(u)); }

 private:
  std::shared_ptr<const train::FeatureSource> base_;
  std::vector<int> indices_;
};

/// The torch device of this process: the context's (asvrun pins each worker and sets it),
/// else "cuda:<computing.gpu_ids[0]>" when computing.use_gpu and CUDA is usable, else "cpu".
std::string DeviceOf(const recipe::RunContext& context, const XvectorSettings& settings);

}  // namespace asv::recipes::voxceleb_xvector
