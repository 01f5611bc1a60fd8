// A recipe: an ordered list of numbered stages plus the settings groups it reads.
//
// voxceleb/xvector, for instance, has stages 0 prepare, 1 features, 2 augmentation, 5 network
// training, 7 embedding extraction and 9 scoring, numbered as in ASVtorch's
// asvtorch/recipes/voxceleb/xvector/run.py (README.md, "The voxceleb/xvector recipe").
// `recipe.start_stage` and `recipe.end_stage` select the stages a run config executes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/recipe/memory_check.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/settings/settings_tree.h"

namespace asv::recipe {

class RunContext;

/// One numbered stage of a recipe.
struct StageInfo {
  int number = 0;
  std::string name;         ///< Short name, e.g. "prepare", "features".
  std::string description;  ///< One line for --dry-run and `asvrun list`.
  bool all_ranks = false;   ///< Runs on every rank (training); otherwise on global rank 0 only.
};

/// A global batch setting of a run: the examples of one training step over all ranks, which each
/// rank trains on `examples / world size` of.
struct GlobalBatch {
  std::string key;           ///< The setting, e.g. "network.minibatch_size".
  std::int64_t examples = 0;  ///< Its value.
  /// Fewest examples one rank may train on: 2 where the network normalises pooled vectors with
  /// BatchNorm (training mode needs more than one value per channel), else 1.
  int min_per_rank = 1;
  /// Why min_per_rank is 2, e.g. "ECAPA_TDNN_c512 normalises its pooled vectors with BatchNorm".
  std::string why;
};

/// The settings of one run of a recipe: the common groups (paths, computing, network, ...) and the
/// recipe's own groups, all behind one SettingsTree. Not copyable: the tree points into it.
class RecipeSettings {
 public:
  RecipeSettings() = default;
  RecipeSettings(const RecipeSettings&) = delete;
  RecipeSettings& operator=(const RecipeSettings&) = delete;
  virtual ~RecipeSettings() = default;

  settings::Settings& common() noexcept { return common_; }
  const settings::Settings& common() const noexcept { return common_; }
  settings::SettingsTree& tree() noexcept { return tree_; }
  const settings::SettingsTree& tree() const noexcept { return tree_; }

  /// First and last stage to run (inclusive), from the recipe's own group.
  virtual int start_stage() const = 0;
  virtual int end_stage() const = 0;
  /// The global batch settings of the training stages this run selects (none when it trains
  /// nothing), checked against the world size by CheckGlobalBatches.
  virtual std::vector<GlobalBatch> GlobalBatches() const { return {}; }

 protected:
  settings::Settings common_;
  settings::SettingsTree tree_;
};

/// Checks every global batch of `settings` against `world_size` training processes: each must be a
/// multiple of the world size (a remainder would be dropped without a word) that gives every rank
/// at least GlobalBatch::min_per_rank examples. Throws ConfigError listing every batch that fails,
/// each with the setting, the world size and the nearest valid values. `world_size` >= 1.
void CheckGlobalBatches(const RecipeSettings& settings, int world_size);

/// A recipe such as voxceleb/xvector: its name, stages and settings, all that resolving,
/// showing and listing configs need (recipes/catalog.h). Running the stages is a StageRunner's
/// job, kept apart because stages link LibTorch while `asvrun show/list/runs/...` do not.
/// Implementations live under recipes/.
class Recipe {
 public:
  virtual ~Recipe() = default;

  /// "corpus/system", e.g. "voxceleb/xvector"; also the folder under run_configs/.
  virtual std::string name() const = 0;
  /// All stages in ascending order of number.
  virtual std::vector<StageInfo> stages() const = 0;
  /// Fresh settings with compiled defaults, the tree covering every group.
  virtual std::unique_ptr<RecipeSettings> NewSettings() const = 0;

  /// The stages with start <= number <= end, in order.
  std::vector<StageInfo> SelectStages(int start, int end) const;
};

/// Runs the stages of one recipe (recipes/registry.h finds a recipe's runner).
class StageRunner {
 public:
  virtual ~StageRunner() = default;
  /// True when this runner can run `stage` (one of its recipe's stages()).
  virtual bool HasStage(const StageInfo& stage) const = 0;
  /// Runs one stage of the recipe, whose settings `context` holds. Throws StageError (or
  /// DataError) on failure, also for a stage number the recipe does not have.
  virtual void RunStage(const StageInfo& stage, RunContext& context) const = 0;
  /// The inputs `stage` would read that are missing (one line each, naming the file or folder
  /// and the setting it comes from), for `asvrun --dry-run`. `earlier` holds the numbers of the
  /// stages that run before it in the same run: what they produce counts as present. Never
  /// throws for missing inputs. The default checks nothing.
  virtual std::vector<std::string> MissingInputs(const StageInfo& /*stage*/, RunContext& /*context*/,
                                                 const std::vector<int>& /*earlier*/) const {
    return {};
  }
  /// The memory of one training step of `stage` on every rank (the model and the activations of
  /// one example; asvcpp/recipe/memory_check.h), for `asvrun --dry-run`; nullopt for a stage
  /// that does not train. Builds the network on the CPU and runs two small steps. The default
  /// trains nothing.
  virtual std::optional<MemoryNeed> TrainingMemory(const StageInfo& /*stage*/, RunContext& /*context*/) const {
    return std::nullopt;
  }
};

}  // namespace asv::recipe
