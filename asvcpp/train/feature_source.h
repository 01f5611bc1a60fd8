// Where training, validation and extraction read features from. The recipe provides the real
// implementation (features after deltas, CMN and VAD selection; reference/asvtorch.md section
// 4.4); InMemoryFeatureSource serves tests and small data sets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::train {

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

/// Training data: a feature source whose every utterance is a training utterance, with its
/// speaker label.
struct TrainingData {
  std::shared_ptr<const FeatureSource> source;
  std::vector<int> speakers;  ///< label of each utterance of `source`, in 0..n_speakers-1
  int n_speakers = 0;
};

/// Integer labels for speaker ids in order of first appearance (ASVtorch
/// convert_labels_to_numeric): {"b", "a", "b"} -> {0, 1, 0}; `n_speakers` receives the count.
std::vector<int> SpeakerLabels(const std::vector<std::string>& speaker_ids, int* n_speakers = nullptr);

/// Checks `data` (source set, one label per utterance, labels in range, n_speakers >= 1, every
/// speaker present). Throws DataError naming the problem.
void ValidateTrainingData(const TrainingData& data);

}  // namespace asv::train
