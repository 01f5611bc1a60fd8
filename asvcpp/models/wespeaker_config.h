// The config.yaml of a WeSpeaker model directory (what its model zoo ships beside avg_model.pt,
// and what wespeaker/bin/train.py dumps into its exp_dir): the settings asvcpp needs to rebuild
// the network and its front end, read and written with yaml-cpp. No LibTorch.
//
// Keys read and written (WeSpeaker's names; examples/voxceleb/v2/conf/resnet.yaml):
//   model                      ResNet34, ECAPA_TDNN_c512, ECAPA_TDNN_GLOB_c512, ECAPA_TDNN_c1024,
//                              ECAPA_TDNN_GLOB_c1024 (the constructors of wespeaker/models)
//   model_args                 feat_dim, embed_dim, pooling_func (TSTP for ResNet34, ASTP for
//                              ECAPA-TDNN), two_emb_layer (ResNet34: False), emb_bn (ECAPA: False)
//   projection_args            project_type (arc_margin, add_margin, softmax), scale, easy_margin,
//                              margin, embed_dim, num_class, do_lm (train.py adds the last three)
//   dataset_args               resample_rate; fbank_args: num_mel_bins, frame_shift (ms),
//                              frame_length (ms), dither; cmvn, cmvn_args: norm_mean, norm_var;
//                              frontend (only 'fbank')
// Every other top-level key (exp_dir, optimizer_args, margin_update, ...) is training state and
// ignored. WeSpeaker extracts embeddings with dither 0 and utterance mean subtraction
// (wespeaker/bin/extract.py: fbank_args.dither = 0.0, apply_cmvn with cmvn_args).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "asvcpp/features/fbank.h"

namespace asv::models {

/// What asvcpp uses of a WeSpeaker config.yaml.
struct WespeakerConfig {
  std::string model = "ResNet34";           ///< `model`
  std::int64_t feat_dim = 80;               ///< model_args.feat_dim (fbank bins)
  std::int64_t embed_dim = 256;             ///< model_args.embed_dim
  std::string project_type = "arc_margin";  ///< projection_args.project_type
  double scale = 32.0;                      ///< projection_args.scale
  bool easy_margin = false;                 ///< projection_args.easy_margin
  double margin = 0.2;                      ///< projection_args.margin (WeSpeaker's final margin)
  std::optional<std::int64_t> num_class;    ///< projection_args.num_class (rows of projection.weight)
  int sample_rate = 16000;                  ///< dataset_args.resample_rate, Hz
  int num_mel_bins = 80;                    ///< dataset_args.fbank_args.num_mel_bins
  int frame_shift = 10;                     ///< dataset_args.fbank_args.frame_shift, ms
  int frame_length = 25;                    ///< dataset_args.fbank_args.frame_length, ms
  double dither = 1.0;                      ///< dataset_args.fbank_args.dither (training only)
};

/// The pooling WeSpeaker's constructor of `model` uses by default and asvcpp implements: "TSTP"
/// for ResNet34, "ASTP" for the ECAPA-TDNN names. Throws DataError naming `model` for a model
/// asvcpp does not have.
std::string WespeakerPooling(const std::string& model);

/// Reads `path` (a config.yaml). Throws DataError naming the file and the key: not YAML, no
/// `model` or model_args.feat_dim / embed_dim, a model asvcpp does not have (`model`), a key of
/// model_args or projection_args it does not know (`model_args.X`), a value it does not implement
/// (model_args.pooling_func, two_emb_layer or emb_bn other than the defaults above;
/// projection_args.project_type other than arc_margin, add_margin, softmax; dataset_args.frontend
/// other than fbank; dataset_args.cmvn false or cmvn_args.norm_var true), a value of the wrong
/// type, and fbank_args.num_mel_bins other than model_args.feat_dim.
WespeakerConfig ReadWespeakerConfig(const std::filesystem::path& path);

/// The fbank that a model of `config` was trained on, for embedding extraction:
/// features::WespeakerFbankOptions with dataset_args.resample_rate, fbank_args.num_mel_bins,
/// frame_length and frame_shift, and no dither (wespeaker/bin/extract.py sets it to 0).
features::FbankOptions FbankOptionsOf(const WespeakerConfig& config);

/// Writes `config` to `path` atomically as WeSpeaker's keys (those above, with model_args as
/// WeSpeaker's constructor takes them, cmvn true, norm_mean true, norm_var false). Throws
/// DataError naming the path when it cannot be written.
void WriteWespeakerConfig(const std::filesystem::path& path, const WespeakerConfig& config);

}  // namespace asv::models
