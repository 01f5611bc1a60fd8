#include "asvcpp/backend/vector_processor.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "asvcpp/backend/matrix_torch.h"
#include "asvcpp/backend/model_io.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::backend {
namespace {

constexpr char kProcessorMagic[] = "ASVVPROC";
constexpr std::uint32_t kProcessorVersion = 1;
constexpr double kEigenvalueFloor = 1e-8;

torch::Tensor LengthNormalise(const torch::Tensor& x) {
  torch::Tensor norms = x.pow(2).sum(1, /*keepdim=*/true).sqrt();
  norms.masked_fill_(norms == 0, 1.0);
  return x / norms;
}

// Columns of u with the sign making each column's largest-magnitude entry positive.
torch::Tensor FixSigns(const torch::Tensor& u) {
  const torch::Tensor rows = u.abs().argmax(0);                // [d]
  const torch::Tensor pivots = u.gather(0, rows.unsqueeze(0));  // [1, d]
  return u * (1.0 - 2.0 * (pivots < 0).to(u.dtype()));
}

}  // namespace

void VectorProcessor::ValidateInstruction(const std::string& instruction) {
  for (std::size_t i = 0; i < instruction.size(); ++i) {
    const char c = instruction[i];
    if (c != 'c' && c != 'w' && c != 'l') {
      throw ConfigError(fmt::format(
          "vector processing instruction '{}': unknown step '{}' at position {} (known: 'c' centering, "
          "'w' whitening, 'l' length normalisation)",
          instruction, c, i + 1));
    }
  }
}

VectorProcessor VectorProcessor::Train(const Matrix& vectors, const std::string& instruction, Matrix* processed) {
  ValidateInstruction(instruction);
  if (vectors.rows() == 0 || vectors.cols() == 0) {
    throw DataError(fmt::format("vector processor: no training vectors ([{}, {}])", vectors.rows(), vectors.cols()));
  }
  torch::NoGradGuard no_grad;
  torch::Tensor x = ViewTensor(vectors).to(torch::kFloat64);
  if (!torch::isfinite(x).all().item<bool>()) {
    throw DataError("vector processor: training vectors contain NaN or infinite values");
  }
  const std::int64_t n = x.size(0);
  VectorProcessor vp;
  vp.instruction_ = instruction;
  vp.dim_ = x.size(1);
  ASV_LOG(Info, "training vector processor '{}' on {} vectors of dimension {}", instruction, n, vp.dim_);
  for (char step : instruction) {
    if (step == 'c') {
      const torch::Tensor mean = x.mean(0);
      vp.centers_.push_back(DoublesOf(mean));
      x = x - mean;
    } else if (step == 'w') {
      const torch::Tensor cov = x.t().matmul(x) / static_cast<double>(n);
      auto [eigenvalues, eigenvectors] = at::linalg_eigh(0.5 * (cov + cov.t()), "L");
      const torch::Tensor w = FixSigns(eigenvectors) * eigenvalues.clamp_min(kEigenvalueFloor).rsqrt();
      vp.whitening_.push_back(ToMatrixD(w));
      x = x.matmul(w);
    } else {
      x = LengthNormalise(x);
    }
  }
  if (processed != nullptr) *processed = ToMatrix(x);
  return vp;
}

Matrix VectorProcessor::Process(const Matrix& vectors) const {
  if (dim_ >= 0 && vectors.cols() != dim_ && vectors.rows() > 0) {
    throw std::invalid_argument(
        fmt::format("vector processor trained on dimension {} cannot process vectors of dimension {}", dim_, vectors.cols()));
  }
  if (instruction_.empty() || vectors.rows() == 0) return vectors;
  torch::NoGradGuard no_grad;
  torch::Tensor x = ViewTensor(vectors).to(torch::kFloat64);
  std::size_t ci = 0, wi = 0;
  for (char step : instruction_) {
    if (step == 'c') {
      const std::vector<double>& m = centers_[ci++];
      x = x - torch::from_blob(const_cast<double*>(m.data()), {dim_}, torch::kFloat64);
    } else if (step == 'w') {
      x = x.matmul(ToTensor(whitening_[wi++]));
    } else {
      x = LengthNormalise(x);
    }
  }
  return ToMatrix(x);
}

void VectorProcessor::Save(const std::filesystem::path& path) const {
  BinaryWriter w(std::string_view(kProcessorMagic, 8), kProcessorVersion);
  w.String(instruction_);
  w.Int(dim_);
  w.Int(static_cast<std::int64_t>(centers_.size()));
  for (const auto& c : centers_) w.Reals(c);
  w.Int(static_cast<std::int64_t>(whitening_.size()));
  for (const auto& m : whitening_) w.Matrix(m);
  w.WriteTo(path);
}

VectorProcessor VectorProcessor::Load(const std::filesystem::path& path) {
  BinaryReader r(path, std::string_view(kProcessorMagic, 8), kProcessorVersion);
  VectorProcessor vp;
  vp.instruction_ = r.String();
  try {
    ValidateInstruction(vp.instruction_);
  } catch (const ConfigError& e) {
    r.Fail(e.what());
  }
  vp.dim_ = r.Int();
  const std::int64_t n_c = r.Int();
  if (n_c < 0 || n_c > static_cast<std::int64_t>(vp.instruction_.size())) r.Fail("corrupt centering count");
  for (std::int64_t i = 0; i < n_c; ++i) vp.centers_.push_back(r.Reals());
  const std::int64_t n_w = r.Int();
  if (n_w < 0 || n_w > static_cast<std::int64_t>(vp.instruction_.size())) r.Fail("corrupt whitening count");
  for (std::int64_t i = 0; i < n_w; ++i) vp.whitening_.push_back(r.Matrix());
  r.ExpectEnd();
  const auto count = [&](char c) { return static_cast<std::int64_t>(std::count(vp.instruction_.begin(), vp.instruction_.end(), c)); };
  if (count('c') != n_c || count('w') != n_w) r.Fail("step parameters do not match the instruction");
  if (!vp.instruction_.empty() && vp.dim_ < 1) r.Fail("corrupt dimension");
  for (const auto& c : vp.centers_) {
    if (static_cast<std::int64_t>(c.size()) != vp.dim_) r.Fail("centering vector of the wrong dimension");
  }
  for (const auto& m : vp.whitening_) {
    if (m.rows() != vp.dim_ || m.cols() != vp.dim_) r.Fail("whitening matrix of the wrong shape");
  }
  return vp;
}

}  // namespace asv::backend
