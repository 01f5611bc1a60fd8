// The standard settings groups, with ASVtorch's names, types and defaults
// (ASVtorch asvtorch/src/settings/settings.py).
//
// Each group lists every field once in Register (help text, constraints). Deviations from
// ASVtorch, all deliberate:
//   * types are real: network.bn_momentum is float (ASVtorch annotates int), momentum and
//     net_vlad_alpha are float, max_consecutive_lr_updates is a real int field (a class attribute
//     in ASVtorch, invisible in its printout);
//   * computing.device is not a setting (asvrun derives it from gpu_ids and the local rank);
//   * settings asvcpp does not read are marked NoEffect and a config that sets them to another
//     value than the default gets a warning (see each field's reason);
//   * features.use_kaldi = False is an error: Kaldi-compatible features are the only kind;
//   * enumerated settings are enums whose names (ASVtorch's strings) are declared once, in a table
//     beside the enum (asvcpp/base/enum_names.h): the choices, their check when the config is
//     read (not when a stage first uses them), the help text and the dumps all come from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/enums/backend_types.h"
#include "asvcpp/enums/dist_types.h"
#include "asvcpp/enums/feature_types.h"
#include "asvcpp/enums/nnet_types.h"
#include "asvcpp/enums/ivector_types.h"
#include "asvcpp/settings/settings_tree.h"
#include "asvcpp/settings/types.h"
#include "asvcpp/enums/train_types.h"

namespace asv::settings {

/// `paths.*`: where inputs are and outputs go.
struct PathSettings {
  std::string kaldi_recipe_folder = "/path/to/your/kaldi/egs/xxx/vx/";
  std::string kaldi_mfcc_conf_file = "path/to/mfcc/conf/file";
  std::string musan_folder = "/path/to/musan/";
  std::string rirs_folder;  // asvcpp's own (ASVtorch downloads RIRS_NOISES into the Kaldi folder)
  OrderedDict<std::string> datasets = {{"example_dataset_name", "/example/input_dataset/folder/"}};
  std::string output_folder = "/all/the/system/outputs/go/here/";
  std::string feature_and_list_folder = "kaldi";
  std::string system_folder = "system1";
  std::string experiment_db;  // empty: <output_folder>/experiments.db
  bool allow_experiment_db_on_network_fs = false;

  template <class V>
  void Register(V& v) {
    v("kaldi_recipe_folder", kaldi_recipe_folder,
      "Kaldi recipe folder ASVtorch ran its shell steps in (asvcpp needs no Kaldi checkout); stage 2 looks for "
      "RIRS_NOISES in it, where ASVtorch unpacks that archive, unless paths.rirs_folder is set");
    v("kaldi_mfcc_conf_file", kaldi_mfcc_conf_file,
      "Kaldi-style MFCC options file (--name=value lines); asvrun sets it to the recipe's configs/mfcc.conf "
      "before applying the configs, as ASVtorch's run.py does");
    v("musan_folder", musan_folder, "Root of the MUSAN corpus (augmentation; https://www.openslr.org/17/)");
    v("rirs_folder", rirs_folder,
      "The unpacked RIRS_NOISES folder of https://www.openslr.org/28/ (simulated room impulse responses, "
      "augmentation); empty: <kaldi_recipe_folder>/RIRS_NOISES");
    v("datasets", datasets, "Dataset name -> root folder of the raw corpus");
    v("output_folder", output_folder, "Root folder of all outputs");
    v("feature_and_list_folder", feature_and_list_folder,
      "Subfolder of output_folder for utterance lists and features");
    v("system_folder", system_folder, "Subfolder of output_folder for one trained system");
    v("experiment_db", experiment_db,
      "Experiment database the runs are recorded in: an SQLite file, or a PostgreSQL URI "
      "postgresql://user@host:port/dbname shared by many jobs; empty: <output_folder>/experiments.db. "
      "asvrun --db overrides it");
    v("allow_experiment_db_on_network_fs", allow_experiment_db_on_network_fs,
      "Allow an SQLite experiment database on a network file system (NFS, SMB, Lustre, GPFS, BeeGFS, CephFS, "
      "9p, network FUSE mounts), which asvrun otherwise refuses: it is then used with a rollback journal "
      "instead of WAL, safe only where the file system's locks work (one writing machine at a time); the "
      "environment variable ASV_DB_ALLOW_NETWORK_FS=1 does the same. A PostgreSQL experiment_db is the safe "
      "store for many machines");
  }
};

/// `computing.*`: workers and GPUs.
struct ComputingSettings {
  int ubm_training_workers = 8;
  int posterior_extraction_dataloader_workers = 5;
  int ivector_dataloader_workers = 10;
  int network_dataloader_workers = 10;
  int feature_extraction_workers = 44;
  bool use_gpu = true;
  Tuple<int> gpu_ids = {0};
  int local_process_rank = 0;
  int local_gpu_id = 0;
  int world_size = 1;
  // asvcpp additions:
  bool allow_tf32 = true;
  distributed::DistBackend dist_backend = distributed::DistBackend::kAuto;

  template <class V>
  void Register(V& v) {
    static const char* kIvector = "only ASVtorch's i-vector recipes read it; asvcpp has no i-vector pipeline";
    static const char* kRuntime = "set by asvrun at run time from the launch environment";
    v("ubm_training_workers", ubm_training_workers, "Kaldi jobs/threads for UBM training")
        .Range(1, 4096)
        .NoEffect(kIvector);
    v("posterior_extraction_dataloader_workers", posterior_extraction_dataloader_workers,
      "Data loader workers for frame posterior extraction")
        .Range(0, 4096)
        .NoEffect(kIvector);
    v("ivector_dataloader_workers", ivector_dataloader_workers, "Data loader workers for i-vector extraction")
        .Range(0, 4096)
        .NoEffect(kIvector);
    v("network_dataloader_workers", network_dataloader_workers,
      "Data loader workers for network training, validation and embedding extraction")
        .Range(0, 4096);
    v("feature_extraction_workers", feature_extraction_workers,
      "Parallel jobs for feature extraction, VAD and augmentation")
        .Range(1, 4096);
    v("use_gpu", use_gpu, "Use CUDA when available (False forces the CPU)");
    v("gpu_ids", gpu_ids, "Physical GPU of each local rank; several ids train data-parallel").Range(0, 1023);
    v("local_process_rank", local_process_rank, "Rank of this process on its node").Range(0, 4095).NoEffect(kRuntime);
    v("local_gpu_id", local_gpu_id, "GPU used by this process").Range(0, 1023).NoEffect(kRuntime);
    v("world_size", world_size, "Number of training processes").Range(1, 65536).NoEffect(kRuntime);
    v("allow_tf32", allow_tf32,
      "Let float32 matmuls (cuBLAS) and convolutions (cuDNN) use TF32 tensor cores on Ampere and newer GPUs: "
      "faster, with a 10-bit mantissa for the inputs; False keeps full float32. Default True (asvcpp addition; "
      "LibTorch's own default is off for matmuls, on for convolutions); no effect on the CPU");
    v("dist_backend", dist_backend,
      "Communication backend of data-parallel training: 'auto' (NCCL on GPUs, Gloo on the CPU), 'nccl' (GPUs "
      "only: without them a config error), 'gloo' (also on GPUs, where LibTorch's Gloo handles CUDA tensors)");
  }
};

/// `network.*`: x-vector architecture, training and extraction.
struct NetworkSettings {
  int resume_epoch = 0;
  int max_epochs = 1000;
  int eer_stop_epochs = 3;
  double minimum_improvement = 0.1;
  int epochs_per_train_call = 1;
  int utts_per_speaker_in_epoch = 320;
  int minibatch_size = 64;
  int min_clip_size = 200;
  int max_clip_size = 400;
  double max_test_cut_portion = 0.02;
  double max_val_cut_portion = 0.1;
  int max_batch_size_in_frames = 30000;
  int validation_utterances = 500;
  int print_interval = 500;
  int accuracy_print_interval = 6;
  int extraction_print_interval = 200;
  train::OptimizerKind optimizer = train::OptimizerKind::kSgd;
  int max_consecutive_lr_updates = 2;
  double initial_learning_rate = 0.1;
  double min_loss_change_ratio = 0.01;
  double min_room_for_improvement = 0.1;
  double target_loss = 0.1;
  double momentum = 0;
  double weight_decay = 0.001;
  Tuple<std::string> weight_decay_skiplist = {"batchnorm"};
  int optimizer_step_interval = 1;
  nnet::PaddingMode cnn_padding_mode = nnet::PaddingMode::kZeros;
  double bn_momentum = 0.1;
  bool bn_affine = true;
  nnet::Activation activation = nnet::Activation::kLeakyRelu;
  double lrelu_slope = 0.01;
  std::string network_class = "asvtorch.src.networks.architectures.StandardNet";
  int frame_layer_size = 512;
  int stat_size = 1500;
  int embedding_size = 512;
  nnet::PoolingType pooling_layer_type = nnet::PoolingType::kMeanStd;
  nnet::ClusterAssignment cluster_assignment_mode = nnet::ClusterAssignment::kNetVlad;
  nnet::SupervectorMode supervector_mode = nnet::SupervectorMode::kNetVlad;
  nnet::LdeCovariance lde_covariance_type = nnet::LdeCovariance::kSpherical;
  bool normalize_supervector = true;
  int n_clusters = 64;
  int n_ghost_clusters = 2;
  double net_vlad_alpha = 1;
  int ser = 16;
  int attention_layer_size = 64;
  // asvcpp additions:
  train::Precision precision = train::Precision::kFloat32;
  bool allow_unverified_checkpoints = false;
  bool sync_batch_norm = false;

  /// The architecture named by network_class without ASVtorch's module path, e.g.
  /// "StandardNet" for "asvtorch.src.networks.architectures.StandardNet". network_class must have
  /// passed validation.
  std::string ArchitectureName() const;
  /// The architecture network_class names. network_class stays a string, so that dumps keep the
  /// spelling a config wrote (bare or with ASVtorch's module path); the names are
  /// nnet::Architecture's table. Throws ConfigError for a network_class that names none (one
  /// that did not pass validation).
  nnet::Architecture Architecture() const;

  template <class V>
  void Register(V& v) {
    v("resume_epoch", resume_epoch,
      "0: train a new network; N > 0: resume from epoch N; N < 0: only evaluate epoch |N|").Range(-1e6, 1e6);
    v("max_epochs", max_epochs, "Last epoch to train").Range(1, 1e6);
    v("eer_stop_epochs", eer_stop_epochs,
      "Stop after this many evaluations (one per train call) without EER improvement")
        .Range(1, 1e6);
    v("minimum_improvement", minimum_improvement, "EER improvement (percentage points) that resets the patience")
        .Range(0, 100);
    v("epochs_per_train_call", epochs_per_train_call, "Epochs between EER evaluations").Range(1, 1e6);
    v("utts_per_speaker_in_epoch", utts_per_speaker_in_epoch, "Training clips per speaker per epoch").Range(1, 1e6);
    v("minibatch_size", minibatch_size, "Clips per optimizer step, over all GPUs").Range(1, 1048576);
    v("min_clip_size", min_clip_size, "Shortest training clip (frames)").Range(1, 1e6);
    v("max_clip_size", max_clip_size, "Longest training clip (frames); >= min_clip_size").Range(1, 1e6);
    v("max_test_cut_portion", max_test_cut_portion,
      "Largest fraction of an utterance cut off to batch utterances of similar length (extraction)")
        .Range(0, 1);
    v("max_val_cut_portion", max_val_cut_portion, "As max_test_cut_portion, for validation").Range(0, 1);
    v("max_batch_size_in_frames", max_batch_size_in_frames, "Frame budget of one extraction/validation batch")
        .Range(1, 1e9);
    v("validation_utterances", validation_utterances,
      "Held-out validation utterances (and size of the training subset that is also evaluated)")
        .Range(0, 1e8);
    v("print_interval", print_interval, "Minibatches between loss prints").Range(1, 1e9);
    v("accuracy_print_interval", accuracy_print_interval, "Every N-th print also runs validation").Range(1, 1e9);
    v("extraction_print_interval", extraction_print_interval, "Batches between progress prints in extraction")
        .Range(1, 1e9);
    v("optimizer", optimizer,
      "sgd (torch.optim.SGD with network.momentum, as ASVtorch) or adamw (torch.optim.AdamW: betas 0.9 / 0.999, "
      "eps 1e-8, decoupled network.weight_decay)");
    v("max_consecutive_lr_updates", max_consecutive_lr_updates,
      "Stop training after this many consecutive learning-rate halvings")
        .Range(1, 1000);
    v("initial_learning_rate", initial_learning_rate, "Learning rate of a new network").Positive().Max(100);
    v("min_loss_change_ratio", min_loss_change_ratio,
      "Halve the learning rate when an epoch's relative loss decrease is below this")
        .Range(0, 1);
    v("min_room_for_improvement", min_room_for_improvement, "Floor of the loss-decrease denominator")
        .Positive()
        .Max(1e6);
    v("target_loss", target_loss, "Loss that counts as fully trained in the learning-rate rule").Range(0, 1e6);
    v("momentum", momentum, "SGD momentum").Range(0, 1);
    v("weight_decay", weight_decay, "L2 weight decay of parameters not in weight_decay_skiplist").Range(0, 10);
    v("weight_decay_skiplist", weight_decay_skiplist,
      "Parameters whose name contains one of these substrings get no weight decay");
    v("optimizer_step_interval", optimizer_step_interval, "Minibatches accumulated per optimizer step").Range(1, 1e6);
    v("cnn_padding_mode", cnn_padding_mode, "Padding of the frame-layer convolutions");
    v("bn_momentum", bn_momentum, "BatchNorm running-statistics momentum").Range(0, 1);
    v("bn_affine", bn_affine, "BatchNorm with learnable scale and shift");
    v("activation", activation, "Activation function");
    v("lrelu_slope", lrelu_slope, "Negative slope of the leaky ReLU").Range(0, 1);
    v("network_class", network_class,
      "Architecture: StandardNet, StandardSeNet, StandardResSeNet or LargeResSeNet, plain or as ASVtorch's "
      "dotted path asvtorch.src.networks.architectures.<Name>")
        .Check(CheckNetworkClass);
    v("frame_layer_size", frame_layer_size, "Channels of the TDNN frame layers").Range(1, 16384);
    v("stat_size", stat_size, "Channels of the last frame layer (input of pooling)").Range(1, 65536);
    v("embedding_size", embedding_size, "Embedding dimension").Range(1, 8192);
    v("pooling_layer_type", pooling_layer_type, "default: mean+std pooling; clustering: NetVLAD/LDE");
    v("cluster_assignment_mode", cluster_assignment_mode, "Cluster assignment of the clustering pooling layer");
    v("supervector_mode", supervector_mode, "Component-vector normalisation of the clustering pooling layer");
    v("lde_covariance_type", lde_covariance_type, "Precision shape of LDE assignment")
        .Unsupported({"full", "shared_full"},
                     "ASVtorch has no full covariances either; use spherical, shared_spherical, "
                     "diagonal or shared_diagonal");
    v("normalize_supervector", normalize_supervector, "L2-normalise the pooled supervector");
    v("n_clusters", n_clusters, "Clusters of the clustering pooling layer").Range(1, 4096);
    v("n_ghost_clusters", n_ghost_clusters, "Ghost clusters (NetVLAD assignment)").Range(0, 4096);
    v("net_vlad_alpha", net_vlad_alpha, "Scale of the NetVLAD assignment initialisation").Positive().Max(1e6);
    v("ser", ser, "Squeeze-excitation reduction factor").Range(1, 1024);
    v("attention_layer_size", attention_layer_size, "Unused (ASVtorch defines but never reads it)")
        .Range(1, 65536)
        .NoEffect("no architecture reads it (ASVtorch does not either)");
    v("precision", precision,
      "Arithmetic of the training forward pass and loss: 'fp32' (default) everything in float32; 'bf16' "
      "autocast to bfloat16 (matmuls and convolutions in bfloat16, losses and reductions in float32) with "
      "float32 weights, gradients and optimizer, no loss scaling; for Ampere and newer GPUs (on the CPU, "
      "LibTorch's CPU autocast). Validation and embedding extraction stay float32 (asvcpp addition)");
    v("allow_unverified_checkpoints", allow_unverified_checkpoints,
      "Use a checkpoint that can be verified neither by its checksum file (<checkpoint>.sha256) nor by the "
      "checksum the experiment database recorded when it was written (e.g. one copied without its checksum "
      "file from another machine). Default False: such a checkpoint is refused, so that a corrupt one is never "
      "resumed, averaged or extracted with (asvcpp addition)");
    v("sync_batch_norm", sync_batch_norm,
      "Data-parallel training (world size > 1): every BatchNorm normalises with the statistics of the global "
      "minibatch, all ranks' shares together, as PyTorch's torch.nn.SyncBatchNorm does, instead of each rank's "
      "own share; the running statistics are then the same on every rank. Costs one all-reduce per BatchNorm in "
      "the forward and one in the backward pass of every step; worth it when the per-rank minibatch is small "
      "(a few clips). No effect in one process; checkpoints are the same either way (asvcpp addition)");
  }

  void Validate(Validator& v) const;

  /// Error text for a network_class value that names no known architecture, else nullopt.
  static std::optional<std::string> CheckNetworkClass(const parser::Value& value);
};

/// `posterior_extraction.*`: i-vector frame posteriors (ASVtorch i-vector recipes only).
struct PosteriorExtractionSettings {
  int n_top_gaussians = 20;
  double posterior_threshold = 0.025;
  int batch_size_in_frames = 500000;

  template <class V>
  void Register(V& v) {
    static const char* kIvector = "only ASVtorch's i-vector recipes read it; asvcpp has no i-vector pipeline";
    v("n_top_gaussians", n_top_gaussians, "Gaussians kept per frame").Range(1, 1048576).NoEffect(kIvector);
    v("posterior_threshold", posterior_threshold, "Posteriors below this are dropped").Range(0, 1).NoEffect(kIvector);
    v("batch_size_in_frames", batch_size_in_frames, "Frames per batch").Range(1, 1e10).NoEffect(kIvector);
  }
};

/// `ivector.*`: i-vector extractor (ASVtorch i-vector recipes only).
struct IVectorSettings {
  int num_gaussians = 2048;
  std::string ubm_name = "ubm_2048";
  int ivec_dim = 400;
  IvectorType ivec_type = IvectorType::kAugmented;
  int n_iterations = 5;
  double initial_prior_offset = 100;
  IvectorCovariance covariance_type = IvectorCovariance::kFull;
  bool update_projections = true;
  bool update_covariances = true;
  bool minimum_divergence = true;
  bool update_means = true;
  int batch_size_in_utts = 200;
  int n_component_batches = 16;

  template <class V>
  void Register(V& v) {
    static const char* kIvector = "only ASVtorch's i-vector recipes read it; asvcpp has no i-vector pipeline";
    v("num_gaussians", num_gaussians, "UBM components").Range(1, 1048576).NoEffect(kIvector);
    v("ubm_name", ubm_name, "UBM folder name").NoEffect(kIvector);
    v("ivec_dim", ivec_dim, "i-vector dimension").Range(1, 8192).NoEffect(kIvector);
    v("ivec_type", ivec_type, "augmented or standard i-vector model").NoEffect(kIvector);
    v("n_iterations", n_iterations, "Extractor training iterations").Range(1, 10000).NoEffect(kIvector);
    v("initial_prior_offset", initial_prior_offset, "Prior offset of the augmented model")
        .Range(0, 1e6)
        .NoEffect(kIvector);
    v("covariance_type", covariance_type, "Residual covariance type").NoEffect(kIvector);
    v("update_projections", update_projections, "Update T in training").NoEffect(kIvector);
    v("update_covariances", update_covariances, "Update covariances in training").NoEffect(kIvector);
    v("minimum_divergence", minimum_divergence, "Minimum-divergence re-estimation").NoEffect(kIvector);
    v("update_means", update_means, "Update means in training").NoEffect(kIvector);
    v("batch_size_in_utts", batch_size_in_utts, "Utterances per batch").Range(1, 1e7).NoEffect(kIvector);
    v("n_component_batches", n_component_batches, "Component batches; must divide num_gaussians")
        .Range(1, 65536)
        .NoEffect(kIvector);
  }

  void Validate(Validator& v) const;
};

/// `features.*`: acoustic features and VAD use.
struct FeatureSettings {
  int sampling_rate = 16000;
  int frame_shift = 10;
  bool use_kaldi = true;
  features::Cmvn cmvn = features::Cmvn::kMean;
  int cmvn_window = 300;
  features::Deltas deltas = features::Deltas::kBase;
  int delta_reach = 3;
  bool sad_enabled = true;
  bool log_feats = true;
  bool dct_feats = true;
  int vad_mismatch_tolerance = 0;

  template <class V>
  void Register(V& v) {
    v("sampling_rate", sampling_rate, "Sampling rate (Hz); asvrun overwrites it with --sample-frequency from "
                                      "paths.kaldi_mfcc_conf_file, as ASVtorch does")
        .Range(1, 768000)
        .NoEffect("overwritten with --sample-frequency of paths.kaldi_mfcc_conf_file (as in ASVtorch)");
    v("frame_shift", frame_shift, "Frame shift (ms) of diarization labels")
        .Range(1, 1000)
        .NoEffect("only ASVtorch's unused diarization code reads it; the feature frame shift comes from mfcc.conf");
    v("use_kaldi", use_kaldi, "Kaldi-compatible features (the only kind)").Check([](const parser::Value& x) {
      return x.as_bool() ? std::nullopt
                         : std::optional<std::string>(
                               "features.use_kaldi = False is not supported: asvcpp computes Kaldi-compatible "
                               "features only (ASVtorch raises NotImplementedError too)");
    });
    v("cmvn", cmvn, "Sliding-window normalisation: 'm' mean, 'mv' mean and variance, '' none");
    v("cmvn_window", cmvn_window, "Sliding CMN window (frames)").Range(1, 1e6);
    v("deltas", deltas, "'b' base features, 'bv' + deltas, 'bva' + deltas and delta-deltas");
    v("delta_reach", delta_reach, "Delta window reach (frames each side)").Range(1, 100);
    v("sad_enabled", sad_enabled, "Use only VAD-selected frames (False: all frames)");
    v("log_feats", log_feats, "Unused (ASVtorch defines but never reads it)")
        .NoEffect("no code reads it (ASVtorch does not either)");
    v("dct_feats", dct_feats, "Unused (ASVtorch defines but never reads it)")
        .NoEffect("no code reads it (ASVtorch does not either)");
    v("vad_mismatch_tolerance", vad_mismatch_tolerance,
      "Frames by which VAD and feature lengths may differ (padded/trimmed with a warning)")
        .Range(0, 1e6);
  }
};

/// `backend.*`: PLDA and scoring.
struct BackendSettings {
  int plda_dim = 200;
  std::int64_t max_all_vs_all_score_count = 100000000;
  std::int64_t pairwise_scoring_chunk_size = 50000;
  int score_norm_full_cohort_size = 2000;
  int score_norm_adaptive_cohort_size = 200;
  // asvcpp additions (ASVtorch hard-codes these in its recipes):
  std::string processing = "cwl";
  backend::Scoring scoring = backend::Scoring::kPlda;
  bool score_norm = false;
  backend::ScoreNorm score_norm_method = backend::ScoreNorm::kAdaptive;
  backend::Cohort score_norm_cohort = backend::Cohort::kSpeakerMeans;
  backend::Calibration calibration = backend::Calibration::kNone;
  std::int64_t calibration_trials = 30000;
  double calibration_speakers = 0.1;
  bool keep_degenerate_calibration = false;
  double p_target = 0.05;
  std::vector<double> other_p_targets = {0.01};

  template <class V>
  void Register(V& v) {
    v("plda_dim", plda_dim, "PLDA speaker subspace dimension").Range(1, 8192);
    v("max_all_vs_all_score_count", max_all_vs_all_score_count,
      "Score all enrollment-test pairs at once when their count is below this, else trial by trial")
        .Range(1, 1e12);
    v("pairwise_scoring_chunk_size", pairwise_scoring_chunk_size, "Trials per chunk in pairwise scoring").Range(1, 1e9);
    v("score_norm_full_cohort_size", score_norm_full_cohort_size,
      "Cohort size of score normalisation with score_norm_cohort = 'random_vectors' (at most the back-end "
      "embeddings)")
        .Range(1, 1e8);
    v("score_norm_adaptive_cohort_size", score_norm_adaptive_cohort_size,
      "Top-N cohort scores of each side used by AS-norm (capped at the cohort size; ASVtorch: 200, WeSpeaker and "
      "the voxceleb/margin recipe: 300)")
        .Range(2, 1e7);
    v("processing", processing,
      "Embedding processing trained on the PLDA data before scoring, applied in order: c centering, "
      "w PCA whitening, l length normalisation (ASVtorch's recipes: 'cwl')")
        .Check([](const parser::Value& value) -> std::optional<std::string> {
          for (char c : value.as_string()) {
            if (c != 'c' && c != 'w' && c != 'l') {
              return std::string("backend.processing may only contain the letters c, w and l");
            }
          }
          return std::nullopt;
        });
    v("scoring", scoring, "Back-end: 'plda' (closed-form two-covariance PLDA) or 'cosine'");
    v("score_norm", score_norm,
      "Symmetric score normalisation of every score (score_norm_method, against score_norm_cohort); ASVtorch "
      "implements AS-norm but leaves it disabled");
    v("score_norm_method", score_norm_method,
      "'as-norm': adaptive s-norm with the top score_norm_adaptive_cohort_size cohort scores of each side; "
      "'s-norm': the statistics of the whole cohort");
    v("score_norm_cohort", score_norm_cohort,
      "'speaker_means': the mean embedding of each back-end speaker, stored once per system "
      "(embeddings/cohort); 'random_vectors': score_norm_full_cohort_size random back-end embeddings "
      "(ASVtorch)");
    v("calibration", calibration,
      "Calibration of the final scores into log-likelihood ratios by logistic regression trained on trials of "
      "held-out back-end speakers: 'none', 'linear' (the score alone) or 'quality' (quality-aware: the score, "
      "log speech durations and embedding magnitudes of both sides)");
    v("calibration_trials", calibration_trials,
      "Calibration training trials drawn from the held-out speakers' embeddings, half of them target trials")
        .Range(2, 1e9);
    v("calibration_speakers", calibration_speakers,
      "Fraction of the back-end speakers (at least 2) held out of the processing, PLDA and cohort to draw the "
      "calibration trials from, when calibration is not 'none'")
        .Open(0, 1);
    v("keep_degenerate_calibration", keep_degenerate_calibration,
      "Apply a trained calibration even when it is degenerate (eval::CheckCalibration: the score's weight "
      "<= 0, or the Cllr of its calibrated training trials not below 1 - max(0.01 bit, what a chance fit "
      "on that many trials gains)); by default such a calibration is reported, saved with "
      "\"applied\": false and not applied: the scores stay uncalibrated");
    v("p_target", p_target,
      "Target prior of the reported minDCF (c_miss = c_fa = 1; ASVtorch: 0.05)")
        .Open(0, 1);
    v("other_p_targets", other_p_targets,
      "Further target priors at which minDCF and actual DCF are computed, reported and stored (NIST SRE: 0.01, "
      "0.005, 0.001)")
        .Open(0, 1);
  }
};

/// `diarization.*`: empty, as in ASVtorch.
struct DiarizationSettings {
  template <class V>
  void Register(V&) {}
};

/// All standard groups. A recipe adds its own group(s) to the tree (see AddStandardGroups).
struct Settings {
  PathSettings paths;
  ComputingSettings computing;
  NetworkSettings network;
  PosteriorExtractionSettings posterior_extraction;
  IVectorSettings ivector;
  FeatureSettings features;
  BackendSettings backend;
  DiarizationSettings diarization;
};

/// Adds the eight standard groups of `settings` to `tree` in ASVtorch's order. A recipe then adds
/// its own: `tree.AddGroup("recipe", recipe_settings)`.
void AddStandardGroups(SettingsTree& tree, Settings& settings);

/// ASVtorch's module path of its architectures, "asvtorch.src.networks.architectures.".
inline constexpr const char* kAsvtorchArchitecturePrefix = "asvtorch.src.networks.architectures.";

}  // namespace asv::settings
