// Everything a running stage may need: its settings, where outputs go, the experiment database
// (through Record* bound to the run and the stage being run) and the process's place in a
// data-parallel job.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "asvcpp/recipe/recipe.h"

namespace asv::db {
class Database;
struct EpochRecord;
struct ResultRecord;
}  // namespace asv::db
namespace asv::train {
class GradientReducer;
}

namespace asv::recipe {

/// The LibTorch-free face of a data-parallel job's rendezvous store, for the stage driver:
/// rank 0 signals keys, the other ranks wait for them without any timeout (rank 0 may work alone
/// for hours, e.g. extracting features). Implemented over distributed::ProcessGroup in asvrun.
class RankCoordinator {
 public:
  virtual ~RankCoordinator() = default;
  /// Sets `key` (any rank).
  virtual void Signal(const std::string& key) = 0;
  /// Blocks until `key` is set. Throws when another rank failed or the store is gone.
  virtual void WaitFor(const std::string& key) = 0;
};

class RunContext {
 public:
  /// `db` may be null (dry runs and tests); `output_folder` must be absolute.
  RunContext(std::string recipe, std::string config, RecipeSettings& settings, std::filesystem::path output_folder,
             db::Database* db, std::int64_t run_id)
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
  std::filesystem::path system_folder() const { return output_folder_ / settings_.common().paths.system_folder; }
  /// <output_folder>/<paths.feature_and_list_folder>
  std::filesystem::path feature_and_list_folder() const {
    return output_folder_ / settings_.common().paths.feature_and_list_folder;
  }

  db::Database* db() noexcept { return db_; }
  std::int64_t run_id() const noexcept { return run_id_; }
  /// Database id of the stage being run (set by the stage driver), 0 outside stages and without
  /// a database.
  std::int64_t stage_id() const noexcept { return stage_id_; }
  /// Number of the stage being run (e.g. 5), nullopt outside stages.
  std::optional<int> stage_number() const noexcept { return stage_number_; }
  /// Set by the stage driver around each stage: its database row (0: none) and number.
  void set_stage(std::int64_t id, std::optional<int> number) noexcept {
    stage_id_ = id;
    stage_number_ = number;
  }

  // Recording into the experiment database, bound to this run and the stage being run. Each is a
  // no-op without a database (dry runs, tests) and throws DbError when writing fails. A database
  // that another process keeps locked longer than a write waits (DbBusyError) fails nothing: the
  // record is kept, in order, and written with the next one or by FlushRecords at the end of the
  // run, so that a training run never dies of slow bookkeeping.

  /// Records `file` as an artifact of `kind` ("list", "features", "model", ...) with its size in
  /// bytes from the file system and its checksum, fs::FileChecksum (asvcpp/base/checksum.h:
  /// "sha256:<hex>", reading the whole file); a missing file gets size 0 and no checksum. Throws DataError when the
  /// file exists but cannot be read.
  void RecordArtifact(const std::filesystem::path& file, const std::string& kind);
  /// As RecordArtifact, with a checksum its writer computed ("sha256:<hex>"), so that a large file
  /// (a PCM store's samples) is not read again. Throws DataError when the file's size cannot be read.
  void RecordArtifactWithChecksum(const std::filesystem::path& file, const std::string& kind,
                                  const std::string& checksum);
  /// Records every regular file directly in `folder` (sorted by name) as an artifact of `kind`;
  /// each sub-folder (such as voxceleb2_cat's cat/ with one list per video) as one artifact whose
  /// size is the total of its files, without a checksum. Throws DataError when `folder` cannot
  /// be listed or one of its files cannot be read.
  void RecordFolderArtifacts(const std::filesystem::path& folder, const std::string& kind);
  /// Records (or replaces) one epoch's figures.
  void RecordEpoch(const db::EpochRecord& epoch);
  /// Records one evaluation result; its stage is the stage being run unless `result.stage` is set.
  void RecordResult(db::ResultRecord result);

  /// Records that are waiting for a locked database.
  std::size_t pending_records() const noexcept { return pending_.size(); }
  /// Writes every waiting record in order, retrying while the database stays locked for up to
  /// `patience`. Throws DbError saying how many records could not be written (and the first
  /// one's error) when it is still locked then; they stay pending.
  void FlushRecords(std::chrono::milliseconds patience);

  int rank() const noexcept { return rank_; }
  int world_size() const noexcept { return world_size_; }
  bool is_rank0() const noexcept { return rank_ == 0; }
  void set_rank(int rank, int world_size) noexcept {
    rank_ = rank;
    world_size_ = world_size;
  }

  /// Torch device of this process: "cpu" (the default) or "cuda:N", set by asvrun (each worker
  /// is pinned to its GPU; a single process gets train::SelectDevice of computing.use_gpu and
  /// computing.gpu_ids).
  const std::string& device() const noexcept { return device_; }
  void set_device(std::string device) { device_ = std::move(device); }

  /// Gradient reducer for training stages; null in a single process (train::NoOpReducer).
  const std::shared_ptr<train::GradientReducer>& reducer() const noexcept { return reducer_; }
  void set_reducer(std::shared_ptr<train::GradientReducer> reducer) { reducer_ = std::move(reducer); }

  /// Rendezvous for the stage driver; null in a single process.
  RankCoordinator* coordinator() const noexcept { return coordinator_; }
  void set_coordinator(RankCoordinator* coordinator) noexcept { coordinator_ = coordinator; }

 private:
  // One artifact row of `bytes` for the run and the stage being run (a database is attached).
  void RecordArtifactOfSize(const std::filesystem::path& path, const std::string& kind, std::int64_t bytes,
                            const std::string& checksum = "");

  // Writes `write` (one record) now, or after the records already waiting; keeps it waiting when the
  // database is locked (see the Record* members).
  void Record(const char* what, std::function<void()> write);
  // Writes waiting records while each succeeds within `limit`; false when some are still waiting.
  bool TryFlush(std::chrono::milliseconds limit);

  struct PendingRecord {
    std::string what;
    std::function<void()> write;
  };

  std::string recipe_;
  std::string config_;
  RecipeSettings& settings_;
  std::filesystem::path output_folder_;
  db::Database* db_ = nullptr;
  std::int64_t run_id_ = 0;
  std::int64_t stage_id_ = 0;
  std::optional<int> stage_number_;
  int rank_ = 0;
  int world_size_ = 1;
  std::string device_ = "cpu";
  std::shared_ptr<train::GradientReducer> reducer_;
  RankCoordinator* coordinator_ = nullptr;
  std::deque<PendingRecord> pending_;
};

}  // namespace asv::recipe
