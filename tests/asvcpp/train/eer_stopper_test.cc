#include "asvcpp/train/eer_stopper.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/base/error.h"

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

TEST(EerStopperTest, StopsAfterPatienceEvaluationsWithoutEnoughImprovement) {
  EerStopper stopper(/*patience=*/2, /*minimum_improvement=*/0.1);
  EXPECT_FALSE(stopper.Update(5.0));  // 100 -> 5: a new best
  EXPECT_DOUBLE_EQ(stopper.best(), 5.0);
  EXPECT_FALSE(stopper.Update(4.95));  // better by 0.05 only: no improvement, best kept
  EXPECT_DOUBLE_EQ(stopper.best(), 5.0);
  EXPECT_EQ(stopper.evaluations_without_improvement(), 1);
  EXPECT_FALSE(stopper.Update(4.8));  // better by 0.2: the count restarts
  EXPECT_DOUBLE_EQ(stopper.best(), 4.8);
  EXPECT_EQ(stopper.evaluations_without_improvement(), 0);
  EXPECT_FALSE(stopper.Update(4.75));
  EXPECT_TRUE(stopper.Update(6.0));  // second evaluation in a row without improvement
  EXPECT_EQ(stopper.evaluations_without_improvement(), 2);
}

TEST(EerStopperTest, ImprovementMustExceedTheMinimumStrictly) {
  EerStopper stopper(1, 0.5);
  EXPECT_FALSE(stopper.Update(3.0));
  EXPECT_TRUE(stopper.Update(2.5));  // exactly 0.5 better is not enough
}

TEST(EerStopperTest, SavedStateIsLoadedBackAndBadFilesAreNamed) {
  const stdfs::path dir = stdfs::temp_directory_path() / ("asv_eer_stopper_" + std::to_string(::getpid()));
  stdfs::create_directories(dir);
  EerStopper a(3, 0.1);
  a.Update(7.5);
  a.Update(7.45);
  a.Save(dir / "eer_stopper.json");
  EerStopper b(3, 0.1);
  b.Load(dir / "eer_stopper.json");
  EXPECT_DOUBLE_EQ(b.best(), 7.5);
  EXPECT_EQ(b.evaluations_without_improvement(), 1);
  EXPECT_FALSE(b.Update(7.5));
  EXPECT_TRUE(b.Update(7.5));  // continues the saved count: third evaluation without improvement

  std::ofstream(dir / "bad.json") << "{\"best_mean_eer_percent\": 1.0}";
  try {
    b.Load(dir / "bad.json");
    ADD_FAILURE() << "a state without its counter was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: not an early-stopping state file"), std::string::npos) << e.what();
  }
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::train
