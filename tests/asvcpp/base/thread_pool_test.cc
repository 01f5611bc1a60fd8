#include "asvcpp/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace asv::base {
namespace {

TEST(ThreadPoolTest, EffectiveThreadsIsClamped) {
  EXPECT_EQ(EffectiveThreads(0), 1);
  EXPECT_EQ(EffectiveThreads(-3), 1);
  EXPECT_EQ(EffectiveThreads(1), 1);
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(EffectiveThreads(1000000), hw);
}

TEST(ThreadPoolTest, ParallelForProcessesEveryItemOnce) {
  for (int threads : {1, 2, 4, 16}) {
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<int> bad_worker{0};
    ParallelFor(hits.size(), threads, [&](std::size_t i, int worker) {
      if (worker < 0 || worker >= threads) ++bad_worker;
      ++hits[i];
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads";
    EXPECT_EQ(bad_worker.load(), 0);
  }
  ParallelFor(0, 4, [](std::size_t, int) { FAIL() << "no items"; });
}

TEST(ThreadPoolTest, ParallelForRethrowsFirstExceptionAndStops) {
  std::atomic<int> started{0};
  try {
    ParallelFor(100000, 4, [&](std::size_t i, int) {
      ++started;
      if (i == 10) throw std::runtime_error("item 10 failed");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item 10 failed");
  }
  EXPECT_LT(started.load(), 100000);  // work stopped early
}

TEST(ThreadPoolTest, OrderedConsumesInIndexOrderRegardlessOfTiming) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<std::size_t> order;
    std::vector<std::string> values;
    std::atomic<int> in_flight{0};
    std::atomic<int> max_waiting{0};
    ParallelForOrdered<std::string>(
        200, threads, 6,
        [&](std::size_t i) {
          // Uneven, index-dependent work so later items often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 500));
          const int now = ++in_flight;
          int prev = max_waiting.load();
          while (now > prev && !max_waiting.compare_exchange_weak(prev, now)) {
          }
          return "v" + std::to_string(i);
        },
        [&](std::size_t i, std::string&& v) {
          --in_flight;
          order.push_back(i);
          values.push_back(std::move(v));
        });
    ASSERT_EQ(order.size(), 200u);
    for (std::size_t i = 0; i < order.size(); ++i) {
      ASSERT_EQ(order[i], i);
      ASSERT_EQ(values[i], "v" + std::to_string(i));
    }
    // Produced-but-unconsumed values stay within the window, which is raised to the thread count
    // when smaller (+1: the value whose slot was just freed may still be in the consume callback).
    EXPECT_LE(max_waiting.load(), std::max(6, threads) + 1) << threads << " threads";
  }
}

TEST(ThreadPoolTest, OrderedRethrowsProducerException) {
  std::vector<std::size_t> consumed;
  try {
    ParallelForOrdered<int>(
        1000, 4, 0,
        [](std::size_t i) -> int {
          if (i == 50) throw std::invalid_argument("bad item 50");
          return static_cast<int>(i);
        },
        [&](std::size_t i, int&&) { consumed.push_back(i); });
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad item 50");
  }
  // Consumption is in order and never passes the failed item.
  ASSERT_LE(consumed.size(), 50u);
  for (std::size_t i = 0; i < consumed.size(); ++i) EXPECT_EQ(consumed[i], i);
}

TEST(ThreadPoolTest, OrderedRethrowsConsumerExceptionAndJoins) {
  std::atomic<int> produced{0};
  EXPECT_THROW(ParallelForOrdered<int>(
                   100000, 3, 8,
                   [&](std::size_t i) {
                     ++produced;
                     return static_cast<int>(i);
                   },
                   [](std::size_t i, int&&) {
                     if (i == 5) throw std::runtime_error("disk full");
                   }),
               std::runtime_error);
  EXPECT_LE(produced.load(), 5 + 8 + 3);
}

TEST(ThreadPoolTest, OrderedInlineWithOneThread) {
  std::vector<std::thread::id> ids;
  ParallelForOrdered<int>(
      5, 1, 0,
      [&](std::size_t i) {
        ids.push_back(std::this_thread::get_id());
        return static_cast<int>(i);
      },
      [](std::size_t, int&&) {});
  for (const auto& id : ids) EXPECT_EQ(id, std::this_thread::get_id());
}

}  // namespace
}  // namespace asv::base
