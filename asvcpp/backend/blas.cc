#include "asvcpp/backend/blas.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace asv::backend {
namespace {

int BlasInt(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    throw std::length_error(fmt::format("BLAS: {} = {} does not fit a 32-bit BLAS integer", what, v));
  }
  return static_cast<int>(v);
}

}  // namespace

void GemmRowMajor(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                  const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: the row-major arrays read as
  // column-major are A^T, B^T and C^T, so B's transpose flag carries over and A is not transposed.
  const int mi = BlasInt(n, "columns"), ni = BlasInt(m, "rows"), ki = BlasInt(k, "inner size");
  // Leading dimensions of at least 1, as BLAS requires even when k = 0.
  const int ld_a = BlasInt(std::max<std::int64_t>(1, lda), "lda");
  const int ld_b = BlasInt(std::max<std::int64_t>(1, ldb), "ldb");
  const int ld_c = BlasInt(std::max<std::int64_t>(1, ldc), "ldc");
  const float one = 1.0f;
  sgemm_(transpose_b ? "T" : "N", "N", &mi, &ni, &ki, &one, b, &ld_b, a, &ld_a, &beta, c, &ld_c, 1, 1);
}

}  // namespace asv::backend
