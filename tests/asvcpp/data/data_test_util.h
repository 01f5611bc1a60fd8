// Helpers for the data tests: temporary folders, file writing, error messages.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::data::testing {

/// A fresh folder under the system temporary directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("asv_data_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void Write(const std::filesystem::path& path, const std::string& contents) {
  fs::WriteFileAtomic(path, contents);
}

/// The DataError message of `f()`, or "" (and a test failure) when it does not throw one.
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return {};
}

inline bool Contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

}  // namespace asv::data::testing
