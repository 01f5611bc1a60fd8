#include "asvcpp/base/fs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "tests/build_paths.h"

namespace asv::fs {
namespace {

std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("asv_fs_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(FsTest, AtomicWriteCreatesParentsAndReplaces) {
  const auto dir = TempDir("write");
  const auto file = dir / "a" / "b" / "out.txt";
  WriteFileAtomic(file, std::string("first"));
  EXPECT_EQ(ReadFile(file), "first");
  WriteFileAtomic(file, std::string("second"));
  EXPECT_EQ(ReadFile(file), "second");
  // No temporary file is left behind.
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(file.parent_path())) {
    (void)entry;
    ++n;
  }
  EXPECT_EQ(n, 1u);
  std::filesystem::remove_all(dir);
}

TEST(FsTest, FailedWriteKeepsOldContents) {
  const auto dir = TempDir("fail");
  const auto file = dir / "out.txt";
  WriteFileAtomic(file, std::string("good"));
  EXPECT_THROW(WriteFileAtomic(file, [](std::ostream& out) {
                 out << "partial";
                 throw DataError("writer failed");
               }),
               DataError);
  EXPECT_EQ(ReadFile(file), "good");
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++n;
  }
  EXPECT_EQ(n, 1u);
  std::filesystem::remove_all(dir);
}

std::size_t EntriesIn(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(FsTest, WriteFilesAtomicWritesEveryFileWithOneSyncPerFolder) {
  const auto dir = TempDir("many");
  WriteFileAtomic(dir / "lists" / "f7.txt", std::string("old"));
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  for (int i = 0; i < 200; ++i) files.emplace_back(dir / "lists" / ("f" + std::to_string(i) + ".txt"), std::to_string(i * i));
  files.emplace_back(dir / "new" / "folder" / "g.txt", "in a folder made on the way");
  const std::int64_t syncs_before = SyncCalls();
  WriteFilesAtomic(files);
  // One sync per distinct folder (2), not one per file (201).
  EXPECT_EQ(SyncCalls() - syncs_before, 2);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(ReadFile(dir / "lists" / ("f" + std::to_string(i) + ".txt")), std::to_string(i * i));
  EXPECT_EQ(ReadFile(dir / "new" / "folder" / "g.txt"), "in a folder made on the way");
  EXPECT_EQ(EntriesIn(dir / "lists"), 200u);  // f7 replaced, no temporary file left
  EXPECT_EQ(EntriesIn(dir / "new" / "folder"), 1u);
  std::filesystem::remove_all(dir);
}

TEST(FsTest, WriteFilesAtomicFailureNamesThePathAndLeavesNoTemporaryFile) {
  const auto dir = TempDir("many_fail");
  WriteFileAtomic(dir / "a.txt", std::string("old a"));
  WriteFileAtomic(dir / "blocker", std::string("a file where a folder should be"));
  try {
    WriteFilesAtomic({{dir / "a.txt", "new a"}, {dir / "blocker" / "b.txt", "b"}});
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "blocker" / "b.txt").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(ReadFile(dir / "a.txt"), "old a");  // nothing was renamed
  EXPECT_EQ(EntriesIn(dir), 2u);                // a.txt and blocker, no a.txt.tmp.<pid>
  std::filesystem::remove_all(dir);
}

TEST(FsTest, ReadMissingFileNamesPath) {
  try {
    ReadFile("/nonexistent/asv/file.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/asv/file.txt"), std::string::npos);
  }
}

TEST(FsTest, SelfExecutableIsThisTestBinary) {
  const std::filesystem::path self = SelfExecutable();
  EXPECT_TRUE(self.is_absolute()) << self;
  EXPECT_EQ(self.filename(), "asv_base_test");
  EXPECT_EQ(self, std::filesystem::canonical(std::filesystem::path(ASV_BINARY_DIR) / "tests/asvcpp/base/asv_base_test"));
}

}  // namespace
}  // namespace asv::fs
