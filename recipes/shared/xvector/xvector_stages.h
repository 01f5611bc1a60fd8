// Runs the stages of an x-vector recipe (voxceleb/xvector, sitw/xvector): the recipe's own
// stage 0 (preparation of its corpora) and the shared stages 1 features (stage_features.h),
// 2 augmentation (stage_augment.h), 5 training (stage_train.h), 7 embedding extraction
// (stage_embeddings.h) and 9 scoring (stage_scoring.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"

namespace asv::recipes::xvector {

class XvectorStageRunner : public recipe::StageRunner {
 public:
  /// `recipe` the recipe's name (for messages), `prepare` its stage 0, `known` the corpora that
  /// stage 0 prepares (shared::ResolvePreparationJobs).
  XvectorStageRunner(std::string recipe, void (*prepare)(recipe::RunContext&), std::vector<std::string> known);

  bool HasStage(const recipe::StageInfo& stage) const override;
  /// Runs `stage` (found by its name) with the XvectorSettings that `context` holds. Throws
  /// StageError when the context holds another recipe's settings and for a stage the recipe does
  /// not have; the stages' own errors pass through.
  void RunStage(const recipe::StageInfo& stage, recipe::RunContext& context) const override;
  /// MissingStageInputs (stage_inputs.h).
  std::vector<std::string> MissingInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                         const std::vector<int>& earlier) const override;
  /// One training step of stage 5 measured on the CPU (shared::MeasureTrainingStep) for the
  /// network of the settings, with a head of as many rows as recipe.training_datasets' lists
  /// have speakers; nullopt for the other stages.
  std::optional<recipe::MemoryNeed> TrainingMemory(const recipe::StageInfo& stage,
                                                   recipe::RunContext& context) const override;

 private:
  std::string recipe_;
  void (*prepare_)(recipe::RunContext&);
  std::vector<std::string> known_;
};

}  // namespace asv::recipes::xvector
