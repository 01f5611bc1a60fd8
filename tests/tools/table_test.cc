#include "tools/asvrun/table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace asv::tools {
namespace {

TEST(TableTest, AlignedColumnsWithoutTrailingSpaces) {
  EXPECT_EQ(FormatTable({"config", "parents", "description"}, {{"net", "", ""}, {"emb_net", "< emb < net", "x"}}),
            "config   parents      description\n"
            "net\n"
            "emb_net  < emb < net  x\n");
}

// One huge cell (a config with 10,000 parents) overflows its column instead of padding every
// other row to its width.
TEST(TableTest, HugeCellsDoNotWidenTheirColumn) {
  const std::string huge(100000, 'p');
  std::vector<std::vector<std::string>> rows = {{"x", huge, "wide"}};
  for (int i = 0; i < 1000; ++i) rows.push_back({"p" + std::to_string(i), "", "d"});
  const std::string table = FormatTable({"config", "parents", "description"}, rows);
  EXPECT_LT(table.size(), huge.size() + 1000 * (kMaxColumnWidth + 20));
  EXPECT_NE(table.find("x       " + huge + "  wide\n"), std::string::npos);
  EXPECT_NE(table.find("\np0      " + std::string(kMaxColumnWidth + 2, ' ') + "d\n"), std::string::npos);
}

}  // namespace
}  // namespace asv::tools
