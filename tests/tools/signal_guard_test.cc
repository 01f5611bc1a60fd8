// asvrun's signal watcher: an interrupted process removes the temporary files of its unfinished
// atomic writes (feature archives, checkpoints) before it exits with 128 + signal.
#include "tools/asvrun/signal_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "asvcpp/base/matrix.h"
#include "asvcpp/features/kaldi_io.h"

namespace asv::tools {
namespace {

namespace stdfs = std::filesystem;

std::size_t CountFiles(const stdfs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : stdfs::directory_iterator(dir)) ++n;
  return n;
}

TEST(SignalGuardTest, InterruptionRemovesTheTemporaryFilesOfUnfinishedWrites) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const stdfs::path dir =
        stdfs::temp_directory_path() / ("asv_signal_guard_test_" + std::to_string(::getpid()) + "_" + std::to_string(sig));
    stdfs::remove_all(dir);
    stdfs::create_directories(dir);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      SignalGuard guard;
      features::TableWriter writer("ark,scp:" + (dir / "mfcc.ark").string() + "," + (dir / "feats.scp").string());
      writer.Write("utt1", Matrix(100, 24, 1.0f));
      const char byte = 1;
      [[maybe_unused]] const auto written = ::write(ready[1], &byte, 1);
      for (;;) ::pause();  // interrupted here, before Close()
    }
    ::close(ready[1]);
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
    EXPECT_EQ(CountFiles(dir), 1u) << "the temporary archive exists while the writer runs";
    ::kill(child, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_EQ(CountFiles(dir), 0u) << "signal " << sig << " left a temporary file";
    stdfs::remove_all(dir);
  }
}

}  // namespace
}  // namespace asv::tools
