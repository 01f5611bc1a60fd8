// Temporary files of atomic writes: named per process, removed on failure and interruption, and
// those of killed processes removed by the next writer of the same target.
#include "asvcpp/base/temp_files.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "asvcpp/base/fs.h"

namespace asv::fs {
namespace {

namespace stdfs = std::filesystem;

class TempFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test: a process cleans each folder once (see ScopedTempFile).
    dir_ = stdfs::temp_directory_path() / ("asv_temp_files_test_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  void Touch(const std::string& name) { std::ofstream(dir_ / name) << "x"; }
  std::set<std::string> Files() const {
    std::set<std::string> names;
    for (const auto& e : stdfs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }
  // The pid of a process that has exited and been reaped.
  static pid_t DeadPid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
  }

  stdfs::path dir_;
};

TEST_F(TempFilesTest, TempPathCarriesThePid) {
  EXPECT_EQ(TempPathFor(dir_ / "mfcc.ark"), stdfs::path((dir_ / "mfcc.ark").string() + ".tmp." +
                                                        std::to_string(::getpid())));
}

TEST_F(TempFilesTest, StaleFilesOfDeadProcessesAreRemovedOthersKept) {
  const std::string dead = std::to_string(DeadPid());
  const std::string self = std::to_string(::getpid());
  const std::string parent = std::to_string(::getppid());
  Touch("mfcc.ark");
  Touch("mfcc.ark.tmp." + dead);    // killed writer: removed
  Touch("vad.ark.tmp." + dead);     // killed writer of another file: removed
  Touch("mfcc.ark.tmp." + self);    // this process: kept
  Touch("mfcc.ark.tmp." + parent);  // a running process: kept
  Touch("mfcc.ark.tmp.12ab");       // not a pid: kept
  Touch(".tmp." + dead);            // no file name before the marker: kept
  Touch("notes.txt");
  EXPECT_EQ(RemoveStaleTempFiles(dir_), 2u);
  EXPECT_EQ(Files(), (std::set<std::string>{"mfcc.ark", "mfcc.ark.tmp." + self, "mfcc.ark.tmp." + parent,
                                            "mfcc.ark.tmp.12ab", ".tmp." + dead, "notes.txt"}));
  EXPECT_EQ(RemoveStaleTempFiles(dir_ / "missing_folder"), 0u);  // no error either
}

TEST_F(TempFilesTest, RegisteredFilesAreRemovedOnRequest) {
  Touch("a.tmp.1");
  Touch("b.tmp.1");
  RegisterTempFile(dir_ / "a.tmp.1");
  RegisterTempFile(dir_ / "b.tmp.1");
  UnregisterTempFile(dir_ / "b.tmp.1");
  EXPECT_EQ(RemoveRegisteredTempFiles(), 1u);
  EXPECT_EQ(Files(), std::set<std::string>{"b.tmp.1"});
  EXPECT_EQ(RemoveRegisteredTempFiles(), 0u);  // the registry was emptied
}

TEST_F(TempFilesTest, ScopedTempFileRemovesItsFileUnlessReleased) {
  {
    ScopedTempFile tmp(dir_ / "out");
    std::ofstream(tmp.path()) << "partial";
    EXPECT_TRUE(stdfs::exists(tmp.path()));
  }
  EXPECT_TRUE(Files().empty());
  {
    ScopedTempFile tmp(dir_ / "out");
    std::ofstream(tmp.path()) << "complete";
    stdfs::rename(tmp.path(), dir_ / "out");
    tmp.Release();
    Touch(tmp.path().filename().string());  // released: no longer ours to remove
    EXPECT_EQ(RemoveRegisteredTempFiles(), 0u);
  }
  EXPECT_EQ(Files(), (std::set<std::string>{"out", "out.tmp." + std::to_string(::getpid())}));
}

// A writer killed with SIGKILL cannot clean up; the next process's first atomic write into the
// folder does (once per folder: writing many files into a large folder stays linear).
TEST_F(TempFilesTest, AtomicWriteRemovesWhatAKilledWriterLeft) {
  const std::string dead = std::to_string(DeadPid());
  Touch("checkpoint.pt.tmp." + dead);
  Touch("epoch.1.pt.tmp." + dead);
  WriteFileAtomic(dir_ / "checkpoint.pt", std::string("state"));
  EXPECT_EQ(Files(), std::set<std::string>{"checkpoint.pt"});
  EXPECT_EQ(ReadFile(dir_ / "checkpoint.pt"), "state");
  Touch("later.tmp." + dead);  // appears after this process cleaned the folder: left for the next
  WriteFileAtomic(dir_ / "other", std::string("x"));
  EXPECT_EQ(Files(), (std::set<std::string>{"checkpoint.pt", "other", "later.tmp." + dead}));
}

}  // namespace
}  // namespace asv::fs
