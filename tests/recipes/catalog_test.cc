// The recipe catalog's settings: every numeric setting of every recipe has a range that the
// config reader checks, and a value outside it is an error that names the setting and the range.
#include "recipes/catalog.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asvcpp/settings/settings_tree.h"
#include "asvcpp/settings/types.h"

namespace asv::recipes {
namespace {

// Whether a value of `type` holds numbers (an int or float, or a container of them).
bool IsNumeric(const settings::TypeDesc& type) {
  using Kind = settings::TypeDesc::Kind;
  switch (type.kind) {
    case Kind::kInt:
    case Kind::kFloat:
      return true;
    case Kind::kOptional:
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict:
      return IsNumeric(type.element());
    default:
      return false;
  }
}

TEST(RecipeCatalogTest, EveryNumericSettingHasARange) {
  int numeric = 0;
  std::vector<std::string> unbounded;
  for (const auto* recipe : AllRecipes()) {
    const auto settings = recipe->NewSettings();
    for (const auto& group : settings->tree().groups()) {
      for (const auto& field : group.fields) {
        if (!IsNumeric(field.type)) continue;
        ++numeric;
        if (!field.min || !field.max) unbounded.push_back(recipe->name() + ": " + field.key());
        // The compiled default lies inside the range (an optional's None has no number to check).
        if (field.min && field.max && field.default_value.kind() != parser::Value::Kind::kNone &&
            (field.type.kind == settings::TypeDesc::Kind::kInt ||
             field.type.kind == settings::TypeDesc::Kind::kFloat)) {
          const double x = field.default_value.as_float();
          EXPECT_TRUE(x >= *field.min && x <= *field.max) << field.key() << " default " << x << " not "
                                                          << field.RangeText();
        }
      }
    }
  }
  EXPECT_GT(numeric, 90);  // both recipes' numeric settings were seen
  EXPECT_TRUE(unbounded.empty()) << "numeric settings without a lower and an upper bound:\n"
                                 << testing::PrintToString(unbounded);
}

TEST(RecipeCatalogTest, RangeTextShowsAnExclusiveLowerBound) {
  const auto settings = FindRecipe("voxceleb/xvector").NewSettings();
  const auto* network = [&]() -> const settings::Group* {
    for (const auto& g : settings->tree().groups()) {
      if (g.name == "network") return &g;
    }
    return nullptr;
  }();
  ASSERT_NE(network, nullptr);
  EXPECT_EQ(network->Find("initial_learning_rate")->RangeText(), "in (0, 100]");
  EXPECT_EQ(network->Find("embedding_size")->RangeText(), "in [1, 8192]");
}

}  // namespace
}  // namespace asv::recipes
