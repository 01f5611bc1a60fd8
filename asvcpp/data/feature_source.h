// Where training, validation and extraction read features from: an interface over utterances
// 0..N-1. features::KaldiFeatureSource (asvcpp/features/kaldi_feature_source.h) is the real
// implementation (features after deltas, CMN and VAD selection, as ASVtorch's KaldiFeatureLoader
// in asvtorch/src/frontend/featureloaders/kaldi_featureloader.py loads them);
// InMemoryFeatureSource serves tests and small data sets, SubsetFeatureSource views a subset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::data {

/// Read access to the frames of a set of utterances indexed 0..NumUtterances()-1.
/// Every method may be called concurrently from several loader threads.
class FeatureSource {
 public:
  virtual ~FeatureSource() = default;

  virtual int NumUtterances() const = 0;
  /// Feature dimension F (the same for every utterance).
  virtual int FeatDim() const = 0;
  /// Usable (speech) frames of `utterance`, known without loading it (e.g. VAD counts).
  virtual std::int64_t NumFrames(int utterance) const = 0;
  /// The utterance's frames [NumFrames(u), FeatDim()], after CMN and VAD selection.
  virtual Matrix Frames(int utterance) const = 0;
  /// Rows [start, start + length) of Frames(utterance), [length, FeatDim()]. The default loads
  /// the whole utterance and copies; override to read less. Throws DataError when the range
  /// exceeds the frames actually loaded.
  virtual Matrix Clip(int utterance, std::int64_t start, std::int64_t length) const;
  /// Name for messages (e.g. the utterance id); default "utterance <index>".
  virtual std::string Name(int utterance) const;
};

/// Rows [start, start + length) of `frames`; DataError naming `name` when out of range.
Matrix SliceRows(const Matrix& frames, std::int64_t start, std::int64_t length, const std::string& name);

/// Features held in memory ([frames, feat_dim] each).
class InMemoryFeatureSource : public FeatureSource {
 public:
  /// Throws DataError when the matrices disagree on the feature dimension or `names` is
  /// non-empty and of another size.
  explicit InMemoryFeatureSource(std::vector<Matrix> utterances, std::vector<std::string> names = {});
  int NumUtterances() const override { return static_cast<int>(utterances_.size()); }
  int FeatDim() const override { return feat_dim_; }
  std::int64_t NumFrames(int utterance) const override;
  Matrix Frames(int utterance) const override;
  Matrix Clip(int utterance, std::int64_t start, std::int64_t length) const override;
  std::string Name(int utterance) const override;

 private:
  const Matrix& At(int utterance) const;
  std::vector<Matrix> utterances_;
  std::vector<std::string> names_;
  int feat_dim_ = 0;
};

/// A view of some utterances of another source (training data after filtering, PLDA subsets):
/// utterance i is `base`'s utterance indices[i]. Throws std::out_of_range for an index outside
/// `indices`.
class SubsetFeatureSource : public FeatureSource {
 public:
  SubsetFeatureSource(std::shared_ptr<const FeatureSource> base, std::vector<int> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {}
  int NumUtterances() const override { return static_cast<int>(indices_.size()); }
  int FeatDim() const override { return base_->FeatDim(); }
  std::int64_t NumFrames(int u) const override { return base_->NumFrames(indices_.at(u)); }
  Matrix Frames(int u) const override { return base_->Frames(indices_.at(u)); }
  Matrix Clip(int u, std::int64_t start, std::int64_t length) const override {
    return base_->Clip(indices_.at(u), start, length);
  }
  std::string Name(int u) const override { return base_->Name(indices_.at(u)); }

 private:
  std::shared_ptr<const FeatureSource> base_;
  std::vector<int> indices_;
};

}  // namespace asv::data
