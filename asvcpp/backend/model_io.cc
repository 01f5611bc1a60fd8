#include "asvcpp/backend/model_io.h"

#include <fmt/format.h>

#include <cstring>

#include "asvcpp/base/check.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::backend {
namespace {
constexpr std::uint32_t kByteOrderMark = 0x01020304u;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
}  // namespace

BinaryWriter::BinaryWriter(std::string_view magic, std::uint32_t version) {
  ASV_CHECK(magic.size() == 8, "magic must be 8 bytes");
  bytes_.append(magic.data(), magic.size());
  Raw(&version, sizeof version);
  Raw(&kByteOrderMark, sizeof kByteOrderMark);
}

void BinaryWriter::Raw(const void* p, std::size_t n) { bytes_.append(static_cast<const char*>(p), n); }
void BinaryWriter::Int(std::int64_t v) { Raw(&v, sizeof v); }
void BinaryWriter::Real(double v) { Raw(&v, sizeof v); }

void BinaryWriter::String(const std::string& s) {
  Int(static_cast<std::int64_t>(s.size()));
  Raw(s.data(), s.size());
}

void BinaryWriter::Reals(const std::vector<double>& v) {
  Int(static_cast<std::int64_t>(v.size()));
  Raw(v.data(), v.size() * sizeof(double));
}

void BinaryWriter::Matrix(const MatrixD& m) {
  Int(m.rows());
  Int(m.cols());
  Raw(m.data(), static_cast<std::size_t>(m.rows() * m.cols()) * sizeof(double));
}

void BinaryWriter::WriteTo(const std::filesystem::path& path) const { fs::WriteFileAtomic(path, bytes_); }

BinaryReader::BinaryReader(const std::filesystem::path& path, std::string_view magic, std::uint32_t max_version)
    : path_(path.string()), bytes_(fs::ReadFile(path)) {
  if (bytes_.size() < 16 || std::string_view(bytes_.data(), 8) != magic) {
    Fail(fmt::format("not a {} file (wrong magic bytes)", std::string(magic.substr(0, magic.find('\0')))));
  }
  pos_ = 8;
  std::uint32_t bom = 0;
  Raw(&version_, sizeof version_);
  Raw(&bom, sizeof bom);
  if (bom != kByteOrderMark) Fail("written on a machine of another byte order");
  if (version_ == 0 || version_ > max_version) {
    Fail(fmt::format("format version {} is not supported (this build reads up to {})", version_, max_version));
  }
}

void BinaryReader::Fail(const std::string& what) const { throw DataError(fmt::format("{}: {}", path_, what)); }

void BinaryReader::Raw(void* p, std::size_t n) {
  if (bytes_.size() - pos_ < n) Fail("file is truncated");
  std::memcpy(p, bytes_.data() + pos_, n);
  pos_ += n;
}

std::int64_t BinaryReader::Int() {
  std::int64_t v = 0;
  Raw(&v, sizeof v);
  return v;
}

double BinaryReader::Real() {
  double v = 0;
  Raw(&v, sizeof v);
  return v;
}

std::string BinaryReader::String() {
  const std::int64_t n = Int();
  if (n < 0 || n > static_cast<std::int64_t>(bytes_.size() - pos_)) Fail("file is truncated or corrupt");
  std::string s(static_cast<std::size_t>(n), '\0');
  Raw(s.data(), s.size());
  return s;
}

std::vector<double> BinaryReader::Reals() {
  const std::int64_t n = Int();
  if (n < 0 || n > kMaxElements) Fail("corrupt vector length");
  std::vector<double> v(static_cast<std::size_t>(n));
  Raw(v.data(), v.size() * sizeof(double));
  return v;
}

MatrixD BinaryReader::Matrix() {
  const std::int64_t rows = Int();
  const std::int64_t cols = Int();
  if (rows < 0 || cols < 0 || (cols > 0 && rows > kMaxElements / cols)) Fail("corrupt matrix shape");
  if (static_cast<std::size_t>(rows * cols) * sizeof(double) > bytes_.size() - pos_) Fail("file is truncated");
  MatrixD m(rows, cols);
  Raw(m.data(), static_cast<std::size_t>(rows * cols) * sizeof(double));
  return m;
}

void BinaryReader::ExpectEnd() const {
  if (pos_ != bytes_.size()) Fail(fmt::format("{} unexpected bytes at the end", bytes_.size() - pos_));
}

}  // namespace asv::backend
