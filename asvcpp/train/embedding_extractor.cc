#include "asvcpp/train/embedding_extractor.h"

#include <chrono>

#include <fmt/format.h>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/progress.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/batch_loader.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/cpu_allocator.h"
#include "asvcpp/train/onednn_cache.h"
#include "asvcpp/train/test_batching.h"

namespace asv::train {
namespace {

std::string NameList(const data::FeatureSource& source, const std::vector<int>& utterances, std::size_t max_names = 5) {
  std::string s;
  for (std::size_t i = 0; i < utterances.size() && i < max_names; ++i) {
    s += (i ? ", " : "") + source.Name(utterances[i]);
  }
  if (utterances.size() > max_names) s += fmt::format(" and {} more", utterances.size() - max_names);
  return s;
}

}  // namespace

ExtractionOptions ExtractionOptions::FromSettings(const settings::NetworkSettings& network, int workers) {
  ExtractionOptions o;
  o.max_batch_size_in_frames = network.max_batch_size_in_frames;
  o.max_cut_portion = network.max_test_cut_portion;
  o.print_interval = network.extraction_print_interval;
  o.workers = workers;
  return o;
}

EmbeddingExtractor::EmbeddingExtractor(std::shared_ptr<nnet::SpeakerNet> net, const std::string& device)
    : net_(std::move(net)), device_(device) {
  ASV_CHECK(net_ != nullptr);
  net_->to(torch::Device(device_));
}

EmbeddingExtractor EmbeddingExtractor::FromCheckpoint(const std::filesystem::path& checkpoint,
                                                      const settings::NetworkSettings& network,
                                                      const std::string& device) {
  return FromCheckpoint(
      checkpoint,
      [&](const std::string& architecture, std::int64_t feat_dim, std::int64_t n_speakers, std::int64_t) {
        if (architecture != network.ArchitectureName()) {
          throw DataError(fmt::format("{} holds a {} but network.network_class is {}", checkpoint.string(),
                                      architecture, network.ArchitectureName()));
        }
        return nnet::MakeXvectorNet(network, feat_dim, n_speakers).ptr();
      },
      device);
}

EmbeddingExtractor EmbeddingExtractor::FromCheckpoint(
    const std::filesystem::path& checkpoint,
    const std::function<std::shared_ptr<nnet::SpeakerNet>(const std::string&, std::int64_t, std::int64_t,
                                                          std::int64_t)>& make_net,
    const std::string& device) {
  const auto meta = ReadCheckpointMeta(checkpoint);
  auto net = make_net(meta.architecture, meta.feat_dim, meta.n_speakers, meta.embedding_size);
  ASV_CHECK(net != nullptr);
  const auto info = net->info();
  if (info.architecture != meta.architecture || info.feat_dim != meta.feat_dim || info.n_speakers != meta.n_speakers ||
      info.embedding_size != meta.embedding_size) {
    throw DataError(fmt::format("{} holds a {} for {}-dim input, {} speakers, {}-dim embeddings; the network built is "
                                "a {} for {}, {}, {}",
                                checkpoint.string(), meta.architecture, meta.feat_dim, meta.n_speakers,
                                meta.embedding_size, info.architecture, info.feat_dim, info.n_speakers,
                                info.embedding_size));
  }
  ReadCheckpoint(checkpoint, *net, nullptr);
  ASV_LOG0(Info, "Loaded {} (epoch {}, {} speakers, {}-dim input) from {}", meta.architecture, meta.epoch,
           meta.n_speakers, meta.feat_dim, checkpoint.string());
  return EmbeddingExtractor(std::move(net), device);
}

std::int64_t EmbeddingExtractor::embedding_size() const {
  return net_->info().embedding_size;
}

ExtractionResult EmbeddingExtractor::Extract(const data::FeatureSource& source, const std::vector<int>& utterances,
                                             const ExtractionOptions& options) const {
  const CachingCpuAllocatorScope cpu_allocator;  // batches of varying frame counts reuse blocks
  const CpuAllocatorPhase phase;  // between training epochs: the training steps get their blocks back
  const OneDnnPrimitiveCachePhase primitives;  // each batch's shape is new: none of them is kept
  const auto start_time = std::chrono::steady_clock::now();
  const torch::Device device(device_);
  ExtractionResult result;
  result.embeddings = Matrix(static_cast<std::int64_t>(utterances.size()), embedding_size());
  const auto info = net_->info();
  if (source.FeatDim() != info.feat_dim) {
    throw DataError(fmt::format("the features have {} dimensions but the network expects {}", source.FeatDim(),
                                info.feat_dim));
  }

  // Positions with frames take part in batching; the others are reported.
  std::vector<std::size_t> positions;
  std::vector<std::int64_t> lengths;
  std::vector<int> empty;
  for (std::size_t i = 0; i < utterances.size(); ++i) {
    const std::int64_t n = source.NumFrames(utterances[i]);
    if (n < 1) {
      result.skipped.push_back(i);
      empty.push_back(utterances[i]);
    } else {
      positions.push_back(i);
      lengths.push_back(n);
    }
  }
  if (!empty.empty()) {
    if (!options.skip_empty) {
      throw DataError(fmt::format("{} utterance(s) have no speech frames and cannot be embedded: {}", empty.size(),
                                  NameList(source, empty)));
    }
    ASV_LOG0(Warning, "{} utterance(s) without speech frames skipped (zero embeddings): {}", empty.size(),
             NameList(source, empty));
  }

  const auto batches = MakeTestBatches(lengths, options.max_batch_size_in_frames, options.max_cut_portion);
  std::vector<int> truncated;
  for (const auto& b : batches) {
    for (std::size_t k : b.truncated) {
      result.truncated.push_back(positions[k]);
      truncated.push_back(utterances[positions[k]]);
    }
  }
  if (!truncated.empty()) {
    ASV_LOG0(Warning, "{} utterance(s) longer than network.max_batch_size_in_frames = {} are truncated to it: {}",
             truncated.size(), options.max_batch_size_in_frames, NameList(source, truncated));
  }
  result.batches = static_cast<std::int64_t>(batches.size());
  ASV_LOG0(Info, "Extracting {} embeddings in {} batches (at most {} frames, cut <= {} %)", positions.size(),
           batches.size(), options.max_batch_size_in_frames, options.max_cut_portion * 100);

  const bool was_training = net_->is_training();
  net_->eval();
  torch::NoGradGuard no_grad;
  const auto embed = nnet::InferenceEmbedding(*net_);
  Prefetcher<HostBatch> loader(
      batches.size(),
      [&](std::size_t b) {
        std::vector<int> items;
        for (std::size_t k : batches[b].items) items.push_back(utterances[positions[k]]);
        return LoadTestBatch(source, items, batches[b].frames);
      },
      options.workers, static_cast<std::size_t>(2 * std::max(options.workers, 1)));
  std::int64_t done = 0;
  // Utterances with rate and ETA (printed by rank 0, published by every rank).
  base::ProgressOptions progress_options;
  progress_options.unit = "utt";
  base::Progress progress("embeddings", static_cast<std::int64_t>(positions.size()), progress_options);
  try {
    for (std::size_t b = 0; b < batches.size(); ++b) {
      HostBatch hb = *loader.Next();
      auto x = torch::from_blob(hb.features.data(), {hb.batch, hb.feat_dim, hb.frames}, torch::kFloat32);
      auto emb = embed(nnet::ToLayout(x.to(device), info.layout)).to(torch::kCPU).contiguous();
      const auto finite = torch::isfinite(emb).all(1);
      if (!finite.all().item<bool>()) {
        std::vector<int> bad;
        for (std::int64_t i = 0; i < hb.batch; ++i) {
          if (!finite[i].item<bool>()) bad.push_back(hb.utterances[static_cast<std::size_t>(i)]);
        }
        throw StageError(fmt::format("non-finite embeddings for {} utterance(s) of batch {}: {}", bad.size(), b + 1,
                                     NameList(source, bad)));
      }
      const float* src = emb.data_ptr<float>();
      const auto dim = emb.size(1);
      for (std::size_t i = 0; i < batches[b].items.size(); ++i) {
        const auto row = static_cast<std::int64_t>(positions[batches[b].items[i]]);
        std::copy(src + static_cast<std::int64_t>(i) * dim, src + static_cast<std::int64_t>(i + 1) * dim,
                  result.embeddings.row(row));
      }
      done += hb.batch;
      progress.Add(hb.batch);
      if (options.print_interval > 0 && (b + 1) % static_cast<std::size_t>(options.print_interval) == 0) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
        ASV_LOG0(Info, "{:.0f} seconds elapsed, {}/{} batches, {}/{} utterances", elapsed, b + 1, batches.size(), done,
                 positions.size());
      }
    }
  } catch (...) {
    if (was_training) net_->train();
    throw;
  }
  if (was_training) net_->train();
  progress.Finish();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  return result;
}

}  // namespace asv::train
