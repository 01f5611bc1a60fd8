// Name tables of enums (EnumNames found by ADL) and the lookups built on them.
#include "asvcpp/base/enum_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace asv::enum_names_test {

enum class Colour { kRed, kGreen, kNone };
inline constexpr EnumName<Colour> kColourNames[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kNone, ""}};
constexpr const auto& EnumNames(Colour) { return kColourNames; }

enum class Plain { kA };

static_assert(kHasEnumNames<Colour>);
static_assert(!kHasEnumNames<Plain>);
static_assert(!kHasEnumNames<int>);
static_assert(EnumToName(Colour::kGreen) == "green");        // usable at compile time
static_assert(*EnumFromName<Colour>("red") == Colour::kRed);

TEST(EnumNames, NamesRoundTripInTableOrder) {
  EXPECT_EQ(EnumChoices<Colour>(), (std::vector<std::string>{"red", "green", ""}));
  for (const auto& entry : kColourNames) {
    EXPECT_EQ(EnumToName(entry.value), entry.name);
    EXPECT_EQ(EnumFromName<Colour>(entry.name), entry.value);
  }
  EXPECT_EQ(EnumFromName<Colour>(""), Colour::kNone);  // the empty string is a name like any other
}

TEST(EnumNames, UnknownNamesAndValues) {
  EXPECT_FALSE(EnumFromName<Colour>("Red").has_value());  // case-sensitive
  EXPECT_FALSE(EnumFromName<Colour>("red ").has_value());
  EXPECT_FALSE(EnumFromName<Colour>("blue").has_value());
  EXPECT_EQ(EnumToName(static_cast<Colour>(7)), "?");
}

}  // namespace asv::enum_names_test
