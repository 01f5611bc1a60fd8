// Runs a config's selected stages in ascending order and records each one (start, end, status,
// error) in the experiment database.
#pragma once

#include "asvcpp/recipe/recipe.h"
#include "asvcpp/recipe/run_context.h"

namespace asv::recipe {

/// Runs every stage of `recipe` with start_stage <= number <= end_stage (from the context's
/// settings), each through `runner`, on this rank: stages marked all_ranks everywhere, the others
/// on global rank 0 only. In a data-parallel job (world size > 1 with a coordinator) the other ranks wait for
/// rank 0, without timeout, before each all-ranks stage. Each stage is recorded as running, then
/// finished or failed (with the error text), by the rank that has the database (rank 0).
/// Rethrows the first stage's exception after recording it; later stages are not started.
/// Records that waited for a locked database (RunContext's Record*) are written at the end,
/// waiting up to 10 minutes; DbError when they still cannot be. While the stages run, a file
/// without its checksum file is checked against the checksum the database recorded, and a
/// checkpoint with neither is refused unless network.allow_unverified_checkpoints
/// (asvcpp/base/checksum.h, fs::ChecksumPolicy).
void RunStages(const Recipe& recipe, const StageRunner& runner, RunContext& context);

}  // namespace asv::recipe
