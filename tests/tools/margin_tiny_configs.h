// The tiny voxceleb/margin configs of the end-to-end tests (margin_recipe_e2e_test.cc,
// margin_dist_e2e_test.cc): every stage on the tiny synthetic corpus with a tiny ECAPA-TDNN.
#pragma once

namespace asv::testing {

inline constexpr const char* kConfigs = R"(# Every stage on the tiny corpus with a tiny model
tiny
paths.system_folder = 'tiny_system'
recipe.start_stage = 0
recipe.end_stage = 9
recipe.preparation_datasets = ['voxceleb1', 'voxceleb2']
recipe.pcm_datasets = ['voxceleb2', 'voxceleb1']
recipe.trial_lists = {'tiny_trials': 'veri_test.txt'}
recipe.training_trial_lists = ['tiny_trials']
recipe.backend_utterances = 20
recipe.model = 'ECAPA_TDNN_c512'
recipe.channels = 16
recipe.embedding_size = 16
recipe.num_mel_bins = 24
recipe.frame_length = 30
recipe.num_frames = 50
recipe.min_num_frames = 50
recipe.increase_start_epoch = 2
recipe.fix_start_epoch = 3
recipe.warm_up_epochs = 1
recipe.spec_augment = True
recipe.num_average = 2
recipe.lm_epochs = 2
recipe.lm_num_frames = 100
recipe.lm_minibatch_size = 8
recipe.lm_initial_learning_rate = 0.01
recipe.lm_final_learning_rate = 0.005
network.minibatch_size = 8
network.max_epochs = 3
network.epochs_per_train_call = 1
network.print_interval = 5
network.initial_learning_rate = 0.05
computing.network_dataloader_workers = 1
computing.feature_extraction_workers = 2
computing.use_gpu = False
)";

inline constexpr const char* kInitConfig =
    "paths.output_folder = 'out'\n"
    "paths.feature_and_list_folder = 'datasets'\n"
    "paths.datasets = {'voxceleb1': 'corpus/voxceleb1', 'voxceleb2': 'corpus/voxceleb2'}\n"
    "paths.musan_folder = 'corpus/musan'\n"
    "paths.rirs_folder = 'corpus/RIRS_NOISES'\n"
    "network.minibatch_size = 128\n"
    "network.momentum = 0.9\n"
    "network.validation_utterances = 0\n"
    "network.weight_decay_skiplist = []\n"
    "backend.processing = 'c'\n"
    "backend.scoring = 'cosine'\n"
    "backend.other_p_targets = [0.01, 0.001]\n";

}  // namespace asv::testing
