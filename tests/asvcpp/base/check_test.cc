#include "asvcpp/base/check.h"

#include <gtest/gtest.h>

namespace asv {
namespace {

TEST(CheckTest, PassingChecksDoNothing) {
  EXPECT_NO_THROW(ASV_CHECK(1 + 1 == 2));
  EXPECT_NO_THROW(ASV_CHECK(true, "message"));
}

TEST(CheckTest, FailureNamesExpressionFileAndMessage) {
  try {
    const int rows = -1;
    ASV_CHECK(rows >= 0, "rows = " + std::to_string(rows));
    FAIL();
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rows >= 0"), std::string::npos) << what;
    EXPECT_NE(what.find("check_test.cc"), std::string::npos) << what;
    EXPECT_NE(what.find("rows = -1"), std::string::npos) << what;
  }
  EXPECT_THROW(ASV_CHECK(false), std::logic_error);
}

}  // namespace
}  // namespace asv
