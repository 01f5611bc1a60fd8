#include "asvcpp/base/fs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <sstream>

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

// The mode of `path` itself (links not followed).
mode_t LinkMode(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

TEST(FsTest, ResolveOutputFollowsLinksAndTellsStreamsFromFiles) {
  const auto dir = TempDir("resolve");
  EXPECT_EQ(ResolveOutput("-").kind, OutputKind::kStdout);
  EXPECT_EQ(ResolveOutput(dir / "new.txt").kind, OutputKind::kFile);
  EXPECT_EQ(ResolveOutput(dir / "new.txt").path, dir / "new.txt");
  WriteFileAtomic(dir / "real.txt", std::string("x"));
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_symlink("../real.txt", dir / "sub" / "relative");  // relative to its own folder
  std::filesystem::create_symlink(dir / "sub" / "relative", dir / "chain");
  const OutputTarget chain = ResolveOutput(dir / "chain");
  EXPECT_EQ(chain.kind, OutputKind::kFile);
  EXPECT_EQ(std::filesystem::canonical(chain.path), std::filesystem::canonical(dir / "real.txt"));
  std::filesystem::create_symlink("missing.txt", dir / "dangling");
  EXPECT_EQ(ResolveOutput(dir / "dangling").path, dir / "missing.txt");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(ResolveOutput(dir / "fifo").kind, OutputKind::kStream);
  if (std::filesystem::exists("/dev/null")) {
    EXPECT_EQ(ResolveOutput("/dev/null").kind, OutputKind::kStream);
  }
  EXPECT_THROW(ResolveOutput(dir / "sub"), DataError);
  std::filesystem::create_directory_symlink(dir / "sub", dir / "to_sub");
  EXPECT_THROW(ResolveOutput(dir / "to_sub"), DataError);
  std::filesystem::create_symlink(dir / "loop_b", dir / "loop_a");
  std::filesystem::create_symlink(dir / "loop_a", dir / "loop_b");
  try {
    ResolveOutput(dir / "loop_a");
    FAIL() << "no error for a link loop";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("too many levels of symbolic links"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(FsTest, WritingThroughALinkChangesItsTargetAndKeepsTheLink) {
  const auto dir = TempDir("through_link");
  WriteFileAtomic(dir / "target.txt", std::string("old"));
  std::filesystem::create_symlink("target.txt", dir / "link.txt");
  WriteFileAtomic(dir / "link.txt", std::string("new"));
  EXPECT_TRUE(S_ISLNK(LinkMode(dir / "link.txt")));
  EXPECT_EQ(ReadFile(dir / "target.txt"), "new");
  std::filesystem::create_symlink("made_by_writing.txt", dir / "dangling");
  WriteFilesAtomic({{dir / "dangling", "through a dangling link"}});
  EXPECT_TRUE(S_ISLNK(LinkMode(dir / "dangling")));
  EXPECT_EQ(ReadFile(dir / "made_by_writing.txt"), "through a dangling link");
  std::filesystem::remove_all(dir);
}

TEST(FsTest, DirectoriesAreNeverReplaced) {
  const auto dir = TempDir("directory");
  std::filesystem::create_directories(dir / "results");
  WriteFileAtomic(dir / "results" / "kept.txt", std::string("kept"));
  try {
    WriteFileAtomic(dir / "results", std::string("page"));
    FAIL() << "a directory was written over";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WriteFilesAtomic({{dir / "results", "list"}}), DataError);
  EXPECT_EQ(ReadFile(dir / "results" / "kept.txt"), "kept");
  std::filesystem::remove_all(dir);
}

TEST(FsTest, AFifoIsWrittenAsAStreamAndStaysAFifo) {
  const auto dir = TempDir("fifo");
  const auto fifo = dir / "scores.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] {
    std::ifstream in(fifo, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  });
  WriteFileAtomic(fifo, [](std::ostream& out) { out << "streamed\n"; });
  EXPECT_EQ(reader.get(), "streamed\n");
  EXPECT_TRUE(S_ISFIFO(LinkMode(fifo)));
  EXPECT_EQ(EntriesIn(dir), 1u);  // no temporary file beside it
  EXPECT_THROW(WriteFilesAtomic({{fifo, "a list"}}), DataError);  // lists are regular files only
  EXPECT_TRUE(S_ISFIFO(LinkMode(fifo)));
  std::filesystem::remove_all(dir);
}

TEST(FsTest, AFullDeviceIsAnErrorWithTheSystemsReasonAndStaysADevice) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  ASSERT_TRUE(S_ISCHR(LinkMode("/dev/full")));
  // Checked first, so that a regression cannot rename a regular file over the device.
  ASSERT_EQ(ResolveOutput("/dev/full").kind, OutputKind::kStream);
  try {
    WriteFileAtomic("/dev/full", std::string("DET points\n"));
    FAIL() << "no error writing to /dev/full";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: write failed: No space left on device"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(S_ISCHR(LinkMode("/dev/full")));
}

TEST(FsTest, SameFileSeesThroughEverySpelling) {
  const auto dir = TempDir("same");
  WriteFileAtomic(dir / "db", std::string("database"));
  WriteFileAtomic(dir / "other", std::string("other"));
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_symlink(dir / "db", dir / "link");
  std::filesystem::create_hard_link(dir / "db", dir / "hard");
  EXPECT_TRUE(SameFile(dir / "db", dir / "sub" / ".." / "db"));
  EXPECT_TRUE(SameFile(dir / "link", dir / "db"));
  EXPECT_TRUE(SameFile(dir / "hard", dir / "db"));
  EXPECT_FALSE(SameFile(dir / "other", dir / "db"));
  EXPECT_TRUE(SameFile(dir / "sub" / ".." / "none", dir / "none"));  // neither exists yet
  EXPECT_FALSE(SameFile(dir / "none", dir / "db"));
  EXPECT_FALSE(SameFile("", dir / "db"));
  try {
    CheckOutputIsNotInput({"--out", dir / "link"}, {{"--scores", dir / "other"}, {"--db", dir / "sub/../db"}});
    FAIL() << "an input was accepted as the output";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("--out {} is the same file as --db {}", (dir / "link").string(),
                                                     (dir / "sub/../db").string())),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(CheckOutputIsNotInput({"--out", dir / "page.html"}, {{"--db", dir / "db"}}));
  EXPECT_NO_THROW(CheckOutputIsNotInput({"--out", "-"}, {{"--db", "-"}}));
  std::filesystem::remove_all(dir);
}

TEST(FsTest, ReadFileReadsOnlyRegularFiles) {
  const auto dir = TempDir("read_regular");
  ASSERT_EQ(::mkfifo((dir / "trials.fifo").c_str(), 0600), 0);
  // Neither blocks on a FIFO nobody writes to nor reads /dev/zero without end.
  for (const std::filesystem::path& path : {dir / "trials.fifo", std::filesystem::path("/dev/zero")}) {
    if (!std::filesystem::exists(path)) continue;
    try {
      ReadFile(path);
      FAIL() << path;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string() + ": not a regular file"), std::string::npos) << e.what();
    }
  }
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
