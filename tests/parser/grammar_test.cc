#include "parser/grammar.h"

#include <gtest/gtest.h>

#include <tao/pegtl/contrib/analyze.hpp>

namespace asv::parser::grammar {
namespace {

// analyze() finds rules that can loop without consuming input or recurse without progress.
TEST(GrammarTest, AnalyzeFindsNoProblems) {
  EXPECT_EQ(tao::pegtl::analyze<assignment>(), 0u);
  EXPECT_EQ(tao::pegtl::analyze<header>(), 0u);
  EXPECT_EQ(tao::pegtl::analyze<literal>(), 0u);
  EXPECT_EQ(tao::pegtl::analyze<header_like>(), 0u);
  EXPECT_EQ(tao::pegtl::analyze<assignment_like>(), 0u);
}

template <typename Rule>
bool Matches(const std::string& s) {
  tao::pegtl::memory_input<> in(s, "test");
  return tao::pegtl::parse<seq<Rule, eof>>(in);
}

// Probes only look at the start of a line.
template <typename Rule>
bool Probe(const std::string& s) {
  tao::pegtl::memory_input<> in(s, "test");
  return tao::pegtl::parse<Rule>(in);
}

TEST(GrammarTest, HeaderProbe) {
  EXPECT_TRUE(Probe<header_like>("emb_net < emb < net"));
  EXPECT_TRUE(Probe<header_like>("  net"));
  EXPECT_TRUE(Probe<header_like>("net-2  # trains"));
  EXPECT_TRUE(Probe<header_like>("score_net<score<emb_net"));
  EXPECT_FALSE(Probe<header_like>("recipe.start_stage = 1"));
  EXPECT_FALSE(Probe<header_like>("foo = 1"));
  EXPECT_FALSE(Probe<header_like>("1net"));
}

TEST(GrammarTest, AssignmentProbe) {
  EXPECT_TRUE(Probe<assignment_like>("recipe.x = 1"));
  EXPECT_TRUE(Probe<assignment_like>("  foo: int = 1"));
  EXPECT_TRUE(Probe<assignment_like>("foo = 1"));
  EXPECT_FALSE(Probe<assignment_like>("net < emb"));
  EXPECT_FALSE(Probe<assignment_like>("net"));
}

TEST(GrammarTest, NumberTokens) {
  EXPECT_TRUE(Matches<float_lit>("1e-3"));
  EXPECT_TRUE(Matches<float_lit>(".5"));
  EXPECT_TRUE(Matches<float_lit>("5."));
  EXPECT_TRUE(Matches<float_lit>("1_000.5"));
  EXPECT_TRUE(Matches<float_lit>("-2.5E+3"));
  EXPECT_FALSE(Matches<float_lit>("15"));
  EXPECT_FALSE(Matches<float_lit>("1__0.5"));
  EXPECT_TRUE(Matches<int_lit>("0x1F"));
  EXPECT_TRUE(Matches<int_lit>("0o17"));
  EXPECT_TRUE(Matches<int_lit>("0b1_01"));
  EXPECT_TRUE(Matches<int_lit>("-1_000"));
  EXPECT_FALSE(Matches<int_lit>("1_"));
  EXPECT_FALSE(Matches<int_lit>("0x"));
}

}  // namespace
}  // namespace asv::parser::grammar
