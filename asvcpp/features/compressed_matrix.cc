#include "asvcpp/features/compressed_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

// The GlobalHeader fields in the order Kaldi stores them (its `format` field is not written).
struct Header {
  float min_value;
  float range;
  std::int32_t num_rows;
  std::int32_t num_cols;
};
static_assert(sizeof(Header) == 16, "Kaldi's header is 16 bytes on disk");

struct PerColHeader {
  std::uint16_t p0, p25, p75, p100;
};
static_assert(sizeof(PerColHeader) == 8, "Kaldi's per-column header is 8 bytes");

std::uint16_t FloatToUint16(float min_value, float range, float value) {
  float f = (value - min_value) / range;
  if (f > 1.0f) f = 1.0f;
  if (f < 0.0f) f = 0.0f;
  return static_cast<std::uint16_t>(static_cast<int>(f * 65535 + 0.499));
}

std::uint8_t FloatToUint8(float min_value, float range, float value) {
  float f = (value - min_value) / range;
  if (f > 1.0f) f = 1.0f;
  if (f < 0.0f) f = 0.0f;
  return static_cast<std::uint8_t>(static_cast<int>(f * 255 + 0.499));
}

float Uint16ToFloat(float min_value, float range, std::uint16_t value) {
  return min_value + range * 1.52590218966964e-05F * value;
}

std::uint8_t FloatToChar(float p0, float p25, float p75, float p100, float value) {
  int ans;
  if (value < p25) {
    const float f = (value - p0) / (p25 - p0);
    ans = static_cast<int>(f * 64 + 0.5);
    ans = std::clamp(ans, 0, 64);
  } else if (value < p75) {
    const float f = (value - p25) / (p75 - p25);
    ans = 64 + static_cast<int>(f * 128 + 0.5);
    ans = std::clamp(ans, 64, 192);
  } else {
    const float f = (value - p75) / (p100 - p75);
    ans = 192 + static_cast<int>(f * 63 + 0.5);
    ans = std::clamp(ans, 192, 255);
  }
  return static_cast<std::uint8_t>(ans);
}

// Same expression types as Kaldi: (float difference) · (int) · (double constant) in double.
float CharToFloat(float p0, float p25, float p75, float p100, std::uint8_t value) {
  if (value <= 64) return static_cast<float>(p0 + (p25 - p0) * value * (1 / 64.0));
  if (value <= 192) return static_cast<float>(p25 + (p75 - p25) * (value - 64) * (1 / 128.0));
  return static_cast<float>(p75 + (p100 - p75) * (value - 192) * (1 / 63.0));
}

PerColHeader ComputeColHeader(float min_value, float range, std::vector<float> sdata) {
  const auto num_rows = static_cast<std::int64_t>(sdata.size());
  PerColHeader h{};
  auto to16 = [&](float v) { return FloatToUint16(min_value, range, v); };
  if (num_rows >= 5) {
    const std::int64_t q = num_rows / 4;
    std::nth_element(sdata.begin(), sdata.begin() + q, sdata.end());
    std::nth_element(sdata.begin(), sdata.begin(), sdata.begin() + q);
    std::nth_element(sdata.begin() + q + 1, sdata.begin() + 3 * q, sdata.end());
    std::nth_element(sdata.begin() + 3 * q + 1, sdata.end() - 1, sdata.end());
    h.p0 = std::min<std::uint16_t>(to16(sdata[0]), 65532);
    h.p25 = std::min<std::uint16_t>(
        std::max<std::uint16_t>(to16(sdata[static_cast<std::size_t>(q)]), static_cast<std::uint16_t>(h.p0 + 1)), 65533);
    h.p75 = std::min<std::uint16_t>(
        std::max<std::uint16_t>(to16(sdata[static_cast<std::size_t>(3 * q)]), static_cast<std::uint16_t>(h.p25 + 1)),
        65534);
    h.p100 = std::max<std::uint16_t>(to16(sdata[static_cast<std::size_t>(num_rows - 1)]),
                                     static_cast<std::uint16_t>(h.p75 + 1));
  } else {
    std::sort(sdata.begin(), sdata.end());
    h.p0 = std::min<std::uint16_t>(to16(sdata[0]), 65532);
    h.p25 = num_rows > 1 ? std::min<std::uint16_t>(
                               std::max<std::uint16_t>(to16(sdata[1]), static_cast<std::uint16_t>(h.p0 + 1)), 65533)
                         : static_cast<std::uint16_t>(h.p0 + 1);
    h.p75 = num_rows > 2 ? std::min<std::uint16_t>(
                               std::max<std::uint16_t>(to16(sdata[2]), static_cast<std::uint16_t>(h.p25 + 1)), 65534)
                         : static_cast<std::uint16_t>(h.p25 + 1);
    h.p100 = num_rows > 3 ? std::max<std::uint16_t>(to16(sdata[3]), static_cast<std::uint16_t>(h.p75 + 1))
                          : static_cast<std::uint16_t>(h.p75 + 1);
  }
  return h;
}

}  // namespace

std::int64_t CompressedMatrix::DataBytes(Format format, std::int64_t rows, std::int64_t cols) {
  switch (format) {
    case Format::kOneByteWithColHeaders:
      return cols * (static_cast<std::int64_t>(sizeof(PerColHeader)) + rows);
    case Format::kTwoByte:
      return 2 * rows * cols;
    case Format::kOneByte:
      return rows * cols;
  }
  return 0;
}

CompressedMatrix CompressedMatrix::Compress(const Matrix& m, CompressionMethod method) {
  CompressedMatrix c;
  if (m.rows() == 0) return c;  // Kaldi stores an empty matrix as a null pointer; written as 0 x 0.
  if (m.rows() > INT32_MAX || m.cols() > INT32_MAX) throw DataError("CompressedMatrix: matrix too large");
  if (method == CompressionMethod::kAutomatic) {
    method = m.rows() > 8 ? CompressionMethod::kSpeechFeature : CompressionMethod::kTwoByteAuto;
  }
  switch (method) {
    case CompressionMethod::kSpeechFeature:
      c.format_ = Format::kOneByteWithColHeaders;
      break;
    case CompressionMethod::kTwoByteAuto:
    case CompressionMethod::kTwoByteSignedInteger:
      c.format_ = Format::kTwoByte;
      break;
    case CompressionMethod::kOneByteAuto:
    case CompressionMethod::kOneByteUnsignedInteger:
    case CompressionMethod::kOneByteZeroOne:
      c.format_ = Format::kOneByte;
      break;
    default:
      throw DataError(fmt::format("invalid compression method {}", static_cast<int>(method)));
  }
  c.rows_ = static_cast<std::int32_t>(m.rows());
  c.cols_ = static_cast<std::int32_t>(m.cols());
  const std::int64_t count = m.rows() * m.cols();
  switch (method) {
    case CompressionMethod::kSpeechFeature:
    case CompressionMethod::kTwoByteAuto:
    case CompressionMethod::kOneByteAuto: {
      float min_value = count > 0 ? m.data()[0] : 0.0f;
      float max_value = min_value;
      for (std::int64_t i = 0; i < count; ++i) {
        const float v = m.data()[i];
        if (!std::isfinite(v)) throw DataError("CompressedMatrix: cannot compress a matrix with NaN or Inf");
        min_value = std::min(min_value, v);
        max_value = std::max(max_value, v);
      }
      if (max_value == min_value) max_value = min_value + (1.0f + std::fabs(min_value));
      c.min_value_ = min_value;
      c.range_ = max_value - min_value;
      break;
    }
    case CompressionMethod::kTwoByteSignedInteger:
      c.min_value_ = -32768.0f;
      c.range_ = 65535.0f;
      break;
    case CompressionMethod::kOneByteUnsignedInteger:
      c.min_value_ = 0.0f;
      c.range_ = 255.0f;
      break;
    default:  // kOneByteZeroOne
      c.min_value_ = 0.0f;
      c.range_ = 1.0f;
      break;
  }
  c.data_.assign(static_cast<std::size_t>(DataBytes(c.format_, c.rows_, c.cols_)), 0);
  const std::int64_t rows = c.rows_, cols = c.cols_;
  if (c.format_ == Format::kOneByteWithColHeaders) {
    std::uint8_t* headers = c.data_.data();
    std::uint8_t* bytes = headers + cols * static_cast<std::int64_t>(sizeof(PerColHeader));
    std::vector<float> column(static_cast<std::size_t>(rows));
    for (std::int64_t col = 0; col < cols; ++col) {
      for (std::int64_t r = 0; r < rows; ++r) column[static_cast<std::size_t>(r)] = m(r, col);
      const PerColHeader h = ComputeColHeader(c.min_value_, c.range_, column);
      std::memcpy(headers + col * static_cast<std::int64_t>(sizeof(PerColHeader)), &h, sizeof(h));
      const float p0 = Uint16ToFloat(c.min_value_, c.range_, h.p0);
      const float p25 = Uint16ToFloat(c.min_value_, c.range_, h.p25);
      const float p75 = Uint16ToFloat(c.min_value_, c.range_, h.p75);
      const float p100 = Uint16ToFloat(c.min_value_, c.range_, h.p100);
      for (std::int64_t r = 0; r < rows; ++r) bytes[col * rows + r] = FloatToChar(p0, p25, p75, p100, m(r, col));
    }
  } else if (c.format_ == Format::kTwoByte) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint16_t u = FloatToUint16(c.min_value_, c.range_, m.data()[i]);
      std::memcpy(c.data_.data() + 2 * i, &u, 2);
    }
  } else {
    for (std::int64_t i = 0; i < count; ++i) {
      c.data_[static_cast<std::size_t>(i)] = FloatToUint8(c.min_value_, c.range_, m.data()[i]);
    }
  }
  return c;
}

CompressedMatrix CompressedMatrix::FromBytes(const std::string& token, const std::string& bytes,
                                             const std::string& where) {
  CompressedMatrix c;
  if (token == "CM") {
    c.format_ = Format::kOneByteWithColHeaders;
  } else if (token == "CM2") {
    c.format_ = Format::kTwoByte;
  } else if (token == "CM3") {
    c.format_ = Format::kOneByte;
  } else {
    throw DataError(fmt::format("{}: unexpected token '{}', expecting CM, CM2 or CM3", where, token));
  }
  if (bytes.size() < sizeof(Header)) throw DataError(fmt::format("{}: truncated compressed-matrix header", where));
  Header h{};
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.num_cols == 0) {
    if (bytes.size() != sizeof(Header))
      throw DataError(fmt::format("{}: empty compressed matrix followed by data", where));
    return CompressedMatrix{};
  }
  if (h.num_rows < 0 || h.num_cols < 0) {
    throw DataError(fmt::format("{}: compressed matrix has negative size {} x {}", where, h.num_rows, h.num_cols));
  }
  const std::int64_t need = DataBytes(c.format_, h.num_rows, h.num_cols);
  if (static_cast<std::int64_t>(bytes.size()) - static_cast<std::int64_t>(sizeof(Header)) != need) {
    throw DataError(fmt::format("{}: compressed matrix {} x {} ({}) needs {} data bytes, got {}", where, h.num_rows,
                                h.num_cols, token, need, bytes.size() - sizeof(Header)));
  }
  c.min_value_ = h.min_value;
  c.range_ = h.range;
  c.rows_ = h.num_rows;
  c.cols_ = h.num_cols;
  c.data_.assign(bytes.begin() + sizeof(Header), bytes.end());
  return c;
}

std::string CompressedMatrix::ToBytes() const {
  std::string out;
  out += format_ == Format::kOneByteWithColHeaders ? "CM " : format_ == Format::kTwoByte ? "CM2 " : "CM3 ";
  Header h{min_value_, range_, rows_, cols_};
  if (cols_ == 0 || rows_ == 0) h = Header{0.0f, 0.0f, 0, 0};
  out.append(reinterpret_cast<const char*>(&h), sizeof(h));
  if (h.num_cols != 0) out.append(reinterpret_cast<const char*>(data_.data()), data_.size());
  return out;
}

Matrix CompressedMatrix::Decompress() const {
  Matrix m(rows_, cols_);
  if (rows_ == 0 || cols_ == 0) return m;
  const std::int64_t rows = rows_, cols = cols_;
  if (format_ == Format::kOneByteWithColHeaders) {
    const std::uint8_t* headers = data_.data();
    const std::uint8_t* bytes = headers + cols * static_cast<std::int64_t>(sizeof(PerColHeader));
    for (std::int64_t col = 0; col < cols; ++col) {
      PerColHeader h{};
      std::memcpy(&h, headers + col * static_cast<std::int64_t>(sizeof(PerColHeader)), sizeof(h));
      const float p0 = Uint16ToFloat(min_value_, range_, h.p0);
      const float p25 = Uint16ToFloat(min_value_, range_, h.p25);
      const float p75 = Uint16ToFloat(min_value_, range_, h.p75);
      const float p100 = Uint16ToFloat(min_value_, range_, h.p100);
      for (std::int64_t r = 0; r < rows; ++r) m(r, col) = CharToFloat(p0, p25, p75, p100, bytes[col * rows + r]);
    }
  } else if (format_ == Format::kTwoByte) {
    const float increment = static_cast<float>(range_ * (1.0 / 65535.0));
    for (std::int64_t i = 0; i < rows * cols; ++i) {
      std::uint16_t u;
      std::memcpy(&u, data_.data() + 2 * i, 2);
      m.data()[i] = min_value_ + u * increment;
    }
  } else {
    const float increment = static_cast<float>(range_ * (1.0 / 255.0));
    for (std::int64_t i = 0; i < rows * cols; ++i)
      m.data()[i] = min_value_ + data_[static_cast<std::size_t>(i)] * increment;
  }
  return m;
}

}  // namespace asv::features
