#include "recipes/voxceleb/xvector/xvector_stages.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/features/feature_options.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/shared/voxceleb_stages.h"
#include "recipes/voxceleb/xvector/stage_augment.h"
#include "recipes/voxceleb/xvector/stage_embeddings.h"
#include "recipes/voxceleb/xvector/stage_features.h"
#include "recipes/voxceleb/xvector/stage_inputs.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"
#include "recipes/voxceleb/xvector/stage_scoring.h"
#include "recipes/voxceleb/xvector/stage_train.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {
namespace {


// The function of each stage of XvectorRecipe::stages(), by the stage's name (its number and
// description live only in that table).
const voxceleb::StageTable& XvectorStageFunctions() {
  static const voxceleb::StageTable functions = {
      {"prepare", RunPrepareStage},
      {"features", RunFeatureStage},
      {"augmentation", RunAugmentationStage},
      {"train", RunTraining},
      {"embeddings", RunEmbeddingExtraction},
      {"scoring", RunScoring},
  };
  return functions;
}

}  // namespace

bool XvectorStages::HasStage(const recipe::StageInfo& stage) const {
  return XvectorStageFunctions().count(stage.name) > 0;
}

void XvectorStages::RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const {
  if (dynamic_cast<const XvectorSettings*>(&context.settings()) == nullptr) {
    throw StageError("voxceleb/xvector: the run context does not hold this recipe's settings");
  }
  voxceleb::RunStageOf("voxceleb/xvector", XvectorStageFunctions(), stage, context,
                       "lower network.minibatch_size or network.max_clip_size (training), "
                       "network.max_batch_size_in_frames (validation and extraction), or the network "
                       "(network.frame_layer_size, network.stat_size)");
}

std::vector<std::string> XvectorStages::MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                                      const std::vector<int>& earlier) const {
  return MissingStageInputs(stage, context, earlier);
}

std::optional<recipe::MemoryNeed> XvectorStages::TrainingMemory(const recipe::StageInfo& stage,
                                                                recipe::RunContext& context) const {
  if (stage.name != "train") return std::nullopt;
  const auto& s = SettingsOf(context);
  const auto& network = s.common().network;
  const std::string examples = fmt::format("clips of {} frames", network.max_clip_size);
  // MFCCs of paths.kaldi_mfcc_conf_file, with the deltas of features.deltas.
  std::int64_t feat_dim = 0;
  try {
    feat_dim = features::ReadKaldiConfig<features::MfccOptions>(s.common().paths.kaldi_mfcc_conf_file).num_ceps;
  } catch (const std::exception& e) {
    recipe::MemoryNeed need;
    need.stage = fmt::format("stage {} ({})", stage.number, stage.name);
    need.note = e.what();
    need.estimated = false;
    return need;
  }
  const auto deltas = s.common().features.deltas;
  feat_dim *= deltas == features::Deltas::kBase ? 1 : deltas == features::Deltas::kDelta ? 2 : 3;
  // The head has a row per training speaker (at most those of recipe.training_datasets' lists).
  std::set<std::string> speakers;
  std::vector<std::string> missing;
  for (const auto& dataset : s.recipe().training_datasets) {
    const std::filesystem::path spk2utt = data::ListFolder(context.feature_and_list_folder(), dataset) / data::kSpk2Utt;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(spk2utt, ec)) {
      missing.push_back(spk2utt.string());
      continue;
    }
    for (const auto& entry : data::ReadSpk2Utt(spk2utt)) speakers.insert(entry.first);
  }
  std::string note;
  if (!missing.empty()) {
    note = fmt::format("the head is not counted in full: {} do{} not exist yet", fmt::join(missing, ", "),
                       missing.size() == 1 ? "es" : "");
  }
  const auto classes = std::max<std::int64_t>(2, static_cast<std::int64_t>(speakers.size()));
  auto net = nnet::MakeXvectorNet(network, feat_dim, classes);
  return voxceleb::MeasureTrainingStep(stage, *net, feat_dim, network.max_clip_size, network.optimizer,
                                       "network.minibatch_size", network.minibatch_size, examples, note);
}

}  // namespace asv::recipes::voxceleb_xvector
