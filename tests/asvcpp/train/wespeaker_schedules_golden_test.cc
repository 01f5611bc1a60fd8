// Compares ExponentialLrAt and MarginAt with values computed by WeSpeaker's own
// wespeaker/utils/schedulers.py (ExponentialDecrease, MarginScheduler). Golden file:
// tests/asvcpp/train/golden/wespeaker_schedules_golden.json, made by
// tools/golden/make_wespeaker_schedule_golden.py (its docstring has the command and the WeSpeaker
// commit). The C++ code performs the same double operations in the same order, so the values agree
// to within 4 ulp (EXPECT_DOUBLE_EQ); in practice bit for bit.
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "asvcpp/train/exponential_lr.h"
#include "asvcpp/train/margin_schedule.h"
#include "tests/build_paths.h"

namespace asv::train {
namespace {

using nlohmann::json;

const json& Golden() {
  static const json doc = [] {
    std::ifstream in(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/train/golden/wespeaker_schedules_golden.json");
    if (!in) throw std::runtime_error("cannot open wespeaker_schedules_golden.json");
    return json::parse(in);
  }();
  return doc;
}

TEST(WeSpeakerSchedulesGoldenTest, ExponentialDecreaseMatchesEveryIteration) {
  const auto& cases = Golden().at("exponential_decrease");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    const auto& p = c.at("params");
    ExponentialLrOptions o;
    o.initial_lr = p.at("initial_lr").get<double>();
    o.final_lr = p.at("final_lr").get<double>();
    o.num_epochs = p.at("num_epochs").get<int>();
    o.epoch_iter = p.at("epoch_iter").get<std::int64_t>();
    o.warm_up_epochs = p.at("warm_up_epoch").get<int>();
    o.scale_ratio = p.at("scale_ratio").get<double>();
    o.warm_from_zero = p.at("warm_from_zero").get<bool>();
    const auto& lrs = c.at("lr");
    ASSERT_GT(lrs.size(), static_cast<std::size_t>(o.num_epochs * o.epoch_iter));
    for (std::size_t it = 0; it < lrs.size(); ++it) {
      EXPECT_DOUBLE_EQ(ExponentialLrAt(o, static_cast<std::int64_t>(it)), lrs[it].get<double>())
          << c.at("name").get<std::string>() << " iteration " << it;
    }
  }
}

TEST(WeSpeakerSchedulesGoldenTest, MarginSchedulerMatchesEveryIteration) {
  const auto& cases = Golden().at("margin_scheduler");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    const auto& p = c.at("params");
    MarginScheduleOptions o;
    o.initial_margin = p.at("initial_margin").get<double>();
    o.final_margin = p.at("final_margin").get<double>();
    o.increase_start_epoch = p.at("increase_start_epoch").get<int>();
    o.fix_start_epoch = p.at("fix_start_epoch").get<int>();
    o.epoch_iter = p.at("epoch_iter").get<std::int64_t>();
    o.update_margin = p.at("update_margin").get<bool>();
    o.increase = ParseMarginIncrease(p.at("increase_type").get<std::string>());
    const auto& margins = c.at("margin");
    ASSERT_GT(margins.size(), static_cast<std::size_t>((o.fix_start_epoch - 1) * o.epoch_iter));
    for (std::size_t it = 0; it < margins.size(); ++it) {
      EXPECT_DOUBLE_EQ(MarginAt(o, static_cast<std::int64_t>(it)), margins[it].get<double>())
          << c.at("name").get<std::string>() << " iteration " << it;
    }
  }
}

}  // namespace
}  // namespace asv::train
