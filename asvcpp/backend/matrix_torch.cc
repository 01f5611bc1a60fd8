#include "asvcpp/backend/matrix_torch.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace asv::backend {
namespace {

template <class T>
torch::Tensor CopyToTensor(const MatrixT<T>& m, torch::Dtype dtype) {
  torch::Tensor t = torch::empty({m.rows(), m.cols()}, torch::TensorOptions().dtype(dtype));
  if (!m.empty()) std::memcpy(t.data_ptr(), m.data(), static_cast<std::size_t>(m.rows() * m.cols()) * sizeof(T));
  return t;
}

template <class T>
MatrixT<T> CopyToMatrix(const torch::Tensor& t, torch::Dtype dtype) {
  if (t.dim() != 2) {
    throw std::invalid_argument(fmt::format("expected a 2-D tensor, got {} dimensions", t.dim()));
  }
  const torch::Tensor c = t.to(torch::kCPU, dtype).contiguous();
  MatrixT<T> m(c.size(0), c.size(1));
  if (!m.empty()) std::memcpy(m.data(), c.data_ptr(), static_cast<std::size_t>(m.rows() * m.cols()) * sizeof(T));
  return m;
}

template <class T>
std::vector<T> CopyToVector(const torch::Tensor& t, torch::Dtype dtype) {
  if (t.dim() != 1) {
    throw std::invalid_argument(fmt::format("expected a 1-D tensor, got {} dimensions", t.dim()));
  }
  const torch::Tensor c = t.to(torch::kCPU, dtype).contiguous();
  std::vector<T> v(static_cast<std::size_t>(c.size(0)));
  if (!v.empty()) std::memcpy(v.data(), c.data_ptr(), v.size() * sizeof(T));
  return v;
}

}  // namespace

torch::Tensor ToTensor(const Matrix& m) { return CopyToTensor(m, torch::kFloat32); }
torch::Tensor ToTensor(const MatrixD& m) { return CopyToTensor(m, torch::kFloat64); }

torch::Tensor ToFloatTensor(const MatrixD& m) {
  torch::Tensor t = torch::empty({m.rows(), m.cols()}, torch::kFloat32);
  float* out = t.data_ptr<float>();
  const double* in = m.data();
  for (std::int64_t i = 0; i < m.rows() * m.cols(); ++i) out[i] = static_cast<float>(in[i]);
  return t;
}

torch::Tensor ViewTensor(const Matrix& m) {
  if (m.empty()) return torch::empty({m.rows(), m.cols()}, torch::kFloat32);
  return torch::from_blob(const_cast<float*>(m.data()), {m.rows(), m.cols()}, torch::kFloat32);
}

Matrix ToMatrix(const torch::Tensor& t) { return CopyToMatrix<float>(t, torch::kFloat32); }
MatrixD ToMatrixD(const torch::Tensor& t) { return CopyToMatrix<double>(t, torch::kFloat64); }
std::vector<float> ToFloatVector(const torch::Tensor& t) { return CopyToVector<float>(t, torch::kFloat32); }
std::vector<double> DoublesOf(const torch::Tensor& t) { return CopyToVector<double>(t, torch::kFloat64); }

}  // namespace asv::backend
