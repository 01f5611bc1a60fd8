// Checkpoint files of x-vector training: naming, discovery and ASVtorch's resume_epoch semantics
// (ASVtorch train_network in asvtorch/src/networks/network_training.py).
// Reading and writing the contents: checkpoint_io.h.
#pragma once

#include <filesystem>
#include <optional>

namespace asv::train {

/// `folder`/epoch.<epoch>.pt (ASVtorch's networks/epoch.N.pt).
std::filesystem::path CheckpointPath(const std::filesystem::path& folder, int epoch);

/// Largest N such that `folder`/epoch.N.pt is a regular file; 0 when there is none or the folder
/// is missing. A gap hides nothing: {1, 2, 4} -> 4 (ASVtorch's find_last_epoch stops at the first
/// gap, so a lost middle checkpoint made it fall back to an older network).
int FindLastEpoch(const std::filesystem::path& folder);

/// N of a file named "epoch.N.pt" (N a positive decimal number without sign or leading zero);
/// nullopt for every other name.
std::optional<int> EpochOfCheckpoint(const std::filesystem::path& path);

/// What `network.resume_epoch` asks for.
struct ResumePlan {
  int load_epoch = 0;          ///< checkpoint to load, 0 = none (new network)
  bool evaluate_only = false;  ///< true: load and evaluate, do not train (resume_epoch < 0)
};

/// 0 -> train a new network; N > 0 -> load epoch N and continue with N+1; N < 0 -> load epoch |N|
/// and only evaluate it.
ResumePlan PlanResume(int resume_epoch);

}  // namespace asv::train
