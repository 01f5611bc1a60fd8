// Stages 5 and 6 of voxceleb/margin.
//
// Stage 5 trains recipe.model with recipe.head (WeSpeaker's voxceleb/v2 recipe) on every rank:
// segments of recipe.num_frames frames from the PCM store of recipe.training_dataset (stage 1)
// with the speakers of its utt2spk, speed perturbation as new speakers, reverberation and MUSAN
// noise with probability recipe.aug_prob (paths.musan_folder, paths.rirs_folder), 80-bin fbank
// with dither and segment mean subtraction on the training device, optional SpecAugment; SGD
// with Nesterov momentum, network.weight_decay on every parameter, WeSpeaker's exponential
// learning-rate decay with warm-up and margin schedule per step; checkpoints
// <system>/networks/epoch.N.pt. Every network.epochs_per_train_call epochs rank 0 scores
// recipe.training_trial_lists by cosine similarity (the back end of stage 9) and records the
// EERs; network.eer_stop_epochs stops training early as in voxceleb/xvector.
//
// Stage 6 averages the last recipe.num_average checkpoints into <system>/networks/avg_model.pt.
//
// Stage 7, large-margin fine-tuning (WeSpeaker's run.sh stage 8 with conf/*_lm.yaml; 3D-Speaker's
// large-margin fine-tuning; Thienpondt et al., "The IDLAB VoxSRC-20 submission", 2020): training
// continues from the averaged model for recipe.lm_epochs epochs on longer segments
// (recipe.lm_num_frames) with a fixed, larger margin (recipe.lm_margin), its own learning-rate
// decay with warm-up, batch size and speed-perturbation choice, into <system>/large_margin/
// (epoch.N.pt, then the average of the last recipe.lm_num_average as avg_model.pt). Its epochs
// are recorded in the database after the training's (epoch = last trained epoch + N), and the
// training trial lists are scored every network.epochs_per_train_call epochs and after the last
// one. recipe.lm_epochs = 0 skips it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace asv::nnet {
class SpeakerNet;
}
namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_margin {

class MarginSettings;

/// The network of these settings for `feat_dim` fbank bins and `classes` classes, to run on
/// `device` ("cpu", "cuda:N": recipe.channels_last applies on GPUs only).
std::shared_ptr<nnet::SpeakerNet> MakeNetwork(const MarginSettings& settings, std::int64_t feat_dim,
                                              std::int64_t classes, const std::string& device);

/// "avg_model.pt", the averaged model's file name in a checkpoint folder.
std::string AveragedModelName();

/// <system>/networks: the checkpoints of stage 5 and the averaged model of stage 6.
std::filesystem::path TrainingFolder(const recipe::RunContext& context);
/// <system>/large_margin: the checkpoints and averaged model of stage 7.
std::filesystem::path FineTuningFolder(const recipe::RunContext& context);
/// The model stage 8 extracts embeddings with: recipe.selected_epoch's checkpoint of stage 5 when
/// set, else the averaged model of stage 7 when recipe.lm_epochs > 0, else that of stage 6.
std::filesystem::path ModelForExtraction(const MarginSettings& settings, const recipe::RunContext& context);

/// Stage 5 on this rank. Throws ConfigError for recipe.nesterov without network.momentum,
/// DataError for a missing PCM store or utt2spk, fewer than 2 training speakers, or too few
/// utterances for one batch, and what the trainer throws.
void RunTraining(recipe::RunContext& context);
/// Stage 6. Throws DataError when there is no checkpoint and what AverageCheckpoints throws.
void RunAveraging(recipe::RunContext& context);
/// Stage 7 on this rank (nothing when recipe.lm_epochs = 0). Throws DataError when the averaged
/// model of stage 6 is missing, what InitFromCheckpoint throws for a model of other settings, and
/// what RunTraining throws.
void RunFineTuning(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_margin
