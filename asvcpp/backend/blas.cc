#include "asvcpp/backend/blas.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
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

// InvertLowerTriangular without the check: blocks of up to this many columns go to dtrtri.
constexpr int kTriangularLeaf = 64;

void InvertLowerTriangularBlock(int n, double* a, int lda) {
  if (n <= kTriangularLeaf) {
    int info = 0;
    dtrtri_("L", "N", &n, a, &lda, &info, 1, 1);
    return;  // info != 0 (a zero diagonal entry) was ruled out by the caller
  }
  const int n1 = n / 2, n2 = n - n1;
  // a = [A 0; B C]: A [n1, n1] at the top left, B [n2, n1] below it, C [n2, n2] at the bottom right.
  double* const top = a;
  double* const below = a + n1;
  double* const bottom = a + n1 + static_cast<std::size_t>(n1) * static_cast<std::size_t>(lda);
  InvertLowerTriangularBlock(n1, top, lda);
  InvertLowerTriangularBlock(n2, bottom, lda);
  const double one = 1.0, minus_one = -1.0;
  dtrmm_("R", "L", "N", "N", &n2, &n1, &one, top, &lda, below, &lda, 1, 1, 1, 1);           // B A^-1
  dtrmm_("L", "L", "N", "N", &n2, &n1, &minus_one, bottom, &lda, below, &lda, 1, 1, 1, 1);  // -C^-1 B A^-1
}

}  // namespace

void InvertLowerTriangular(int n, double* a, int lda) {
  if (n < 0 || lda < std::max(1, n)) {
    throw std::invalid_argument(fmt::format("InvertLowerTriangular: n = {}, lda = {}", n, lda));
  }
  for (int i = 0; i < n; ++i) {
    if (a[static_cast<std::size_t>(i) * static_cast<std::size_t>(lda) + static_cast<std::size_t>(i)] == 0.0) {
      throw std::invalid_argument(
          fmt::format("InvertLowerTriangular: the [{0}, {0}] matrix is singular (diagonal entry {1} is 0)", n, i));
    }
  }
  if (n > 0) InvertLowerTriangularBlock(n, a, lda);
}

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

void GemmRowMajorDouble(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                        std::int64_t lda, const double* b, std::int64_t ldb, double* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  // The column-major reading of GemmRowMajor.
  const int mi = BlasInt(n, "columns"), ni = BlasInt(m, "rows"), ki = BlasInt(k, "inner size");
  const int ld_a = BlasInt(std::max<std::int64_t>(1, lda), "lda");
  const int ld_b = BlasInt(std::max<std::int64_t>(1, ldb), "ldb");
  const int ld_c = BlasInt(std::max<std::int64_t>(1, ldc), "ldc");
  const double one = 1.0, zero = 0.0;
  dgemm_(transpose_b ? "T" : "N", "N", &mi, &ni, &ki, &one, b, &ld_b, a, &ld_a, &zero, c, &ld_c, 1, 1);
}

}  // namespace asv::backend
