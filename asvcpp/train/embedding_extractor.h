// x-vector extraction with ASVtorch's test-time batching (asvtorch/src/networks/network_testing.py
// extract_embeddings), fixing its weak points:
// the caller's utterance list is never reordered (rows come back in the caller's order),
// utterances without speech frames are an error or an explicit skip (never NaN rows), utterances
// longer than the frame budget are truncated with a logged message, and non-finite embeddings
// stop the extraction with an error naming the utterances. No LibTorch in this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"
#include "asvcpp/data/feature_source.h"

namespace asv::nnet {
class SpeakerNet;
}
namespace asv::settings {
struct NetworkSettings;
}

namespace asv::train {

struct ExtractionOptions {
  std::int64_t max_batch_size_in_frames = 30000;  ///< frame budget per batch
  double max_cut_portion = 0.02;                  ///< network.max_test_cut_portion
  int print_interval = 200;                       ///< batches between progress lines
  int workers = 2;                                ///< loader threads (0: load on the calling thread)
  bool skip_empty = false;  ///< utterances without frames: false -> DataError, true -> zero row + skipped

  /// max_batch_size_in_frames, max_test_cut_portion and extraction_print_interval of `network`.
  static ExtractionOptions FromSettings(const settings::NetworkSettings& network, int workers);
};

struct ExtractionResult {
  Matrix embeddings;                   ///< [utterances.size(), embedding_size], the caller's order
  std::vector<std::size_t> skipped;    ///< positions without frames (zero rows; skip_empty only)
  std::vector<std::size_t> truncated;  ///< positions cut to max_batch_size_in_frames frames
  std::int64_t batches = 0;
  double seconds = 0;
};

/// Runs a network in eval mode over utterances of a data::FeatureSource.
class EmbeddingExtractor {
 public:
  /// `device`: "cpu" or "cuda:N"; the network is moved there.
  EmbeddingExtractor(std::shared_ptr<nnet::SpeakerNet> net, const std::string& device);

  /// Builds the network with `make_net(architecture, feat_dim, n_speakers, embedding_size)` from
  /// the checkpoint's metadata and loads its weights. Throws DataError when the checkpoint is
  /// missing, unreadable or does not fit the network built, and what `make_net` throws.
  static EmbeddingExtractor FromCheckpoint(
      const std::filesystem::path& checkpoint,
      const std::function<std::shared_ptr<nnet::SpeakerNet>(const std::string& architecture, std::int64_t feat_dim,
                                                            std::int64_t n_speakers, std::int64_t embedding_size)>&
          make_net,
      const std::string& device);

  /// Builds the network from `network` settings and the checkpoint's sizes and loads its weights.
  /// Throws DataError when the checkpoint is missing, unreadable or does not match the
  /// architecture of `network`.
  static EmbeddingExtractor FromCheckpoint(const std::filesystem::path& checkpoint,
                                           const settings::NetworkSettings& network, const std::string& device);

  /// Embeddings (nnet::SpeakerNet::Embed; for x-vectors the pre-batch-norm affine output of the
  /// first utterance layer) of
  /// `utterances` (indices into `source`; repeats allowed). Throws DataError for utterances
  /// without frames (unless options.skip_empty) or source errors, StageError for non-finite
  /// embeddings. The network's train/eval mode is restored afterwards.
  ExtractionResult Extract(const data::FeatureSource& source, const std::vector<int>& utterances,
                           const ExtractionOptions& options) const;

  std::int64_t embedding_size() const;
  nnet::SpeakerNet& net() const { return *net_; }

 private:
  std::shared_ptr<nnet::SpeakerNet> net_;
  std::string device_;
};

}  // namespace asv::train
