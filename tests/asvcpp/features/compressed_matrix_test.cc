#include "asvcpp/features/compressed_matrix.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/features/kaldi_io.h"
#include "tests/asvcpp/features/test_util.h"

namespace asv::features {
namespace {

// Little-endian helpers for building Kaldi bytes by hand.
void PutF32(std::string* s, float v) {
  s->append(reinterpret_cast<const char*>(&v), 4);
}
void PutI32(std::string* s, std::int32_t v) {
  s->append(reinterpret_cast<const char*>(&v), 4);
}
void PutU16(std::string* s, std::uint16_t v) {
  s->append(reinterpret_cast<const char*>(&v), 2);
}

Matrix ReadFromArk(const std::string& object_bytes) {
  std::istringstream in("utt " + object_bytes);
  std::string key;
  in >> key;
  in.get();
  return ReadKaldiObject(in, "test").ToMatrix();
}

TEST(FeaturesCompressedMatrix, TwoByteFormatByHand) {
  // CM2, min 0, range 65535: the increment is exactly 1, so values decode to the uint16s.
  std::string s("\0BCM2 ", 6);
  PutF32(&s, 0.0f);
  PutF32(&s, 65535.0f);
  PutI32(&s, 2);  // rows
  PutI32(&s, 3);  // cols
  for (std::uint16_t v : {0, 1, 2, 100, 40000, 65535}) PutU16(&s, v);
  const Matrix m = ReadFromArk(s);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m(0, 0), 0.0f);
  EXPECT_EQ(m(0, 2), 2.0f);
  EXPECT_EQ(m(1, 0), 100.0f);
  EXPECT_EQ(m(1, 1), 40000.0f);
  EXPECT_EQ(m(1, 2), 65535.0f);
  // min -1, range 2: value = -1 + u·(2/65535).
  std::string t("\0BCM2 ", 6);
  PutF32(&t, -1.0f);
  PutF32(&t, 2.0f);
  PutI32(&t, 1);
  PutI32(&t, 2);
  PutU16(&t, 0);
  PutU16(&t, 65535);
  const Matrix n = ReadFromArk(t);
  EXPECT_EQ(n(0, 0), -1.0f);
  EXPECT_NEAR(n(0, 1), 1.0f, 1e-6);
}

TEST(FeaturesCompressedMatrix, OneByteFormatByHand) {
  // CM3, min 10, range 255: increment 1.
  std::string s("\0BCM3 ", 6);
  PutF32(&s, 10.0f);
  PutF32(&s, 255.0f);
  PutI32(&s, 3);
  PutI32(&s, 1);
  for (std::uint8_t v : {0, 7, 255}) s.push_back(static_cast<char>(v));
  const Matrix m = ReadFromArk(s);
  ASSERT_EQ(m.rows(), 3);
  EXPECT_EQ(m(0, 0), 10.0f);
  EXPECT_EQ(m(1, 0), 17.0f);
  EXPECT_EQ(m(2, 0), 265.0f);
}

TEST(FeaturesCompressedMatrix, ColumnHeaderFormatByHand) {
  // CM with global min 0 and range 65535 (uint16 u decodes to ~u). Column 0 has percentiles
  // 0, 64, 192, 255 so byte b decodes to ~b in all three segments; column 1 has 100, 200,
  // 300, 1000: b = 32 -> 100 + 100·32/64 = 150, b = 128 -> 200 + 100·64/128 = 250,
  // b = 255 -> 1000, b = 223 -> 300 + 700·31/63.
  std::string s("\0BCM ", 5);
  PutF32(&s, 0.0f);
  PutF32(&s, 65535.0f);
  PutI32(&s, 4);  // rows
  PutI32(&s, 2);  // cols
  for (std::uint16_t v : {0, 64, 192, 255}) PutU16(&s, v);
  for (std::uint16_t v : {100, 200, 300, 1000}) PutU16(&s, v);
  for (std::uint8_t b : {0, 64, 100, 255}) s.push_back(static_cast<char>(b));    // column 0
  for (std::uint8_t b : {32, 128, 255, 223}) s.push_back(static_cast<char>(b));  // column 1
  const Matrix m = ReadFromArk(s);
  ASSERT_EQ(m.rows(), 4);
  ASSERT_EQ(m.cols(), 2);
  const float expected0[] = {0, 64, 100, 255};
  for (int r = 0; r < 4; ++r) EXPECT_NEAR(m(r, 0), expected0[r], 1e-2) << r;
  EXPECT_NEAR(m(0, 1), 150.0f, 1e-2);
  EXPECT_NEAR(m(1, 1), 250.0f, 1e-2);
  EXPECT_NEAR(m(2, 1), 1000.0f, 1e-2);
  EXPECT_NEAR(m(3, 1), 300.0f + 700.0f * 31.0f / 63.0f, 1e-2);
}

TEST(FeaturesCompressedMatrix, EmptyAndTruncated) {
  std::string empty("\0BCM ", 5);
  PutF32(&empty, 0.0f);
  PutF32(&empty, 0.0f);
  PutI32(&empty, 0);
  PutI32(&empty, 0);
  EXPECT_EQ(ReadFromArk(empty).rows(), 0);
  std::string cut("\0BCM2 ", 6);
  PutF32(&cut, 0.0f);
  PutF32(&cut, 1.0f);
  PutI32(&cut, 10);
  PutI32(&cut, 10);
  PutU16(&cut, 1);  // 2 of 200 bytes
  EXPECT_THROW(ReadFromArk(cut), DataError);
  std::string neg("\0BCM3 ", 6);
  PutF32(&neg, 0.0f);
  PutF32(&neg, 1.0f);
  PutI32(&neg, -3);
  PutI32(&neg, 2);
  EXPECT_THROW(ReadFromArk(neg), DataError);
  EXPECT_THROW(CompressedMatrix::FromBytes("CM4", std::string(16, '\0'), "x"), DataError);
}

Matrix SpeechLike(std::int64_t rows, std::int64_t cols) {
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) m(r, c) = (c == 0 ? 15.0f : 0.0f) + (5.0f / (1 + c)) * dist(gen);
  return m;
}

TEST(FeaturesCompressedMatrix, RoundTripErrorBounds) {
  const Matrix m = SpeechLike(300, 30);
  float lo = m.data()[0], hi = lo;
  for (std::int64_t i = 0; i < m.rows() * m.cols(); ++i) {
    lo = std::min(lo, m.data()[i]);
    hi = std::max(hi, m.data()[i]);
  }
  const float range = hi - lo;
  // CM2: uniform quantisation in 65535 steps -> half a step; Kaldi rounds with +0.499, so
  // 0.501 steps at worst (+ float rounding).
  {
    const auto c = CompressedMatrix::Compress(m, CompressionMethod::kTwoByteAuto);
    EXPECT_EQ(c.format(), CompressedMatrix::Format::kTwoByte);
    const Matrix d = c.Decompress();
    for (std::int64_t i = 0; i < m.rows() * m.cols(); ++i)
      EXPECT_LE(std::fabs(d.data()[i] - m.data()[i]), 0.501f * range / 65535 + 1e-5f);
  }
  // CM3: 255 steps.
  {
    const Matrix d = CompressedMatrix::Compress(m, CompressionMethod::kOneByteAuto).Decompress();
    for (std::int64_t i = 0; i < m.rows() * m.cols(); ++i)
      EXPECT_LE(std::fabs(d.data()[i] - m.data()[i]), 0.501f * range / 255 + 1e-5f);
  }
  // CM (automatic for > 8 rows): per column, at most half of the widest of the three byte
  // steps ((p25-p0)/64, (p75-p25)/128, (p100-p75)/63) plus the uint16 header quantisation.
  {
    const auto c = CompressedMatrix::Compress(m);
    EXPECT_EQ(c.format(), CompressedMatrix::Format::kOneByteWithColHeaders);
    const Matrix d = c.Decompress();
    for (std::int64_t col = 0; col < m.cols(); ++col) {
      std::vector<float> v;
      for (std::int64_t r = 0; r < m.rows(); ++r) v.push_back(m(r, col));
      std::sort(v.begin(), v.end());
      const std::size_t q = v.size() / 4;
      const float step = std::max({(v[q] - v[0]) / 64, (v[3 * q] - v[q]) / 128, (v.back() - v[3 * q]) / 63});
      for (std::int64_t r = 0; r < m.rows(); ++r)
        EXPECT_LE(std::fabs(d(r, col) - m(r, col)), 0.5f * step + 2 * range / 65535 + 1e-5f) << r << "," << col;
    }
  }
  // A small matrix (<= 8 rows) is stored with two bytes; a constant matrix survives.
  EXPECT_EQ(CompressedMatrix::Compress(SpeechLike(8, 3)).format(), CompressedMatrix::Format::kTwoByte);
  const Matrix constant(20, 4, -3.5f);
  const Matrix dc = CompressedMatrix::Compress(constant).Decompress();
  for (std::int64_t i = 0; i < 80; ++i) EXPECT_NEAR(dc.data()[i], -3.5f, 1e-3);
}

TEST(FeaturesCompressedMatrix, WrittenAndReadThroughArchives) {
  const auto dir = testing::TempDir("cm_ark");
  const std::string ark = (dir / "c.ark").string(), scp = (dir / "c.scp").string();
  const Matrix m = SpeechLike(50, 13);
  {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.WriteCompressed("cm", m);
    w.WriteCompressed("cm2", m, CompressionMethod::kTwoByteAuto);
    w.WriteCompressed("cm3", m, CompressionMethod::kOneByteAuto);
    w.WriteCompressed("int16", m, CompressionMethod::kTwoByteSignedInteger);
    w.Close();
  }
  TableReader r("scp:" + scp);
  for (auto method : {CompressionMethod::kSpeechFeature, CompressionMethod::kTwoByteAuto,
                      CompressionMethod::kOneByteAuto, CompressionMethod::kTwoByteSignedInteger}) {
    ASSERT_TRUE(r.Next());
    EXPECT_EQ(r.value().ToMatrix(), CompressedMatrix::Compress(m, method).Decompress()) << r.key();
  }
  EXPECT_FALSE(r.Next());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asv::features
