// Everything a running stage may need: its settings, where outputs go, the experiment database
// and the process's place in a data-parallel job.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "asvcpp/recipe/recipe.h"

namespace asv::db {
class Database;
}

namespace asv::recipe {

class RunContext {
 public:
  /// `db` may be null (dry runs and tests); `output_folder` must be absolute.
  RunContext(std::string recipe, std::string config, RecipeSettings& settings,
             std::filesystem::path output_folder, db::Database* db, std::int64_t run_id)
      : recipe_(std::move(recipe)),
        config_(std::move(config)),
        settings_(settings),
        output_folder_(std::move(output_folder)),
        db_(db),
        run_id_(run_id) {}

  const std::string& recipe() const noexcept { return recipe_; }
  const std::string& config() const noexcept { return config_; }
  RecipeSettings& settings() noexcept { return settings_; }
  /// paths.output_folder made absolute against the folder asvrun started in.
  const std::filesystem::path& output_folder() const noexcept { return output_folder_; }
  /// <output_folder>/<paths.system_folder>
  std::filesystem::path system_folder() const {
    return output_folder_ / settings_.common().paths.system_folder;
  }
  /// <output_folder>/<paths.feature_and_list_folder>
  std::filesystem::path feature_and_list_folder() const {
    return output_folder_ / settings_.common().paths.feature_and_list_folder;
  }

  db::Database* db() noexcept { return db_; }
  std::int64_t run_id() const noexcept { return run_id_; }
  /// Id of the stage being run (set by the stage driver), 0 outside stages.
  std::int64_t stage_id() const noexcept { return stage_id_; }
  void set_stage_id(std::int64_t id) noexcept { stage_id_ = id; }

  int rank() const noexcept { return rank_; }
  int world_size() const noexcept { return world_size_; }
  bool is_rank0() const noexcept { return rank_ == 0; }
  void set_rank(int rank, int world_size) noexcept {
    rank_ = rank;
    world_size_ = world_size;
  }

 private:
  std::string recipe_;
  std::string config_;
  RecipeSettings& settings_;
  std::filesystem::path output_folder_;
  db::Database* db_ = nullptr;
  std::int64_t run_id_ = 0;
  std::int64_t stage_id_ = 0;
  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace asv::recipe
