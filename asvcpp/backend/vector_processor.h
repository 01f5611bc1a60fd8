// Embedding pre-processing before PLDA/cosine scoring: centering, PCA whitening and length
// normalisation in any order (ASVtorch asvtorch/src/backend/vector_processing.py, reference 8.1).
//
// The instruction string is read left to right; each character is one step, trained on the
// training vectors as transformed by the steps before it, with its own parameters:
//   'c'  centering: x <- x - m, m = mean of the vectors.
//   'w'  PCA whitening: C = X^T X / N of the vectors as they are (normally centred first; no mean
//        is removed here), C = U diag(l) U^T, l clamped to >= 1e-8, W = U diag(l^-1/2),
//        x <- x W (row vectors). Eigenvector signs are fixed by making the largest-magnitude
//        entry of each column positive (ASVtorch left them to LAPACK); this is an orthogonal
//        change of coordinates that no PLDA or cosine score depends on.
//   'l'  length normalisation: x <- x / |x|_2; zero vectors stay zero (Garcia-Romero &
//        Espy-Wilson, "Analysis of i-vector length normalization in speaker recognition
//        systems", Interspeech 2011).
// Letters may repeat ("cwlc"). Any other character is an error (ASVtorch ignored it silently).
// ASVtorch's recipes use "cwl" for x-vectors and neural i-vectors, "cl" for i-vectors.
// Arithmetic is float64 (ASVtorch: float32); inputs and outputs are float32 matrices.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::backend {

class VectorProcessor {
 public:
  /// Identity (empty instruction, any dimension).
  VectorProcessor() = default;

  /// Throws ConfigError naming the character and its position when `instruction` contains
  /// anything but 'c', 'w' and 'l'.
  static void ValidateInstruction(const std::string& instruction);

  /// Trains every step on `vectors` ([n, dim], n >= 1; n >= 2 advisable for 'w'). When
  /// `processed` is given it receives the training vectors after all steps ([n, dim]), i.e.
  /// Process(vectors), without computing them twice.
  /// Throws ConfigError for a bad instruction, DataError when `vectors` is empty (n = 0 or dim = 0)
  /// or holds a non-finite value.
  static VectorProcessor Train(const Matrix& vectors, const std::string& instruction, Matrix* processed = nullptr);

  /// Applies the trained steps: [n, dim] -> [n, dim]. Throws std::invalid_argument when the
  /// dimension differs from the trained one.
  Matrix Process(const Matrix& vectors) const;

  const std::string& instruction() const { return instruction_; }
  /// Trained dimension, or -1 for the default (identity) processor.
  std::int64_t dim() const { return dim_; }
  /// Means subtracted by the 'c' steps, in order: each [dim].
  const std::vector<std::vector<double>>& centers() const { return centers_; }
  /// Whitening matrices W of the 'w' steps, in order: each [dim, dim].
  const std::vector<MatrixD>& whitening_matrices() const { return whitening_; }

  /// Binary file (model_io.h, magic "ASVVPROC"), written atomically. Throws DataError on failure.
  void Save(const std::filesystem::path& path) const;
  /// Throws DataError naming the path when it is missing, not a processor file, or corrupt.
  static VectorProcessor Load(const std::filesystem::path& path);

 private:
  std::string instruction_;
  std::int64_t dim_ = -1;
  std::vector<std::vector<double>> centers_;
  std::vector<MatrixD> whitening_;
};

}  // namespace asv::backend
