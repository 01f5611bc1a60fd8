// The tiny sitw/xvector configs of the end-to-end tests (sitw_recipe_e2e_test.cc,
// sitw_dist_e2e_test.cc): every stage on the tiny synthetic corpus (VoxCeleb1, VoxCeleb2 and SITW
// layouts) with a tiny x-vector network and cosine scoring.
#pragma once

#include <filesystem>
#include <string>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv::testing {

inline const std::string kSitwConfigs = std::string(R"(# Every stage on the tiny corpus with a tiny network
tiny
paths.system_folder = 'tiny_system'
recipe.start_stage = 0
recipe.end_stage = 9
recipe.preparation_datasets = ['voxceleb1', 'voxceleb2', 'sitw']
recipe.feature_extraction_datasets = ['voxceleb1_cat', 'voxceleb2_cat', 'sitw']
recipe.augmentation_datasets = {'voxceleb1_cat': 2}
recipe.training_datasets = ['voxceleb1_cat_combined', 'voxceleb2_cat']
recipe.plda_datasets = ['voxceleb1_cat_combined', 'voxceleb2_cat']
recipe.evaluation_plda_datasets = ['voxceleb1_cat_combined', 'voxceleb2_cat']
recipe.min_speech_frames = 50
recipe.min_utterances_per_speaker = 1
recipe.plda_speakers_during_training = 5
)") + kTinyXvectorNetwork + R"(computing.use_gpu = False
computing.network_dataloader_workers = 1
computing.feature_extraction_workers = 2
)";

inline constexpr const char* kSitwInitConfig =
    "paths.output_folder = 'out'\n"
    "paths.feature_and_list_folder = 'datasets'\n"
    "paths.datasets = {'voxceleb1': 'corpus/voxceleb1', 'voxceleb2': 'corpus/voxceleb2', 'sitw': 'corpus/sitw'}\n"
    "paths.musan_folder = 'corpus/musan'\n"
    "paths.rirs_folder = 'corpus/RIRS_NOISES'\n";

/// Sets `dir` up for the sitw/xvector tests: the shared tiny corpus linked as corpus/, and
/// configs/{run_configs,init_config,mfcc.conf} (kSitwConfigs, kSitwInitConfig, the recipe's
/// mfcc.conf). Returns LinkTinyCorpus's result (status 0: ready).
inline CommandResult SetUpSitwDir(const ScratchDir& dir) {
  auto corpus = LinkTinyCorpus(dir.path());
  if (corpus.status != 0) return corpus;
  dir.Write("configs/run_configs", kSitwConfigs);
  dir.Write("configs/init_config", kSitwInitConfig);
  std::filesystem::copy_file(std::filesystem::path(ASV_SOURCE_DIR) / "run_configs/sitw/xvector/mfcc.conf",
                             dir / "configs/mfcc.conf");
  return corpus;
}

}  // namespace asv::testing
