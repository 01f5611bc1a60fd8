#include "asvcpp/base/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/base/log.h"

namespace asv::base {
namespace {

// A Progress in kLog mode with a hand-driven clock whose lines are collected.
struct Fixture {
  double now = 100.0;
  std::vector<std::string> lines;

  ProgressOptions Options(ProgressMode mode = ProgressMode::kLog) {
    ProgressOptions o;
    o.unit = "utt";
    o.mode = mode;
    o.log_interval_s = 10.0;
    o.clock = [this] { return now; };
    o.sink = [this](const std::string& line) { lines.push_back(line); };
    o.publish = false;
    return o;
  }
};

TEST(ProgressTest, FormatDuration) {
  EXPECT_EQ(Progress::FormatDuration(0), "0:00");
  EXPECT_EQ(Progress::FormatDuration(59.4), "0:59");
  EXPECT_EQ(Progress::FormatDuration(61), "1:01");
  EXPECT_EQ(Progress::FormatDuration(3599), "59:59");
  EXPECT_EQ(Progress::FormatDuration(3600), "1:00:00");
  EXPECT_EQ(Progress::FormatDuration(100 * 3600 + 62), "100:01:02");
  EXPECT_EQ(Progress::FormatDuration(-1), "?");
  EXPECT_EQ(Progress::FormatDuration(std::nan("")), "?");
}

TEST(ProgressTest, FormatCount) {
  EXPECT_EQ(Progress::FormatCount(0), "0");
  EXPECT_EQ(Progress::FormatCount(999), "999");
  EXPECT_EQ(Progress::FormatCount(1000), "1,000");
  EXPECT_EQ(Progress::FormatCount(1234567), "1,234,567");
  EXPECT_EQ(Progress::FormatCount(-4321), "-4,321");
}

TEST(ProgressTest, LineShowsRateAndEta) {
  Fixture f;
  Progress p("voxceleb1", 1000, f.Options());
  f.now += 20.0;
  p.Add(250);
  // 250 in 20 s = 12.5/s; 750 left -> 60 s.
  EXPECT_EQ(p.Line(), "voxceleb1: 250/1,000 utt (25.0%), 12.5 utt/s, elapsed 0:20, ETA 1:00");
  EXPECT_EQ(p.done(), 250);
  EXPECT_DOUBLE_EQ(p.elapsed(), 20.0);
}

TEST(ProgressTest, LineBeforeAnyItemHasUnknownEta) {
  Fixture f;
  Progress p("x", 10, f.Options());
  EXPECT_EQ(p.Line(), "x: 0/10 utt (0.0%), elapsed 0:00, ETA ?");
  f.now += 5;
  EXPECT_EQ(p.Line(), "x: 0/10 utt (0.0%), 0.0 utt/s, elapsed 0:05, ETA ?");
}

TEST(ProgressTest, AmountRateAndUnknownTotal) {
  Fixture f;
  ProgressOptions o = f.Options();
  o.amount_rate_suffix = "x real time";
  Progress p("feats", 0, o);
  f.now += 4.0;
  p.Add(8, 400.0);
  EXPECT_EQ(p.Line(), "feats: 8 utt, 2.0 utt/s, 100.0x real time, elapsed 0:04");
}

TEST(ProgressTest, LogModeWritesALineEveryTenthOfTheTotalAndAnEndLine) {
  Fixture f;
  Progress p("ds", 100, f.Options());
  for (int i = 0; i < 100; ++i) {
    f.now += 0.5;  // 50 s in all, 5 s per tenth: the tenths come before the 10 s interval
    p.Add(1);
  }
  // 10%, ..., 90%: 9 lines; the last items are the end line's.
  ASSERT_EQ(f.lines.size(), 9u);
  EXPECT_EQ(f.lines[0], "ds: 10/100 utt (10.0%), 2.0 utt/s, elapsed 0:05, ETA 0:45");
  EXPECT_EQ(f.lines[8], "ds: 90/100 utt (90.0%), 2.0 utt/s, elapsed 0:45, ETA 0:05");
  f.now += 1.0;
  p.Finish();
  p.Finish();  // idempotent
  ASSERT_EQ(f.lines.size(), 10u);
  EXPECT_EQ(f.lines[9], "ds: 100 utt in 0:51, mean 2.0 utt/s");
}

TEST(ProgressTest, LogModeWritesALineEveryIntervalWhenTenthsAreSlow) {
  Fixture f;
  ProgressOptions o = f.Options();
  o.log_interval_s = 30.0;
  Progress p("ds", 1000, o);
  for (int i = 0; i < 95; ++i) {
    f.now += 1.0;  // a tenth takes 100 s: lines at 30, 60 and 90 s
    p.Add(1);
  }
  ASSERT_EQ(f.lines.size(), 3u);
  EXPECT_EQ(f.lines[0], "ds: 30/1,000 utt (3.0%), 1.0 utt/s, elapsed 0:30, ETA 16:10");
  EXPECT_EQ(f.lines[2], "ds: 90/1,000 utt (9.0%), 1.0 utt/s, elapsed 1:30, ETA 15:10");
  for (int i = 0; i < 5; ++i) {
    f.now += 1.0;
    p.Add(1);
  }
  ASSERT_EQ(f.lines.size(), 4u);  // 100 items: the first tenth comes before the next interval
  EXPECT_EQ(f.lines[3], "ds: 100/1,000 utt (10.0%), 1.0 utt/s, elapsed 1:40, ETA 15:00");
  p.Finish();
  EXPECT_EQ(f.lines.back(), "ds: 100/1,000 utt in 1:40, mean 1.0 utt/s, stopped early");
}

TEST(ProgressTest, SmoothedRateFollowsAChangeOfPaceExponentially) {
  Fixture f;
  ProgressOptions o = f.Options(ProgressMode::kSilent);
  o.rate_window_s = 10.0;
  Progress p("ds", 1000, o);
  for (int i = 0; i < 10; ++i) {  // 10 items/s for 10 s
    f.now += 1.0;
    p.Add(10);
  }
  EXPECT_DOUBLE_EQ(p.Rate(), 10.0);
  double expected = 10.0;
  for (int i = 0; i < 5; ++i) {  // then 30 items/s: each 1 s sample weighs 1 - exp(-1/10)
    f.now += 1.0;
    p.Add(30);
    expected += (1.0 - std::exp(-1.0 / 10.0)) * (30.0 - expected);
  }
  EXPECT_DOUBLE_EQ(p.Rate(), expected);
  EXPECT_GT(p.Rate(), 17.0);  // well above the mean over 15 s (250 / 15 = 16.7)
  EXPECT_LT(p.Rate(), 30.0);
  ASSERT_TRUE(p.EtaSeconds().has_value());
  EXPECT_DOUBLE_EQ(*p.EtaSeconds(), (1000.0 - 250.0) / expected);
  // Items added within one sample interval are counted together.
  f.now += 0.5;
  p.Add(15);
  EXPECT_DOUBLE_EQ(p.Rate(), expected);
  f.now += 0.5;
  p.Add(15);
  expected += (1.0 - std::exp(-1.0 / 10.0)) * (30.0 - expected);
  EXPECT_DOUBLE_EQ(p.Rate(), expected);
}

TEST(ProgressTest, RateDecaysWhileNothingIsDoneAndEtaGrows) {
  Fixture f;
  Progress p("ds", 100, f.Options(ProgressMode::kSilent));
  f.now += 2.0;
  p.Add(20);  // 10 items/s
  EXPECT_DOUBLE_EQ(p.Rate(), 10.0);
  EXPECT_DOUBLE_EQ(*p.EtaSeconds(), 8.0);
  f.now += 10.0;  // a stall: the pending 10 s sample has rate 0
  const double decayed = 10.0 + (1.0 - std::exp(-10.0 / 10.0)) * (0.0 - 10.0);
  EXPECT_DOUBLE_EQ(p.Rate(), decayed);
  EXPECT_DOUBLE_EQ(*p.EtaSeconds(), 80.0 / decayed);
  EXPECT_EQ(p.Line(), fmt::format("ds: 20/100 utt (20.0%), {:.1f} utt/s, elapsed 0:12, ETA {}", decayed,
                                  Progress::FormatDuration(80.0 / decayed)));
}

TEST(ProgressTest, EtaIsUnknownWithoutTotalOrRate) {
  Fixture f;
  Progress unknown("ds", 0, f.Options(ProgressMode::kSilent));
  f.now += 3.0;
  unknown.Add(3);
  EXPECT_DOUBLE_EQ(unknown.Rate(), 1.0);
  EXPECT_FALSE(unknown.EtaSeconds().has_value());
  Progress idle("ds", 10, f.Options(ProgressMode::kSilent));
  EXPECT_FALSE(idle.EtaSeconds().has_value());
  f.now += 2.0;
  idle.Add(10);
  EXPECT_EQ(idle.EtaSeconds(), std::optional<double>(0.0));
}

TEST(ProgressTest, FormatRate) {
  EXPECT_EQ(Progress::FormatRate(0), "0.0");
  EXPECT_EQ(Progress::FormatRate(0.0123), "0.012");
  EXPECT_EQ(Progress::FormatRate(0.5), "0.5");
  EXPECT_EQ(Progress::FormatRate(12.54), "12.5");
  EXPECT_EQ(Progress::FormatRate(999.9), "999.9");
  EXPECT_EQ(Progress::FormatRate(1234.4), "1,234");
  EXPECT_EQ(Progress::FormatRate(std::nan("")), "?");
}

TEST(ProgressTest, LiveModeRedrawsOftenAndEndsWithTheEndLine) {
  Fixture f;
  ProgressOptions o = f.Options(ProgressMode::kLive);
  o.redraw_interval_s = 1.0;
  {
    Progress p("ds", 4, o);
    for (int i = 0; i < 4; ++i) {
      f.now += 1.0;
      p.Add(1);
    }
    EXPECT_EQ(f.lines.size(), 4u);  // live mode redraws also the last item
    EXPECT_EQ(f.lines[1], "ds: 2/4 utt (50.0%), 1.0 utt/s, elapsed 0:02, ETA 0:02");
  }  // destructor finishes
  ASSERT_EQ(f.lines.size(), 5u);
  EXPECT_EQ(f.lines.back(), "ds: 4 utt in 0:04, mean 1.0 utt/s");
}

TEST(ProgressTest, SilentModeWritesNothing) {
  Fixture f;
  Progress p("ds", 4, f.Options(ProgressMode::kSilent));
  f.now += 100;
  p.Add(4);
  p.Finish();
  EXPECT_TRUE(f.lines.empty());
  EXPECT_EQ(p.done(), 4);
}

TEST(ProgressTest, AddIsThreadSafe) {
  Fixture f;
  Progress p("ds", 0, f.Options(ProgressMode::kSilent));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p] {
      for (int i = 0; i < 10000; ++i) p.Add(1, 0.5);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(p.done(), 40000);
}

// Runs `body` with stderr redirected to `fd`; returns after restoring it.
void WithStderr(int fd, const std::function<void()>& body) {
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ::dup2(fd, STDERR_FILENO);
  body();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
}

// Everything readable from `fd` without blocking.
std::string Drain(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// What kAuto writes for 4 items, one per (fake) second, to the stderr it finds.
void RunAuto(double* now) {
  ProgressOptions o;
  o.unit = "utt";
  o.publish = false;
  o.redraw_interval_s = 1.0;
  o.log_fraction = 0.5;
  o.clock = [now] { return *now; };
  Progress p("ds", 4, o);
  for (int i = 0; i < 4; ++i) {
    *now += 1.0;
    p.Add(1);
  }
  p.Finish();
}

TEST(ProgressTest, AutoModeRedrawsOneLineOnATerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  double now = 0;
  WithStderr(terminal, [&] { RunAuto(&now); });
  const std::string out = Drain(master);
  ::close(terminal);
  ::close(master);
  // Each redraw returns to the start of the line and clears its rest; one newline at the end.
  EXPECT_NE(out.find("\rds: 1/4 utt (25.0%), 1.0 utt/s, elapsed 0:01, ETA 0:03\033[K"), std::string::npos) << out;
  EXPECT_NE(out.find("\rds: 3/4 utt (75.0%), 1.0 utt/s, elapsed 0:03, ETA 0:01\033[K"), std::string::npos) << out;
  EXPECT_NE(out.find("\rds: 4 utt in 0:04, mean 1.0 utt/s\033[K"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find("[asvcpp"), std::string::npos) << out;
}

TEST(ProgressTest, ALogLineOnATerminalClearsTheLiveLineFirst) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  double now = 0;
  WithStderr(terminal, [&] {
    ProgressOptions o;
    o.unit = "utt";
    o.publish = false;
    o.clock = [&now] { return now; };
    Progress p("ds", 4, o);
    now += 1.0;
    p.Add(1);
    ASV_LOG(Info, "between");
    now += 1.0;
    p.Add(1);
    p.Finish();
    ASV_LOG(Info, "after");
  });
  const std::string out = Drain(master);
  ::close(terminal);
  ::close(master);
  // The log line replaces the live line (return, clear), and the live line comes back after it.
  const auto between = out.find("\r\033[K[asvcpp I ");
  ASSERT_NE(between, std::string::npos) << out;
  EXPECT_NE(out.find("] between", between), std::string::npos) << out;
  EXPECT_NE(out.find("\rds: 2/4 utt", between), std::string::npos) << out;
  // After the end line, log lines are plain again.
  const auto after = out.find("] after");
  ASSERT_NE(after, std::string::npos) << out;
  const auto end_line = out.find("ds: 2/4 utt in 0:02");
  ASSERT_NE(end_line, std::string::npos) << out;
  EXPECT_LT(end_line, after);
  EXPECT_EQ(out.find("\033[K[asvcpp", end_line), std::string::npos) << out;
}

TEST(ProgressTest, AutoModeWritesPlainLogLinesElsewhere) {
  char path[] = "/tmp/asv_progress_test_XXXXXX";
  const int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  double now = 0;
  WithStderr(file, [&] { RunAuto(&now); });
  std::ifstream in(path);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::close(file);
  ::unlink(path);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  // log_fraction 0.5: a line at half the total, then the end line; each a log line of its own.
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_NE(out.find("] ds: 2/4 utt (50.0%), 1.0 utt/s, elapsed 0:02, ETA 0:02\n"), std::string::npos) << out;
  EXPECT_NE(out.find("] ds: 4 utt in 0:04, mean 1.0 utt/s\n"), std::string::npos) << out;
}

TEST(ProgressTest, PublishesToTheBoardAtMostEverySecondAndAtTheEnd) {
  ClearProgressBoard();
  EXPECT_FALSE(CurrentProgress().has_value());
  SetProgressStage("1 features");
  double now = 50;
  ProgressOptions o;
  o.unit = "utt";
  o.mode = ProgressMode::kSilent;
  o.clock = [&now] { return now; };
  Progress p("voxceleb1", 100, o);
  auto s = CurrentProgress();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->stage, "1 features");
  EXPECT_EQ(s->what, "voxceleb1");
  EXPECT_EQ(s->done, 0);
  EXPECT_EQ(s->total, 100);
  EXPECT_EQ(s->unit, "utt");
  EXPECT_FALSE(s->eta_seconds.has_value());
  const auto first = s->sequence;
  now += 0.5;
  p.Add(5);  // within a second of the last publication: not published
  EXPECT_EQ(CurrentProgress()->done, 0);
  now += 0.5;
  p.Add(5);
  s = CurrentProgress();
  EXPECT_EQ(s->done, 10);
  EXPECT_DOUBLE_EQ(s->rate, 10.0);
  EXPECT_EQ(s->eta_seconds, std::optional<double>(9.0));
  EXPECT_GT(s->sequence, first);
  SetProgressStage("2 augment");  // the counts stay
  EXPECT_EQ(CurrentProgress()->done, 10);
  EXPECT_EQ(CurrentProgress()->stage, "2 augment");
  now += 4.0;
  p.Add(40);
  p.Finish();
  s = CurrentProgress();
  EXPECT_TRUE(s->finished);
  EXPECT_EQ(s->done, 50);
  EXPECT_DOUBLE_EQ(s->rate, 10.0);  // the mean rate at the end
  ClearProgressBoard();
}

TEST(ProgressTest, ConcurrentAddsInLogModeWriteBoundedWholeLines) {
  std::mutex mutex;
  std::vector<std::string> lines;
  ProgressOptions o;
  o.unit = "utt";
  o.mode = ProgressMode::kLog;
  o.publish = false;
  o.sink = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  };
  {
    Progress p("ds", 40000, o);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&p] {
        for (int i = 0; i < 10000; ++i) p.Add(1);
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(p.done(), 40000);
  }
  // One line per tenth (10% ... 90%) at most, plus the end line, each written whole.
  ASSERT_GE(lines.size(), 2u);
  EXPECT_LE(lines.size(), 10u);
  EXPECT_EQ(lines.front().rfind("ds: 4,000/40,000 utt (10.0%), ", 0), 0u) << lines.front();
  EXPECT_EQ(lines.back().rfind("ds: 40,000 utt in ", 0), 0u) << lines.back();
}

}  // namespace
}  // namespace asv::base
