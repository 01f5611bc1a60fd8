// `recipe.*` settings of the voxceleb/margin recipe: WeSpeaker's voxceleb/v2 training of
// embedding models (ResNet34, ECAPA-TDNN) with a margin-softmax head on fbank of random 2 s
// segments, augmented on the fly. The defaults are WeSpeaker's (examples/voxceleb/v2/conf/
// resnet.yaml and ecapa_tdnn.yaml): model, head, margin schedule, learning-rate decay, segment
// length, filter, speed perturbation, augmentation probability, fbank and model averaging. The
// `network.*` group gives what the x-vector recipe shares with it (minibatch_size, max_epochs,
// initial_learning_rate, momentum, weight_decay, precision, resume_epoch, epochs_per_train_call),
// with this recipe's values in its init_config.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/settings/settings.h"
#include "asvcpp/settings/settings_tree.h"
#include "asvcpp/settings/types.h"

namespace asv::recipes::voxceleb_margin {

/// Margins are angles (arc_margin, radians) or cosine offsets (add_margin): both below pi/2, where
/// an additive angular margin would turn a target's cosine into its opposite.
inline constexpr double kMaxMargin = 1.5707963267948966;

struct RecipeSettings {
  /// The run's network.* group, for the checks across groups (warm-up within the epochs); set by
  /// MarginSettings, null in a default-constructed group.
  const settings::NetworkSettings* network = nullptr;

  int start_stage = 0;
  int end_stage = 100;
  std::optional<std::vector<std::string>> preparation_datasets;
  std::vector<std::string> pcm_datasets = {"voxceleb2", "voxceleb1"};
  std::string training_dataset = "voxceleb2";
  std::string trial_dataset = "voxceleb1";
  settings::OrderedDict<std::string> trial_lists = {
      {"vox1_original", "veri_test.txt"},
      {"vox1_cleaned", "veri_test2.txt"},
      {"vox1_extended_original", "list_test_all.txt"},
      {"vox1_extended_cleaned", "list_test_all2.txt"},
      {"vox1_hard_original", "list_test_hard.txt"},
      {"vox1_hard_cleaned", "list_test_hard2.txt"},
  };
  std::vector<std::string> training_trial_lists = {"vox1_cleaned"};
  int backend_utterances = 5000;
  int seed = 0;

  std::string model = "ResNet34";
  int embedding_size = 256;
  std::optional<int> channels;
  std::string head = "arc_margin";
  double scale = 32.0;
  bool easy_margin = false;
  double initial_margin = 0.0;
  double final_margin = 0.2;
  int increase_start_epoch = 20;
  int fix_start_epoch = 40;
  std::string increase_type = "exp";
  double final_learning_rate = 5e-5;
  int warm_up_epochs = 6;
  bool nesterov = true;
  bool channels_last = true;

  int num_frames = 200;
  int min_num_frames = 100;
  int max_num_frames = 800;
  bool speed_perturb = true;
  double aug_prob = 0.6;
  bool spec_augment = false;
  int num_mel_bins = 80;
  int frame_length = 25;
  int frame_shift = 10;
  double dither = 1.0;

  int num_average = 10;
  std::optional<int> selected_epoch;
  std::string pretrained_model;

  // Large-margin fine-tuning (stage 7): WeSpeaker's conf/resnet_lm.yaml, without speed
  // perturbation.
  int lm_epochs = 5;
  int lm_num_frames = 600;
  double lm_margin = 0.5;
  bool lm_speed_perturb = false;
  double lm_initial_learning_rate = 1e-4;
  double lm_final_learning_rate = 2.5e-5;
  int lm_warm_up_epochs = 1;
  int lm_minibatch_size = 64;
  int lm_num_average = 1;
  int lm_resume_epoch = 0;

  /// Whether stage `stage` lies in [start_stage, end_stage].
  bool StageSelected(int stage) const { return start_stage <= stage && stage <= end_stage; }
  /// Stage 5 starts from recipe.pretrained_model.
  bool PretrainedStartsTraining() const { return !pretrained_model.empty() && start_stage <= 5; }
  /// Stage 7 starts from recipe.pretrained_model instead of stage 6's averaged model.
  bool PretrainedStartsFineTuning() const {
    return !pretrained_model.empty() && start_stage >= 6 && start_stage <= 7 && lm_epochs > 0;
  }
  /// Stage 8 extracts with recipe.pretrained_model itself (no training stage of this run uses it).
  bool PretrainedIsExtracted() const {
    return !pretrained_model.empty() && !PretrainedStartsTraining() && !PretrainedStartsFineTuning();
  }

  template <class V>
  void Register(V& v) {
    v("start_stage", start_stage,
      "First stage to run (0 prepare, 1 PCM stores, 5 training, 6 model averaging, 7 large-margin fine-tuning, "
      "8 embeddings, 9 scoring)")
        .Range(0, 1000);
    v("end_stage", end_stage, "Last stage to run").Range(0, 1000);
    v("preparation_datasets", preparation_datasets, "Datasets prepared by stage 0 (voxceleb1, voxceleb2); None: all");
    v("pcm_datasets", pcm_datasets, "Datasets whose audio stage 1 decodes once into a PCM store (16 kHz int16)");
    v("training_dataset", training_dataset, "Dataset whose utterances train the network (WeSpeaker: VoxCeleb2 dev)");
    v("trial_dataset", trial_dataset, "Dataset holding the trial utterances and trial lists");
    v("trial_lists", trial_lists, "Trial lists scored by stage 9: display name -> file in the trial dataset");
    v("training_trial_lists", training_trial_lists,
      "Display names (keys of trial_lists) scored every network.epochs_per_train_call epochs during training");
    v("backend_utterances", backend_utterances,
      "Random training utterances whose embeddings train the back end's processing (the mean that cosine scoring "
      "subtracts)")
        .Range(1, 1e8);
    v("seed", seed, "Seed of the segment draws, the augmentation draws and the back-end utterances")
        .Range(0, 2147483647);
    v("model", model, "Embedding model (WeSpeaker's names)")
        .Choices({"ResNet34", "ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512", "ECAPA_TDNN_c1024", "ECAPA_TDNN_GLOB_c1024"});
    v("embedding_size", embedding_size, "Embedding dimension (WeSpeaker: 256 for ResNet34, 192 for ECAPA-TDNN)")
        .Range(1, 8192);
    v("channels", channels,
      "Width of the model: ResNet's m_channels, ECAPA-TDNN's C; None: the model's own (32; 512 or 1024)")
        .Range(8, 4096);
    v("head", head,
      "Training head: arc_margin (AAM-softmax, ArcFace), add_margin (AM-softmax, CosFace) or softmax")
        .Choices({"arc_margin", "add_margin", "softmax"});
    v("scale", scale, "Scale s of the margin heads' cosines").Positive().Max(10000);
    v("easy_margin", easy_margin, "arc_margin: apply the margin only where the cosine is positive");
    v("initial_margin", initial_margin, "Margin before recipe.increase_start_epoch").Min(0).Below(kMaxMargin);
    v("final_margin", final_margin, "Margin from recipe.fix_start_epoch on (radians for arc_margin)")
        .Min(0).Below(kMaxMargin);
    v("increase_start_epoch", increase_start_epoch, "First epoch of the margin increase").Range(1, 1e6);
    v("fix_start_epoch", fix_start_epoch, "First epoch with the final margin").Range(1, 1e6);
    v("increase_type", increase_type, "Margin increase: exp or linear").Choices({"exp", "linear"});
    v("final_learning_rate", final_learning_rate,
      "Learning rate reached after network.max_epochs (exponential decay from network.initial_learning_rate)")
        .Positive().Max(100);
    v("warm_up_epochs", warm_up_epochs, "Epochs of linear warm-up from 0 at the start").Range(0, 1e6);
    v("nesterov", nesterov, "Nesterov momentum (network.optimizer = 'sgd')");
    v("channels_last", channels_last,
      "ResNet34 on a GPU: channels-last (NHWC) activations for the 2-D convolutions, cuDNN's faster layout");
    v("num_frames", num_frames, "Fbank frames of a training segment (200: 2.015 s)").Range(2, 1e6);
    v("min_num_frames", min_num_frames, "Training utterances shorter than this many 10 ms frames are dropped")
        .Range(0, 1e7);
    v("max_num_frames", max_num_frames, "Longer utterances are cut to a random window of this many frames")
        .Range(1, 1e7);
    v("speed_perturb", speed_perturb, "Speed perturbation 0.9 / 1.1 as new speakers (3x the training speakers)");
    v("aug_prob", aug_prob,
      "Probability that a segment is reverberated (RIRS_NOISES) or mixed with MUSAN noise, music or babble")
        .Range(0, 1);
    v("spec_augment", spec_augment, "SpecAugment time and frequency masks on the training fbank");
    v("num_mel_bins", num_mel_bins, "Fbank mel bins (the models' input dimension; ResNet34 needs a multiple of 8)")
        .Range(8, 256);
    v("frame_length", frame_length, "Fbank frame length, ms (WeSpeaker's fbank_args.frame_length)").Range(1, 1000);
    v("frame_shift", frame_shift,
      "Fbank frame shift, ms: the frames of num_frames, min_num_frames and max_num_frames are this long")
        .Range(1, 1000);
    v("dither", dither, "Dither of the training fbank (sample units; extraction uses none)").Range(0, 32768);
    v("num_average", num_average, "Stage 6 averages the last this many epochs' checkpoints").Range(1, 1e6);
    v("selected_epoch", selected_epoch,
      "Checkpoint of stage 5 used by stage 8 instead of the averaged model (None: the average of stage 7, or of "
      "stage 6 when recipe.lm_epochs = 0)")
        .Range(1, 1e6);
    v("pretrained_model", pretrained_model,
      "WeSpeaker model directory (avg_model.pt + config.yaml, e.g. of its model zoo) to start from: stage 5 "
      "trains from it (start_stage <= 5), else stage 7 fine-tunes from it (start_stage 6-7, lm_epochs > 0), else "
      "stage 8 extracts with it; its config.yaml must match recipe.model, embedding_size, num_mel_bins, "
      "frame_length and frame_shift; '' for none");
    v("lm_epochs", lm_epochs,
      "Epochs of large-margin fine-tuning (stage 7) from the averaged model of stage 6; 0: none, stage 8 uses "
      "the averaged model of stage 6")
        .Range(0, 1e6);
    v("lm_num_frames", lm_num_frames, "Fbank frames of a fine-tuning segment (600: 6 s)").Range(2, 1e6);
    v("lm_margin", lm_margin, "Fixed margin of the fine-tuning (radians for arc_margin)").Min(0).Below(kMaxMargin);
    v("lm_speed_perturb", lm_speed_perturb,
      "Speed perturbation as new speakers during fine-tuning (the head's rows are mapped when the class count "
      "changes)");
    v("lm_initial_learning_rate", lm_initial_learning_rate, "Fine-tuning learning rate after its warm-up")
        .Positive().Max(100);
    v("lm_final_learning_rate", lm_final_learning_rate, "Fine-tuning learning rate at its last step")
        .Positive()
        .Max(100);
    v("lm_warm_up_epochs", lm_warm_up_epochs, "Fine-tuning epochs of linear warm-up from 0").Range(0, 1e6);
    v("lm_minibatch_size", lm_minibatch_size, "Fine-tuning segments per step over all ranks").Range(1, 1048576);
    v("lm_num_average", lm_num_average, "Stage 7 averages the last this many fine-tuning checkpoints").Range(1, 1e6);
    v("lm_resume_epoch", lm_resume_epoch,
      "Fine-tuning's network.resume_epoch: 0 starts from the averaged model, N > 0 resumes from fine-tuning "
      "epoch N")
        .Range(0, 1e6);
  }

  void Validate(settings::Validator& v) const {
    v.Require(start_stage <= end_stage, {"start_stage", "end_stage"},
              fmt::format("recipe.end_stage ({}) must be >= recipe.start_stage ({})", end_stage, start_stage));
    v.Require(increase_start_epoch <= fix_start_epoch, {"increase_start_epoch", "fix_start_epoch"},
              fmt::format("recipe.fix_start_epoch ({}) must be >= recipe.increase_start_epoch ({})", fix_start_epoch,
                          increase_start_epoch));
    v.Require(frame_shift <= frame_length, {"frame_shift", "frame_length"},
              fmt::format("recipe.frame_shift ({} ms) must be <= recipe.frame_length ({} ms)", frame_shift, frame_length));
    v.Require(min_num_frames <= max_num_frames, {"min_num_frames", "max_num_frames"},
              fmt::format("recipe.max_num_frames ({}) must be >= recipe.min_num_frames ({})", max_num_frames,
                          min_num_frames));
    v.Require(lm_warm_up_epochs <= lm_epochs, {"lm_warm_up_epochs", "lm_epochs"},
              fmt::format("recipe.lm_warm_up_epochs ({}) must be <= recipe.lm_epochs ({})", lm_warm_up_epochs,
                          lm_epochs));
    if (network != nullptr) {
      v.Require(warm_up_epochs <= network->max_epochs, {"warm_up_epochs"},
                fmt::format("recipe.warm_up_epochs ({}) must be <= network.max_epochs ({})", warm_up_epochs,
                            network->max_epochs));
    }
    v.Require(lm_resume_epoch <= lm_epochs, {"lm_resume_epoch", "lm_epochs"},
              fmt::format("recipe.lm_resume_epoch ({}) must be <= recipe.lm_epochs ({})", lm_resume_epoch, lm_epochs));
    v.Require(pretrained_model.empty() || !channels, {"pretrained_model", "channels"},
              "recipe.pretrained_model needs recipe.channels = None: WeSpeaker's models have their own width");
    v.Require(model != "ResNet34" || num_mel_bins % 8 == 0, {"model", "num_mel_bins"},
              fmt::format("ResNet34 needs recipe.num_mel_bins to be a multiple of 8, got {}", num_mel_bins));
    for (const auto& name : training_trial_lists) {
      v.Require(trial_lists.Contains(name), {"training_trial_lists", "trial_lists"},
                fmt::format("recipe.training_trial_lists names '{}', which is not a key of recipe.trial_lists", name));
    }
  }
};

}  // namespace asv::recipes::voxceleb_margin
