// What each stage of the x-vector recipes reads, checked before anything runs (`asvrun --dry-run`), so
// that a dry run that passes means the run will not stop for a missing input:
//   0 prepare       each corpus folder of the prepared datasets, with wav/ (VoxCeleb1),
//                   dev/aac or test/aac (VoxCeleb2) or eval/lists/enroll-core.lst (SITW)
//   1 features      mfcc.conf (readable, valid, at features.sampling_rate) and each dataset's
//                   lists/wav.scp
//   2 augmentation  MUSAN and RIRS_NOISES folders, mfcc.conf, each dataset's lists/feats.scp
//   5 train         features of the training, PLDA and trial datasets, the training trial lists
//   7 embeddings    the network checkpoint, features of the PLDA and trial datasets, and at
//                   least one trial list
//   9 scoring       the embeddings of stage 7 and at least one trial list
// An input that an earlier stage of the same run produces (stage 0's lists, stage 1's and 2's
// features, stage 5's checkpoints, stage 7's embeddings) counts as present.
#pragma once

#include <string>
#include <vector>

#include "asvcpp/recipe/recipe.h"

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::xvector {

class XvectorSettings;

/// The inputs of `stage` that are missing, one line each naming the file or folder and the
/// setting it comes from; empty when all are there. `earlier` holds the numbers of the stages
/// that run before `stage` in this run; `known` the corpora the recipe's stage 0 prepares
/// (shared::ResolvePreparationJobs). Never throws for missing or invalid inputs (they are
/// reported); throws std::bad_cast only when `context` holds another recipe's settings.
std::vector<std::string> MissingStageInputs(const recipe::StageInfo& stage, recipe::RunContext& context,
                                            const std::vector<int>& earlier, const std::vector<std::string>& known);

}  // namespace asv::recipes::xvector
