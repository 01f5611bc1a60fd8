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
void RunStages(const Recipe& recipe, const StageRunner& runner, RunContext& context);

}  // namespace asv::recipe
