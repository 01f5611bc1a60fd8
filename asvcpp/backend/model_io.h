// Small binary container used by the back-end models (VectorProcessor, Plda).
//
// Layout: an 8-byte magic naming the model kind, a uint32 format version, a uint32 byte-order mark
// (0x01020304, written in host order; files are portable between little-endian hosts, which is
// every platform we build on), then the model's fields: integers as int64, reals as IEEE float64,
// strings as int64 length + bytes. Files are written atomically (fs::WriteFileAtomic).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/base/matrix.h"

namespace asv::backend {

class BinaryWriter {
 public:
  /// `magic` must be exactly 8 bytes.
  BinaryWriter(std::string_view magic, std::uint32_t version);
  void Int(std::int64_t v);
  void Real(double v);
  void String(const std::string& s);
  void Reals(const std::vector<double>& v);  ///< length + values
  void Matrix(const MatrixD& m);             ///< rows, cols, row-major values
  /// Writes everything to `path` atomically. Throws DataError naming the path on failure.
  void WriteTo(const std::filesystem::path& path) const;

 private:
  void Raw(const void* p, std::size_t n);
  std::string bytes_;
};

class BinaryReader {
 public:
  /// Reads `path` and checks magic, byte order and version (<= max_version). Throws DataError
  /// naming the path when the file is missing, of another kind, or of a newer version.
  BinaryReader(const std::filesystem::path& path, std::string_view magic, std::uint32_t max_version);
  std::uint32_t version() const { return version_; }
  std::int64_t Int();
  double Real();
  std::string String();
  std::vector<double> Reals();
  MatrixD Matrix();
  /// Throws DataError when bytes are left over (a corrupt or foreign file).
  void ExpectEnd() const;
  /// DataError "<path>: <what>".
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  void Raw(void* p, std::size_t n);
  std::string path_;
  std::string bytes_;
  std::size_t pos_ = 0;
  std::uint32_t version_ = 0;
};

}  // namespace asv::backend
