#include "asvcpp/features/pcm_fbank_source.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/feature_window.h"

namespace asv::features {
namespace {

FbankOptions WithoutDither(FbankOptions options) {
  options.frame_opts.dither = 0.0f;
  return options;
}

}  // namespace

PcmFbankSource::PcmFbankSource(std::shared_ptr<const data::PcmStore> store, std::vector<std::size_t> utterances,
                               FbankOptions options)
    : store_(std::move(store)), utterances_(std::move(utterances)), fbank_(WithoutDither(std::move(options))) {
  if (!store_) throw std::invalid_argument("PcmFbankSource: no store");
  for (auto u : utterances_) {
    if (u >= store_->NumUtterances()) {
      throw std::out_of_range(fmt::format("PcmFbankSource: utterance {} of a store of {}", u, store_->NumUtterances()));
    }
  }
  if (static_cast<int>(fbank_.options().frame_opts.samp_freq) != store_->sample_rate()) {
    throw DataError(fmt::format("{} holds {} Hz audio but the fbank options are for {} Hz", store_->folder().string(),
                                store_->sample_rate(), fbank_.options().frame_opts.samp_freq));
  }
}

std::size_t PcmFbankSource::StoreIndex(int utterance) const {
  return utterances_.at(static_cast<std::size_t>(utterance));
}

std::int64_t PcmFbankSource::NumFrames(int utterance) const {
  return features::NumFrames(store_->NumSamples(StoreIndex(utterance)), fbank_.options().frame_opts);
}

Matrix PcmFbankSource::Frames(int utterance) const {
  const auto index = StoreIndex(utterance);
  std::vector<float> samples(static_cast<std::size_t>(store_->NumSamples(index)));
  store_->Read(index, 0, static_cast<std::int64_t>(samples.size()), samples.data());
  Matrix m = fbank_.Compute(samples.data(), static_cast<std::int64_t>(samples.size()));
  const auto rows = m.rows();
  if (rows == 0) return m;
  for (std::int64_t c = 0; c < m.cols(); ++c) {
    double sum = 0;
    for (std::int64_t r = 0; r < rows; ++r) sum += m(r, c);
    const auto mean = static_cast<float>(sum / static_cast<double>(rows));
    for (std::int64_t r = 0; r < rows; ++r) m(r, c) -= mean;
  }
  return m;
}

std::string PcmFbankSource::Name(int utterance) const {
  return store_->Id(StoreIndex(utterance));
}

std::vector<std::string> PcmFbankSource::Ids() const {
  std::vector<std::string> ids;
  ids.reserve(utterances_.size());
  for (auto u : utterances_) ids.push_back(store_->Id(u));
  return ids;
}

}  // namespace asv::features
