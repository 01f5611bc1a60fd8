// db::FileChecksum: SHA-256 of a file's bytes, as artifacts.checksum stores it.
#include "asvcpp/db/file_checksum.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "asvcpp/base/error.h"
#include "tests/asvcpp/db/db_test_util.h"

namespace asv::db {
namespace {

void Write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// What coreutils' sha256sum says about `path`, as "sha256:<hex>".
std::string Sha256sum(const std::filesystem::path& path) {
  std::FILE* pipe = ::popen(("sha256sum '" + path.string() + "'").c_str(), "r");
  if (pipe == nullptr) return "";
  char hex[65] = {};
  const bool ok = std::fscanf(pipe, "%64s", hex) == 1;
  ::pclose(pipe);
  return ok ? std::string("sha256:") + hex : "";
}

TEST(DbFileChecksumTest, IsTheSha256OfTheBytesWithItsAlgorithmName) {
  const testing::ScopedDir dir("checksum");
  Write(dir / "empty", "");
  Write(dir / "abc", "abc");
  // FIPS 180-2 test vectors.
  EXPECT_EQ(FileChecksum(dir / "empty"),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(FileChecksum(dir / "abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(FileChecksum(dir / "abc").rfind(std::string(kChecksumAlgorithm) + ":", 0), 0u);
}

TEST(DbFileChecksumTest, ReadsFilesLargerThanOneBlockAndSeesEveryByte) {
  const testing::ScopedDir dir("checksum_large");
  std::mt19937 rng(7);
  std::string bytes(3 * (1 << 20) + 12345, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng());
  Write(dir / "big.bin", bytes);
  const std::string sum = FileChecksum(dir / "big.bin");
  const std::string reference = Sha256sum(dir / "big.bin");
  ASSERT_FALSE(reference.empty()) << "sha256sum (coreutils) did not run";
  EXPECT_EQ(sum, reference);
  bytes[bytes.size() - 1] ^= 1;  // the last byte of the last, partial block
  Write(dir / "big.bin", bytes);
  EXPECT_NE(FileChecksum(dir / "big.bin"), sum);
}

TEST(DbFileChecksumTest, MissingOrNonRegularFileIsADataErrorNamingIt) {
  const testing::ScopedDir dir("checksum_errors");
  ASV_EXPECT_THROW_CONTAINS(FileChecksum(dir / "missing.pt"), DataError,
                            (dir / "missing.pt").string(), "no such file");
  ASV_EXPECT_THROW_CONTAINS(FileChecksum(dir.path()), DataError, dir.path().string(),
                            "not a regular file");
}

}  // namespace
}  // namespace asv::db
