// Kaldi's lossy CompressedMatrix (kaldi-asr/kaldi: src/matrix/compressed-matrix.{h,cc}), the
// "CM", "CM2" and "CM3" objects found in feats.ark files written with --compress=true.
//
// Binary layout after the token ("CM ", "CM2 " or "CM3 "), little-endian, no size prefixes:
//   float min_value, float range, int32 num_rows, int32 num_cols      (GlobalHeader minus format)
//   CM  (kOneByteWithColHeaders): num_cols × {uint16 p0, p25, p75, p100} per-column headers,
//       then num_cols × num_rows uint8 (column-major). A uint16 u means
//       min_value + range·(1/65535)·u; byte b decodes piecewise-linearly: b <= 64 in [p0, p25]
//       (step 1/64), b <= 192 in [p25, p75] (step 1/128), else [p75, p100] (step 1/63).
//   CM2 (kTwoByte): num_rows × num_cols uint16 (row-major), value min_value + u·range/65535.
//   CM3 (kOneByte): num_rows × num_cols uint8 (row-major), value min_value + b·range/255.
// A header with num_cols == 0 is an empty matrix and has no data. Decoding reproduces Kaldi's
// CopyToMat bit for bit (including its float/double mix); encoding follows CopyFromMat.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::features {

/// Kaldi's CompressionMethod (the value of --compression-method in copy-feats).
enum class CompressionMethod : int {
  kAutomatic = 1,               ///< kSpeechFeature if more than 8 rows, else kTwoByteAuto.
  kSpeechFeature = 2,           ///< CM: one byte per value, per-column percentile headers.
  kTwoByteAuto = 3,             ///< CM2 with range [min, max] of the matrix.
  kTwoByteSignedInteger = 4,    ///< CM2 with range [-32768, 32767].
  kOneByteAuto = 5,             ///< CM3 with range [min, max].
  kOneByteUnsignedInteger = 6,  ///< CM3 with range [0, 255].
  kOneByteZeroOne = 7,          ///< CM3 with range [0, 1].
};

/// A compressed matrix held in Kaldi's byte layout.
class CompressedMatrix {
 public:
  /// Kaldi's DataFormat.
  enum class Format : int { kOneByteWithColHeaders = 1, kTwoByte = 2, kOneByte = 3 };

  CompressedMatrix() = default;

  /// Compresses `m` [rows, cols] like CompressedMatrix::CopyFromMat. Throws DataError for
  /// NaN/Inf values (auto ranges) and for methods other than the seven above.
  static CompressedMatrix Compress(const Matrix& m, CompressionMethod method = CompressionMethod::kAutomatic);

  /// Builds from the token ("CM", "CM2", "CM3") and the bytes that follow it in a binary Kaldi
  /// stream (header without format, then data; `bytes` must hold exactly that). Throws
  /// DataError (prefixed by `where`) for an unknown token, negative sizes or a size mismatch.
  static CompressedMatrix FromBytes(const std::string& token, const std::string& bytes, const std::string& where);

  /// Number of data bytes that follow the 16-byte header for this format and shape.
  static std::int64_t DataBytes(Format format, std::int64_t rows, std::int64_t cols);

  /// The binary object as Kaldi writes it: token, space, header without format, data.
  std::string ToBytes() const;

  /// Decoded matrix [rows, cols] (CompressedMatrix::CopyToMat).
  Matrix Decompress() const;

  Format format() const noexcept { return format_; }
  std::int32_t rows() const noexcept { return rows_; }
  std::int32_t cols() const noexcept { return cols_; }
  float min_value() const noexcept { return min_value_; }
  float range() const noexcept { return range_; }

 private:
  Format format_ = Format::kOneByteWithColHeaders;
  float min_value_ = 0.0f;
  float range_ = 0.0f;
  std::int32_t rows_ = 0;
  std::int32_t cols_ = 0;
  std::vector<std::uint8_t> data_;  // everything after the header, as on disk
};

}  // namespace asv::features
