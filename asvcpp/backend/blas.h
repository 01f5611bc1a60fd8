// BLAS and LAPACK routines the back-end calls directly (internal to asv_backend; no LibTorch).
// Fortran interface, as every BLAS/LAPACK LibTorch links exports it (OpenBLAS, MKL, reference
// LAPACK). Fortran matrices are column-major; the trailing size_t arguments are the hidden
// lengths of the character arguments.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c, const int* ldc,
            std::size_t, std::size_t);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc, std::size_t, std::size_t);
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha, const double* a,
            const int* lda, const double* beta, double* c, const int* ldc, std::size_t, std::size_t);
void dtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
            const double* alpha, const double* a, const int* lda, double* b, const int* ldb, std::size_t, std::size_t,
            std::size_t, std::size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t);
void dpocon_(const char* uplo, const int* n, const double* a, const int* lda, const double* anorm, double* rcond,
             double* work, int* iwork, int* info, std::size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, std::size_t, std::size_t);
void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda, int* info, std::size_t,
             std::size_t);
void dlauum_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t);
void dtrmm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
            const double* alpha, const double* a, const int* lda, double* b, const int* ldb, std::size_t, std::size_t,
            std::size_t, std::size_t);
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e, double* tau, double* work,
             const int* lwork, int* info, std::size_t);
void dstedc_(const char* compz, const int* n, double* d, double* e, double* z, const int* ldz, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, std::size_t);
void dormtr_(const char* side, const char* uplo, const char* trans, const int* m, const int* n, const double* a,
             const int* lda, const double* tau, double* c, const int* ldc, double* work, const int* lwork, int* info,
             std::size_t, std::size_t, std::size_t);
}

namespace asv::backend {

/// Row-major single-precision product C = A op(B) + beta C: A [m, k] (row stride lda), op(B)
/// [k, n] where B is stored [k, n] (row stride ldb) or, with `transpose_b`, [n, k]; C [m, n]
/// (row stride ldc). With beta = 0, C's old values are not read (may be uninitialised); beta = 1
/// adds to them without a separate pass. One sgemm call (the BLAS's own threads). Throws
/// std::length_error when a size does not fit the BLAS's 32-bit integers. Sizes of 0 are allowed.
void GemmRowMajor(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                  const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

/// GemmRowMajor in double precision: C = A op(B) with A, B and C double (beta = 0: C is only
/// written). One dgemm call. Throws what GemmRowMajor throws.
void GemmRowMajorDouble(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                        std::int64_t lda, const double* b, std::int64_t ldb, double* c, std::int64_t ldc);

/// In-place inverse of the lower triangular [n, n] column-major matrix `a` (leading dimension
/// `lda` >= max(1, n); the strict upper triangle is neither read nor written). Recursive blocked
/// algorithm (Elmroth, Gustavson, Jonsson and Kagstrom, "Recursive blocked algorithms and hybrid
/// data structures for dense matrix library software", SIAM Review 46(1), 2004): with
/// a = [A 0; B C], a^-1 = [A^-1 0; -C^-1 B A^-1 C^-1], the off-diagonal block from two
/// triangular products (dtrmm) once A and C are inverted, blocks of at most 64 columns by LAPACK
/// dtrtri. The same n^3 / 6 multiply-adds as dtrtri, nearly all in large level-3 calls: 512 x 512
/// in 1.1 ms at one thread where OpenBLAS 0.3.21's dtrtri takes 2.5-2.8 ms. Throws
/// std::invalid_argument, with `a` unchanged, when a diagonal entry is zero, n < 0 or
/// lda < max(1, n).
void InvertLowerTriangular(int n, double* a, int lda);

}  // namespace asv::backend
