#include "asvcpp/audio/subprocess.h"

#include <gtest/gtest.h>

#include <thread>

#include "asvcpp/base/error.h"

namespace asv::audio {
namespace {

TEST(SubprocessTest, CapturesStdoutWithoutAShell) {
  const ProcessResult r = RunProcess({"printf", "%s|%s", "a b", "$HOME"});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, "a b|$HOME");  // No shell: nothing expanded.
}

TEST(SubprocessTest, ReportsExitStatusSignalAndStderr) {
  const ProcessResult failed = RunShell("echo partial; echo 'bad thing' >&2; exit 3");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.exit_status, 3);
  EXPECT_EQ(failed.output, "partial\n");
  EXPECT_EQ(failed.Describe(), "exit status 3: bad thing");

  const ProcessResult killed = RunShell("kill -9 $$");
  EXPECT_FALSE(killed.ok());
  EXPECT_EQ(killed.signal, 9);
  EXPECT_NE(killed.Describe().find("signal 9"), std::string::npos);
}

TEST(SubprocessTest, LargeOutputOnBothStreamsDoesNotDeadlock) {
  const ProcessResult r = RunShell("head -c 3000000 /dev/zero; head -c 200000 /dev/zero >&2");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output.size(), 3000000u);
  EXPECT_EQ(r.error_tail.size(), 4096u);
}

TEST(SubprocessTest, MissingProgramIsADataError) {
  try {
    RunProcess({"asv-no-such-program-xyz", "-v"});
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("asv-no-such-program-xyz: program not found"), std::string::npos);
  }
  EXPECT_THROW(RunProcess({}), std::invalid_argument);
}

TEST(SubprocessTest, ConcurrentCallsSeeTheirOwnOutput) {
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &outputs] {
      std::string all;
      for (int i = 0; i < 10; ++i) all += RunShell("sleep 0.01; echo " + std::to_string(t)).output;
      outputs[static_cast<std::size_t>(t)] = all;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    std::string expected;
    for (int i = 0; i < 10; ++i) expected += std::to_string(t) + "\n";
    EXPECT_EQ(outputs[static_cast<std::size_t>(t)], expected);
  }
}

}  // namespace
}  // namespace asv::audio
