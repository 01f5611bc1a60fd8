#include "asvcpp/train/lr_schedule.h"

#include <gtest/gtest.h>

#include "asvcpp/settings/settings.h"

namespace asv::train {
namespace {

TEST(LrScheduleTest, ScriptedLossSequence) {
  settings::NetworkSettings s;  // ASVtorch defaults: ratio 0.01, room 0.1, target 0.1, max 2
  const auto o = LrScheduleOptions::FromSettings(s);
  LrScheduleState state;
  struct Step {
    double loss;
    bool halve;
    int consecutive;
    bool stop;
  };
  // 5.0: first epoch, prev = float max -> change ~1. 4.0: (5-4)/4.9 = 0.20. 3.99: 0.01/3.9 = 0.0026
  // -> halve. 3.985: 0.005/3.89 -> halve, 2 in a row -> stop. 3.0: 0.985/3.885 -> reset.
  // 2.999: 0.001/2.9 -> halve.
  const Step steps[] = {{5.0, false, 0, false}, {4.0, false, 0, false}, {3.99, true, 1, false},
                        {3.985, true, 2, true}, {3.0, false, 0, false}, {2.999, true, 1, false}};
  for (const auto& step : steps) {
    const auto d = UpdateLrSchedule(state, step.loss, o);
    EXPECT_EQ(d.halve, step.halve) << step.loss;
    EXPECT_EQ(state.consecutive_lr_updates, step.consecutive) << step.loss;
    EXPECT_EQ(d.stop, step.stop) << step.loss;
    EXPECT_EQ(state.training_loss, step.loss);
  }
}

TEST(LrScheduleTest, RoomForImprovementFloor) {
  LrScheduleOptions o;  // room floor 0.1, target 0.1
  LrScheduleState state;
  state.training_loss = 0.15;  // prev − target = 0.05 < 0.1 -> room 0.1
  auto d = UpdateLrSchedule(state, 0.1495, o);
  EXPECT_DOUBLE_EQ(d.room, 0.1);
  EXPECT_NEAR(d.change_ratio, 0.005, 1e-12);
  EXPECT_TRUE(d.halve);
  state.training_loss = 0.15;
  state.consecutive_lr_updates = 0;
  d = UpdateLrSchedule(state, 0.148, o);  // 0.002 / 0.1 = 0.02 >= 0.01
  EXPECT_FALSE(d.halve);
}

TEST(LrScheduleTest, FirstEpochNeverHalvesAndRisingLossHalves) {
  LrScheduleOptions o;
  LrScheduleState state;
  EXPECT_FALSE(UpdateLrSchedule(state, 1e6, o).halve);
  EXPECT_TRUE(UpdateLrSchedule(state, 2e6, o).halve);
}

}  // namespace
}  // namespace asv::train
