// fs::FileChecksum and checksum files: SHA-256 of a file's bytes, as artifacts.checksum stores it
// and as "<file>.sha256" beside checkpoints and embeddings records it.
#include "asvcpp/base/checksum.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/sha256_stream.h"

namespace asv::fs {
namespace {

namespace stdfs = std::filesystem;

class ChecksumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() /
           ("asv_checksum_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  stdfs::path Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  // The DataError message of `f`, or "" (and a failure) when it throws none.
  template <class F>
  static std::string ErrorOf(F&& f) {
    try {
      f();
    } catch (const DataError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a DataError";
    return "";
  }
  stdfs::path dir_;
};

// What coreutils' sha256sum says about `path`, as "sha256:<hex>".
std::string Sha256sum(const stdfs::path& path) {
  std::FILE* pipe = ::popen(("sha256sum '" + path.string() + "'").c_str(), "r");
  if (pipe == nullptr) return "";
  char hex[65] = {};
  const bool ok = std::fscanf(pipe, "%64s", hex) == 1;
  ::pclose(pipe);
  return ok ? std::string("sha256:") + hex : "";
}

TEST_F(ChecksumTest, IsTheSha256OfTheBytesWithItsAlgorithmName) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(FileChecksum(Write("empty", "")), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(FileChecksum(Write("abc", "abc")), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(BytesChecksum("abc"), FileChecksum(dir_ / "abc"));
  EXPECT_EQ(FileChecksum(dir_ / "abc").rfind(std::string(kChecksumAlgorithm) + ":", 0), 0u);
}

TEST_F(ChecksumTest, ReadsFilesLargerThanOneBlockAndSeesEveryByte) {
  std::mt19937 rng(7);
  std::string bytes(3 * (1 << 20) + 12345, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng());
  const stdfs::path big = Write("big.bin", bytes);
  const std::string sum = FileChecksum(big);
  const std::string reference = Sha256sum(big);
  ASSERT_FALSE(reference.empty()) << "sha256sum (coreutils) did not run";
  EXPECT_EQ(sum, reference);
  EXPECT_EQ(BytesChecksum(bytes), sum);
  bytes[bytes.size() - 1] ^= 1;  // the last byte of the last, partial block
  Write("big.bin", bytes);
  EXPECT_NE(FileChecksum(big), sum);
}

TEST_F(ChecksumTest, StreamInPartsEqualsTheChecksumOfTheWhole) {
  std::mt19937 rng(11);
  std::string bytes(200000, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng());
  Sha256Stream stream;
  stream.Update(bytes.data(), 0);
  stream.Update(bytes.data(), 1);
  stream.Update(bytes.data() + 1, 70000);
  stream.Update(bytes.data() + 70001, bytes.size() - 70001);
  const std::string sum = stream.Finish();
  EXPECT_EQ(sum, BytesChecksum(bytes));
  EXPECT_EQ(sum, Sha256sum(Write("parts.bin", bytes)));
  EXPECT_THROW(stream.Update("x", 1), Error);
  EXPECT_THROW(stream.Finish(), Error);
  EXPECT_EQ(Sha256Stream().Finish(), BytesChecksum(""));
}

TEST_F(ChecksumTest, MissingOrNonRegularFileIsADataErrorNamingIt) {
  const std::string missing = ErrorOf([&] { FileChecksum(dir_ / "missing.pt"); });
  EXPECT_NE(missing.find((dir_ / "missing.pt").string() + ": cannot compute its checksum: no such file"),
            std::string::npos)
      << missing;
  EXPECT_NE(ErrorOf([&] { FileChecksum(dir_); }).find("not a regular file"), std::string::npos);
}

// The checksum file is sha256sum's format, so `sha256sum -c` checks it too; a flipped byte is an
// error naming both files; a file without a checksum file is not checked.
TEST_F(ChecksumTest, ChecksumFilesCatchFlippedBytes) {
  std::string bytes(100000, 'x');
  const stdfs::path file = Write("epoch.3.pt", bytes);
  EXPECT_FALSE(VerifyFileChecksum(file));  // none yet
  WriteChecksumFile(file, BytesChecksum(bytes));
  EXPECT_EQ(ReadFile(ChecksumFilePath(file)), FileChecksum(file).substr(7) + "  epoch.3.pt\n");
  EXPECT_EQ(std::system(("cd '" + dir_.string() + "' && sha256sum -c --quiet epoch.3.pt.sha256").c_str()), 0);
  EXPECT_TRUE(VerifyFileChecksum(file));
  EXPECT_TRUE(VerifyChecksum(file, bytes));

  bytes[54321] ^= 0x10;
  Write("epoch.3.pt", bytes);
  const std::string message = ErrorOf([&] { VerifyFileChecksum(file); });
  EXPECT_NE(message.find(file.string() + ": corrupt: its SHA-256 is "), std::string::npos) << message;
  EXPECT_NE(message.find("was recorded when it was written (" + ChecksumFilePath(file).string() + ")"),
            std::string::npos)
      << message;
  EXPECT_NE(ErrorOf([&] { VerifyChecksum(file, bytes); }).find("corrupt"), std::string::npos);

  Write("epoch.3.pt.sha256", "not a checksum\n");
  EXPECT_NE(ErrorOf([&] { VerifyFileChecksum(file); }).find("malformed checksum file"), std::string::npos);
  RemoveChecksumFile(file);
  EXPECT_FALSE(stdfs::exists(ChecksumFilePath(file)));
  EXPECT_FALSE(VerifyFileChecksum(file));
  RemoveChecksumFile(file);  // absent: nothing to do
  EXPECT_THROW(WriteChecksumFile(file, "md5:abc"), std::invalid_argument);
}

TEST_F(ChecksumTest, APolicyLooksUpTheChecksumOfAFileWithoutItsChecksumFile) {
  const stdfs::path file = Write("epoch.3.pt", "network weights");
  const std::string good = FileChecksum(file);
  // No policy: no lookup, and an unverifiable file is allowed.
  EXPECT_FALSE(VerifyChecksum(file, "network weights"));
  EXPECT_NO_THROW(VerifyOrRefuse(file, "network weights"));
  {
    std::vector<stdfs::path> asked;
    ChecksumPolicy policy;
    policy.lookup = [&](const stdfs::path& f) -> std::optional<std::string> {
      asked.push_back(f);
      return f.filename() == "epoch.3.pt" ? std::optional<std::string>(good) : std::nullopt;
    };
    policy.allow_unverified = false;
    policy.how_to_allow = "set x.allow = True";
    const ScopedChecksumPolicy scoped(std::move(policy));
    EXPECT_TRUE(VerifyChecksum(file, "network weights"));
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0], file);
    const std::string corrupt = ErrorOf([&] { VerifyOrRefuse(file, "network weightz"); });
    EXPECT_NE(corrupt.find(file.string() + ": corrupt"), std::string::npos) << corrupt;
    EXPECT_NE(corrupt.find("in the experiment database (epoch.3.pt.sha256 is missing)"), std::string::npos)
        << corrupt;
    // The checksum file, when there is one, is the reference, not the lookup.
    EXPECT_EQ(asked.size(), 2u);
    WriteChecksumFile(file, BytesChecksum("other bytes"));
    EXPECT_TRUE(VerifyChecksum(file, "other bytes"));
    EXPECT_EQ(asked.size(), 2u);
    const stdfs::path copied = Write("epoch.4.pt", "copied");
    const std::string refused = ErrorOf([&] { VerifyOrRefuse(copied, "copied"); });
    EXPECT_NE(refused.find(copied.string() + ": cannot be verified: it has no checksum file (epoch.4.pt.sha256)"),
              std::string::npos)
        << refused;
    EXPECT_NE(refused.find(", or set x.allow = True to use it anyway"), std::string::npos) << refused;
  }
  // The previous policy (none) is back.
  RemoveChecksumFile(file);
  EXPECT_FALSE(VerifyChecksum(file, "anything"));
}

}  // namespace
}  // namespace asv::fs
