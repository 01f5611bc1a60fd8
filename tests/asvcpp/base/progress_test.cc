#include "asvcpp/base/progress.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

TEST(ProgressTest, LogModeWritesOneLinePerInterval) {
  Fixture f;
  Progress p("ds", 100, f.Options());
  for (int i = 0; i < 100; ++i) {
    f.now += 0.5;  // 50 s in all: lines at 10, 20, 30, 40, 50 s
    p.Add(1);
  }
  ASSERT_EQ(f.lines.size(), 5u);
  EXPECT_EQ(f.lines[0], "ds: 20/100 utt (20.0%), 2.0 utt/s, elapsed 0:10, ETA 0:40");
  EXPECT_EQ(f.lines[4], "ds: 100/100 utt (100.0%), 2.0 utt/s, elapsed 0:50");
  p.Finish();  // log mode: no extra line
  p.Finish();
  EXPECT_EQ(f.lines.size(), 5u);
}

TEST(ProgressTest, LiveModeRedrawsOftenAndEndsWithFinalLine) {
  Fixture f;
  ProgressOptions o = f.Options(ProgressMode::kLive);
  o.redraw_interval_s = 1.0;
  {
    Progress p("ds", 4, o);
    for (int i = 0; i < 4; ++i) {
      f.now += 1.0;
      p.Add(1);
    }
    EXPECT_EQ(f.lines.size(), 4u);
  }  // destructor finishes
  ASSERT_EQ(f.lines.size(), 5u);
  EXPECT_EQ(f.lines.back(), "ds: 4/4 utt (100.0%), 1.0 utt/s, elapsed 0:04");
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

}  // namespace
}  // namespace asv::base
