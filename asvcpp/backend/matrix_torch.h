// Conversions between asv::Matrix / asv::MatrixD and LibTorch tensors (CPU). Include only from
// code that already uses LibTorch; the back-end's public headers do not.
#pragma once

#include <torch/torch.h>

#include "asvcpp/base/matrix.h"

namespace asv::backend {

/// [rows, cols] contiguous CPU tensor, float32 (Matrix) or float64 (MatrixD); the data is copied.
torch::Tensor ToTensor(const Matrix& m);
torch::Tensor ToTensor(const MatrixD& m);

/// [rows, cols] contiguous CPU float32 tensor of `m`'s values rounded to float, converted by a
/// plain loop: no LibTorch operation, so no OpenMP region whose workers keep spinning for a few
/// milliseconds after it on the cores that the BLAS calls which follow need.
torch::Tensor ToFloatTensor(const MatrixD& m);

/// Zero-copy float32 view of `m`; valid only while `m` lives and is not resized.
torch::Tensor ViewTensor(const Matrix& m);

/// Copies a 2-D tensor (any floating dtype, any device) into a Matrix (float32) or MatrixD.
/// Throws std::invalid_argument when `t` is not 2-D.
Matrix ToMatrix(const torch::Tensor& t);
MatrixD ToMatrixD(const torch::Tensor& t);

/// Copies a 1-D tensor into a std::vector.
std::vector<float> ToFloatVector(const torch::Tensor& t);
std::vector<double> DoublesOf(const torch::Tensor& t);

}  // namespace asv::backend
