#include "asvcpp/recipe/system_folder_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv::recipe {
namespace {

namespace stdfs = std::filesystem;

class SystemFolderLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("asv_folder_lock_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  stdfs::path dir_;
};

TEST_F(SystemFolderLockTest, ASecondWriterIsRefusedWithTheHoldersName) {
  const stdfs::path folder = dir_ / "out" / "demo_system";
  auto first = std::make_unique<SystemFolderLock>(folder, FolderHolder{0, "demo"}, false);
  first->Update({7, "demo"});
  EXPECT_TRUE(stdfs::is_regular_file(SystemFolderLock::LockFile(folder)));
  const auto holder = SystemFolderLock::LastHolder(folder);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->run_id, 7);
  EXPECT_EQ(holder->config, "demo");
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_FALSE(holder->host.empty());
  EXPECT_EQ(holder->since.size(), 24u);  // YYYY-MM-DDTHH:MM:SS.mmmZ
  EXPECT_EQ(holder->since.back(), 'Z');
  try {
    SystemFolderLock second(folder, FolderHolder{0, "demo_aug"}, false);
    FAIL() << "two writers hold one system folder";
  } catch (const StageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(folder.string() + " is in use by run 7 (config 'demo', host " + holder->host + ", pid " +
                        std::to_string(::getpid()) + ", since " + holder->since + ")"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("paths.system_folder"), std::string::npos) << what;
  }
  // The refused run changed nothing: the holder is still the first.
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->run_id, 7);
  first.reset();
  SystemFolderLock third(folder, FolderHolder{9, "demo_aug"}, false);
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->config, "demo_aug");
}

TEST_F(SystemFolderLockTest, AWaitingWriterGetsTheFolderWhenItIsReleased) {
  const stdfs::path folder = dir_ / "system";
  auto first = std::make_unique<SystemFolderLock>(folder, FolderHolder{3, "a"}, false);
  std::promise<void> acquired;
  std::future<void> done = acquired.get_future();
  std::thread waiter([&] {
    SystemFolderLock second(folder, FolderHolder{4, "b"}, true);
    EXPECT_EQ(SystemFolderLock::LastHolder(folder)->run_id, 4);
    acquired.set_value();
  });
  // Still held: the waiter has not got it.
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->run_id, 3);
  first.reset();
  done.get();  // the release lets it through
  waiter.join();
}

TEST_F(SystemFolderLockTest, TheLockOfAKilledProcessIsTakenOver) {
  const stdfs::path folder = dir_ / "system";
  stdfs::create_directories(folder);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      SystemFolderLock lock(folder, FolderHolder{5, "killed"}, false);
      ::kill(::getpid(), SIGKILL);  // dies holding it
    } catch (...) {
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->run_id, 5);  // its text stays...
  SystemFolderLock lock(folder, FolderHolder{6, "next"}, false);  // ...but the lock went with it
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->run_id, 6);
  EXPECT_EQ(SystemFolderLock::LastHolder(folder)->pid, ::getpid());
}

TEST_F(SystemFolderLockTest, ALinkInPlaceOfTheLockFileIsRefused) {
  const stdfs::path folder = dir_ / "system";
  stdfs::create_directories(folder);
  stdfs::create_symlink(dir_ / "elsewhere", SystemFolderLock::LockFile(folder));
  EXPECT_THROW(SystemFolderLock(folder, FolderHolder{1, "x"}, false), DataError);
  EXPECT_FALSE(stdfs::exists(dir_ / "elsewhere"));
}

TEST(DescribeHolderTest, LeavesOutWhatIsNotKnown) {
  EXPECT_EQ(DescribeHolder({}), "another asvrun process");
  EXPECT_EQ(DescribeHolder({12, "net", "gpu3", 4711, "2026-11-28T10:00:00.000Z"}),
            "run 12 (config 'net', host gpu3, pid 4711, since 2026-11-28T10:00:00.000Z)");
  EXPECT_EQ(DescribeHolder({0, "", "", 99, ""}), "another asvrun process (pid 99)");
}

}  // namespace
}  // namespace asv::recipe
