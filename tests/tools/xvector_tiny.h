// What the end-to-end tests of the x-vector recipes share: the tiny network of their configs, and
// the tiny corpus with its voxceleb/xvector features, made once for the tests of a file.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv::testing {

/// The network, training and back-end lines of the tests' tiny x-vector configs (part of a config
/// block): a 32-unit StandardNet with 16-dimensional embeddings, minibatches of 8 clips of 40-60
/// frames, 2 epochs with an evaluation after each, cosine scoring.
inline const std::string kTinyXvectorNetwork =
    "network.frame_layer_size = 32\n"
    "network.stat_size = 64\n"
    "network.embedding_size = 16\n"
    "network.min_clip_size = 40\n"
    "network.max_clip_size = 60\n"
    "network.minibatch_size = 8\n"
    "network.utts_per_speaker_in_epoch = 8\n"
    "network.validation_utterances = 2\n"
    "network.max_epochs = 2\n"
    "network.epochs_per_train_call = 1\n"
    "network.print_interval = 5\n"
    "backend.scoring = 'cosine'\n";

/// The PLDA data, the tiny trial list and the utterance limits of the tests' tiny configs.
inline const std::string kTinyBackEndLines = R"(recipe.plda_datasets = ['voxceleb2_cat']
recipe.trial_lists = {'tiny_trials': 'veri_test.txt'}
recipe.training_trial_lists = ['tiny_trials']
recipe.min_speech_frames = 50
recipe.min_utterances_per_speaker = 2
recipe.plda_speakers_during_training = 5
)";

/// The lines of a tiny training config that follow its name and stage lines in a block whose
/// parent is `features` (kTinyFeaturesBlock): training and PLDA on voxceleb2_cat, the tiny trial
/// list, the tiny network, one CPU data loader.
inline const std::string kTinyTrainingLines = std::string("recipe.training_datasets = ['voxceleb2_cat']\n") +
                                              kTinyBackEndLines + kTinyXvectorNetwork + R"(computing.use_gpu = False
computing.network_dataloader_workers = 1
)";

/// The config block `features` (voxceleb/xvector stages 0-1 of the tiny corpus) that
/// PrepareTinyXvectorFeatures runs; `run_configs` files given to it start with it.
inline const std::string kTinyFeaturesBlock =
    "# Features of the tiny corpus\n"
    "features\n"
    "recipe.start_stage = 0\n"
    "recipe.end_stage = 1\n"
    "recipe.preparation_datasets = ['voxceleb1', 'voxceleb2']\n"
    "recipe.feature_extraction_datasets = ['voxceleb1', 'voxceleb2_cat']\n"
    "computing.feature_extraction_workers = 2\n";

/// A blank line and the config block `tiny < features`: stages 5-9 of the tiny network
/// (kTinyTrainingLines) into the system folder 'tiny_system'. Follows kTinyFeaturesBlock.
inline const std::string kTinyStages5To9Block = R"(
# Tiny network, stages 5-9
tiny < features
paths.system_folder = 'tiny_system'
recipe.start_stage = 5
recipe.end_stage = 9
)" + kTinyTrainingLines;

/// The config block `tiny`: voxceleb/xvector stages 0-9 of the tiny corpus (preparation, features,
/// augmentation, training with in-training evaluation, embeddings, scoring) with the tiny network;
/// tests prepend their own comment line. Use with kTinyInitConfig.
inline const std::string kTinyEveryStageBlock =
    std::string(R"(tiny
paths.system_folder = 'tiny_system'
recipe.start_stage = 0
recipe.end_stage = 9
recipe.preparation_datasets = ['voxceleb1', 'voxceleb2']
recipe.feature_extraction_datasets = ['voxceleb1', 'voxceleb2_cat']
recipe.augmentation_datasets = {'voxceleb2_cat': 2}
recipe.training_datasets = ['voxceleb2_cat_combined']
)") + kTinyBackEndLines + kTinyXvectorNetwork + R"(computing.network_dataloader_workers = 1
computing.feature_extraction_workers = 2
)";

/// The init config of kTinyEveryStageBlock: outputs in out/, the tiny corpus (with MUSAN and the
/// RIRs) under corpus/ of the folder asvrun runs in.
inline constexpr const char* kTinyInitConfig =
    "paths.output_folder = 'out'\n"
    "paths.feature_and_list_folder = 'datasets'\n"
    "paths.datasets = {'voxceleb1': 'corpus/voxceleb1', 'voxceleb2': 'corpus/voxceleb2'}\n"
    "paths.musan_folder = 'corpus/musan'\n"
    "paths.rirs_folder = 'corpus/RIRS_NOISES'\n";

/// Makes `root`/{corpus, out/datasets, run_configs, init_config, mfcc.conf}: the shared tiny corpus
/// (LinkTinyCorpus), `run_configs` (which must hold kTinyFeaturesBlock) and the features of its
/// `features` config, once under a lock in `root` (ctest may run two tests of a file at once),
/// again only when asvrun, the corpus generator or `run_configs` changed. Returns "" or what failed.
inline std::string PrepareTinyXvectorFeatures(const std::filesystem::path& root, const std::string& run_configs) {
  namespace fs = std::filesystem;
  fs::create_directories(root);
  const int lock = ::open((root / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return "cannot lock " + (root / "lock").string();
  std::string stamp;
  for (const fs::path& file : {fs::path(ASV_ASVRUN), fs::path(ASV_SOURCE_DIR) / "tools/make_demo_corpus.py"}) {
    stamp += std::to_string(fs::last_write_time(file).time_since_epoch().count()) + " " +
             std::to_string(fs::file_size(file)) + "\n";
  }
  stamp += run_configs;
  std::string error;
  if (Slurp(root / "ready") != stamp) {
    fs::remove(root / "ready");
    fs::remove_all(root / "corpus");
    fs::remove_all(root / "out");
    const auto corpus = LinkTinyCorpus(root);
    if (corpus.status != 0) error = "no tiny corpus: " + corpus.err;
    if (error.empty()) {
      std::ofstream(root / "run_configs") << run_configs;
      fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", root / "mfcc.conf",
                    fs::copy_options::overwrite_existing);
      std::ofstream(root / "init_config") << "paths.output_folder = 'out'\n"
                                             "paths.feature_and_list_folder = 'datasets'\n"
                                             "paths.datasets = {'voxceleb1': 'corpus/voxceleb1', "
                                             "'voxceleb2': 'corpus/voxceleb2'}\n";
      const auto features = RunCommand({ASV_ASVRUN, "voxceleb/xvector", "features", "--run-configs", "run_configs",
                                        "--init-config", "init_config"},
                                       root);
      if (features.status != 0) error = "feature extraction failed: " + features.err;
    }
    if (error.empty()) std::ofstream(root / "ready") << stamp;
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return error;
}

}  // namespace asv::testing
