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
#pragma once

#include <cstdint>
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

/// The network of these settings for `feat_dim` fbank bins and `classes` classes.
std::shared_ptr<nnet::SpeakerNet> MakeNetwork(const MarginSettings& settings, std::int64_t feat_dim,
                                              std::int64_t classes);

/// <system>/networks/avg_model.pt.
std::string AveragedModelName();

/// Stage 5 on this rank. Throws ConfigError for recipe.nesterov without network.momentum,
/// DataError for a missing PCM store or utt2spk, fewer than 2 training speakers, or too few
/// utterances for one batch, and what the trainer throws.
void RunTraining(recipe::RunContext& context);
/// Stage 6. Throws DataError when there is no checkpoint and what AverageCheckpoints throws.
void RunAveraging(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_margin
