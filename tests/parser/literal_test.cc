// Literal values as ParseLiteral (the `--set` path) and the file parser read them; the expected
// values are what Python 3's ast.literal_eval gives for the same text.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "parser/parse.h"

namespace asv::parser {
namespace {

Value Lit(const std::string& text) {
  Diagnostics diags;
  auto v = ParseLiteral(text, "--set x.y", diags);
  EXPECT_FALSE(diags.has_errors()) << text << "\n" << diags.Render();
  return v ? *v : Value::String("<error>");
}

std::string Repr(const std::string& text) { return Lit(text).Repr(); }

// The rendered error for a literal that must not parse.
std::string Error(const std::string& text) {
  Diagnostics diags;
  const auto v = ParseLiteral(text, "--set x.y", diags);
  EXPECT_FALSE(v.has_value()) << text;
  EXPECT_EQ(diags.error_count(), 1u) << text;
  return diags.Render();
}

TEST(LiteralTest, Constants) {
  EXPECT_EQ(Lit("None"), Value::None());
  EXPECT_EQ(Lit("True"), Value::Bool(true));
  EXPECT_EQ(Lit("False"), Value::Bool(false));
  EXPECT_EQ(Repr("  None  "), "None");
}

TEST(LiteralTest, Integers) {
  EXPECT_EQ(Lit("0").as_int(), 0);
  EXPECT_EQ(Lit("42").as_int(), 42);
  EXPECT_EQ(Lit("-7").as_int(), -7);
  EXPECT_EQ(Lit("+7").as_int(), 7);
  EXPECT_EQ(Lit("- 7").as_int(), -7);
  EXPECT_EQ(Lit("1_000_000").as_int(), 1000000);
  EXPECT_EQ(Lit("000").as_int(), 0);
  EXPECT_EQ(Lit("0x1F").as_int(), 31);
  EXPECT_EQ(Lit("0XfF").as_int(), 255);
  EXPECT_EQ(Lit("0o17").as_int(), 15);
  EXPECT_EQ(Lit("0b101").as_int(), 5);
  EXPECT_EQ(Lit("0b_1_0").as_int(), 2);
  EXPECT_EQ(Lit("-0x10").as_int(), -16);
  EXPECT_EQ(Lit("9223372036854775807").as_int(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(Lit("-9223372036854775808").as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(Lit("7").kind(), Value::Kind::kInt);
}

TEST(LiteralTest, IntegerOutOfRange) {
  EXPECT_NE(Error("9223372036854775808").find("integer 9223372036854775808 does not fit in 64 bits"),
            std::string::npos);
  EXPECT_NE(Error("0x1_0000_0000_0000_0000").find("does not fit in 64 bits"), std::string::npos);
}

TEST(LiteralTest, Floats) {
  EXPECT_EQ(Lit("1e-3"), Value::Float(0.001));
  EXPECT_EQ(Lit(".5"), Value::Float(0.5));
  EXPECT_EQ(Lit("5."), Value::Float(5.0));
  EXPECT_EQ(Lit("1_000.5"), Value::Float(1000.5));
  EXPECT_EQ(Lit("-2.5E+3"), Value::Float(-2500.0));
  EXPECT_EQ(Lit("1e5"), Value::Float(100000.0));
  EXPECT_EQ(Lit("5.e2"), Value::Float(500.0));
  EXPECT_EQ(Lit("0.1"), Value::Float(0.1));
  EXPECT_EQ(Repr("1e-3"), "0.001");
  EXPECT_EQ(Repr("5."), "5.0");
  EXPECT_EQ(Repr("-2.5E+3"), "-2500.0");
  EXPECT_EQ(Repr("1e-5"), "1e-05");
  // Python: 1e400 is inf, 1e-400 is 0.0.
  EXPECT_TRUE(std::isinf(Lit("1e400").as_float()));
  EXPECT_LT(Lit("-1e400").as_float(), 0);
  EXPECT_EQ(Lit("1e-400"), Value::Float(0.0));
}

TEST(LiteralTest, IntAndFloatCalls) {
  EXPECT_EQ(Lit("int(100e6)"), Value::Int(100000000));
  EXPECT_EQ(Lit("int(-2.7)"), Value::Int(-2));  // Truncation toward zero.
  EXPECT_EQ(Lit("int(2.7)"), Value::Int(2));
  EXPECT_EQ(Lit("int(7)"), Value::Int(7));
  EXPECT_EQ(Lit("int ( 1e3 )"), Value::Int(1000));
  EXPECT_EQ(Lit("float(3)"), Value::Float(3.0));
  EXPECT_EQ(Repr("float(3)"), "3.0");
  EXPECT_EQ(Lit("float(-2.5)"), Value::Float(-2.5));
  EXPECT_EQ(Repr("[int(1e2), float(1)]"), "[100, 1.0]");
  EXPECT_NE(Error("int(1e30)").find("int(1e+30) does not fit in a 64-bit integer"), std::string::npos);
  EXPECT_NE(Error("int('5')").find("expected a number literal inside int(...) or float(...)"), std::string::npos);
  EXPECT_NE(Error("str(5)").find("found the name 'str'"), std::string::npos);
}

TEST(LiteralTest, Strings) {
  EXPECT_EQ(Lit("'abc'"), Value::String("abc"));
  EXPECT_EQ(Lit("\"abc\""), Value::String("abc"));
  EXPECT_EQ(Lit("''"), Value::String(""));
  EXPECT_EQ(Lit("'a # b'"), Value::String("a # b"));
  EXPECT_EQ(Lit("\"it's\""), Value::String("it's"));
  EXPECT_EQ(Lit("'say \"hi\"'"), Value::String("say \"hi\""));
  EXPECT_EQ(Lit("'h\xC3\xA9'"), Value::String("h\xC3\xA9"));
  EXPECT_EQ(Repr("'it\\'s'"), "\"it's\"");
}

TEST(LiteralTest, Escapes) {
  EXPECT_EQ(Lit(R"('a\\b\'c\"d')").as_string(), "a\\b'c\"d");
  EXPECT_EQ(Lit(R"('\n\t\r')").as_string(), "\n\t\r");
  EXPECT_EQ(Lit(R"('\a\b\f\v')").as_string(), "\a\b\f\v");
  EXPECT_EQ(Lit(R"('\0')").as_string(), std::string(1, '\0'));
  EXPECT_EQ(Lit(R"('\101\7x')").as_string(), "A\ax");
  EXPECT_EQ(Lit(R"('\1234')").as_string(), "S4");  // At most three octal digits.
  EXPECT_EQ(Lit(R"('\x41\x7a')").as_string(), "Az");
  EXPECT_EQ(Lit(R"('\xe9')").as_string(), "\xC3\xA9");  // U+00E9 stored as UTF-8.
  EXPECT_EQ(Lit(R"('\u00e9\u20AC')").as_string(), "\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(Lit(R"('\U0001F600')").as_string(), "\xF0\x9F\x98\x80");
  // Unknown escapes keep the backslash, as in Python.
  EXPECT_EQ(Lit(R"('C:\data\q')").as_string(), "C:\\data\\q");
  EXPECT_EQ(Repr(R"('\d')"), R"('\\d')");
}

TEST(LiteralTest, BadEscapes) {
  EXPECT_EQ(Error(R"('ab\x4')"),
            "--set x.y:1:4: error: truncated \\x escape: it needs 2 hex digits\n"
            " 1 | 'ab\\x4'\n"
            "   |    ^\n");
  EXPECT_NE(Error(R"('\U00110000')").find("above U+10FFFF"), std::string::npos);
  EXPECT_NE(Error(R"('\ud800')").find("surrogate"), std::string::npos);
  EXPECT_NE(Error(R"('\N{DASH}')").find("\\N{...} escapes are not supported"), std::string::npos);
}

TEST(LiteralTest, RawStrings) {
  EXPECT_EQ(Lit(R"(r'\n')").as_string(), "\\n");
  EXPECT_EQ(Lit(R"(R"C:\data")").as_string(), "C:\\data");
  EXPECT_EQ(Lit(R"(r'\'')").as_string(), "\\'");  // The quote is escaped, the backslash stays.
  EXPECT_EQ(Lit(R"(r'')").as_string(), "");
}

TEST(LiteralTest, Tuples) {
  EXPECT_EQ(Repr("()"), "()");
  EXPECT_EQ(Repr("(0,)"), "(0,)");
  EXPECT_EQ(Repr("(0, 2, 3)"), "(0, 2, 3)");
  EXPECT_EQ(Repr("(0, 2, 3,)"), "(0, 2, 3)");
  EXPECT_EQ(Repr("( 0 , )"), "(0,)");
  EXPECT_EQ(Lit("(5)"), Value::Int(5));  // Parentheses alone do not make a tuple.
  EXPECT_EQ(Lit("((5))"), Value::Int(5));
  EXPECT_EQ(Repr("((5),)"), "(5,)");
  EXPECT_EQ(Repr("((1, 2), (3,))"), "((1, 2), (3,))");
  EXPECT_EQ(Lit("(0,)").kind(), Value::Kind::kTuple);
}

TEST(LiteralTest, Lists) {
  EXPECT_EQ(Repr("[]"), "[]");
  EXPECT_EQ(Repr("['a', 'b']"), "['a', 'b']");
  EXPECT_EQ(Repr("['a', 'b',]"), "['a', 'b']");
  EXPECT_EQ(Repr("[1, [2, [3, []]], (4,)]"), "[1, [2, [3, []]], (4,)]");
  EXPECT_EQ(Repr("[None, True, 1.5, 'x']"), "[None, True, 1.5, 'x']");
  EXPECT_EQ(Lit("[1]"), Value::List({Value::Int(1)}));
}

TEST(LiteralTest, Dicts) {
  EXPECT_EQ(Repr("{}"), "{}");
  EXPECT_EQ(Repr("{'voxceleb1': '/data/vox1'}"), "{'voxceleb1': '/data/vox1'}");
  EXPECT_EQ(Repr("{ 'voxceleb1': '/a', 'voxceleb2': '/b' }"), "{'voxceleb1': '/a', 'voxceleb2': '/b'}");
  EXPECT_EQ(Repr("{'voxceleb2_cat': 5,}"), "{'voxceleb2_cat': 5}");
  EXPECT_EQ(Repr("{'a': [1, {'b': None}], 2: (3,), (1, 'x'): 0.5}"),
            "{'a': [1, {'b': None}], 2: (3,), (1, 'x'): 0.5}");
  EXPECT_EQ(Repr("{'a': 1, 'b': 2, 'a': 3}"), "{'a': 3, 'b': 2}");  // Python keeps the last value.
  EXPECT_NE(Error("{[1]: 2}").find("a list cannot be a dict key"), std::string::npos);
  EXPECT_NE(Error("{(1, [2]): 2}").find("a tuple cannot be a dict key"), std::string::npos);
  EXPECT_NE(Error("{1, 2}").find("expected ':' after the dict key"), std::string::npos);
}

// Repeated keys in large dicts (found through a hash index past a few entries) behave as in
// small ones: the first key's place, the last value; and the time stays linear.
TEST(LiteralTest, LargeDictsKeepTheLastValueOfARepeatedKey) {
  const int n = 100000;
  std::string text = "{";
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < n; ++i) {
      switch (i % 4) {
        case 0: text += fmt::format("{}: {}, ", i, round); break;
        case 1: text += fmt::format("'k{}': {}, ", i, round); break;
        case 2: text += fmt::format("({}, 'x'): {}, ", i, round); break;
        default: text += fmt::format("{}.5: {}, ", i, round); break;
      }
    }
  }
  text += "0.0: 'zero', -0.0: 'minus zero', 'last': {'a': 1, 'a': 2}}";
  const Value v = Lit(text);
  ASSERT_EQ(v.entries().size(), static_cast<std::size_t>(n) + 2);
  EXPECT_EQ(v.entries()[0].first, Value::Int(0));
  EXPECT_EQ(v.entries()[0].second, Value::Int(1));
  EXPECT_EQ(v.entries()[1].first, Value::String("k1"));
  EXPECT_EQ(v.entries()[1].second, Value::Int(1));
  EXPECT_EQ(v.entries()[2].first.Repr(), "(2, 'x')");
  EXPECT_EQ(v.entries()[n - 1].first, Value::Float(99999.5));
  EXPECT_EQ(v.entries()[n - 1].second, Value::Int(1));
  EXPECT_EQ(v.entries()[n].first, Value::Float(0.0));
  EXPECT_EQ(v.entries()[n].second, Value::String("minus zero"));
  EXPECT_EQ(v.entries()[n + 1].second.Repr(), "{'a': 2}");
}

TEST(LiteralTest, ValuePositions) {
  const Value v = Lit("[1, 'b', (3,), {'k': -2}]");
  ASSERT_EQ(v.items().size(), 4u);
  EXPECT_EQ(v.pos().ToString(), "--set x.y:1:1");
  EXPECT_EQ(v.items()[0].pos().column, 2);
  EXPECT_EQ(v.items()[1].pos().column, 5);
  EXPECT_EQ(v.items()[2].pos().column, 10);
  EXPECT_EQ(v.items()[2].items()[0].pos().column, 11);
  EXPECT_EQ(v.items()[3].pos().column, 16);
  EXPECT_EQ(v.items()[3].entries()[0].first.pos().column, 17);
  EXPECT_EQ(v.items()[3].entries()[0].second.pos().column, 22);  // The sign starts the literal.
  EXPECT_EQ(Lit("  (7)").pos().column, 4);  // `(x)` is x, at x's position.
  EXPECT_EQ(Lit("int(1e3)").pos().column, 1);
}

TEST(LiteralTest, NamesAreNotEvaluated) {
  EXPECT_EQ(Error("full_system"),
            "--set x.y:1:1: error: expected a literal value, found the name 'full_system'; strings need quotes, "
            "and names are not evaluated\n"
            " 1 | full_system\n"
            "   | ^\n");
  EXPECT_NE(Error("true").find("(did you mean 'True'?)"), std::string::npos);
  EXPECT_NE(Error("null").find("(did you mean 'None'?)"), std::string::npos);
  EXPECT_NE(Error("torch.float32").find("found the name 'torch'"), std::string::npos);
  EXPECT_NE(Error("[1, foo]").find("--set x.y:1:5: error: expected a literal value, found the name 'foo'"),
            std::string::npos);
  EXPECT_NE(Error("Nonesuch").find("found the name 'Nonesuch'"), std::string::npos);
}

TEST(LiteralTest, ArithmeticIsNotEvaluated) {
  EXPECT_EQ(Error("10 * 100"),
            "--set x.y:1:4: error: expected a literal value, found an expression: operators, names and calls "
            "are not evaluated (write the resulting literal)\n"
            " 1 | 10 * 100\n"
            "   |    ^\n");
  EXPECT_NE(Error("[1 + 2]").find("1:4: error: expected ',' or ']' after the list element"), std::string::npos);
  EXPECT_NE(Error("-'a'").find("1:1: error: expected a literal value (None, True"), std::string::npos);
  EXPECT_NE(Error("").find("expected a literal value"), std::string::npos);
}

TEST(LiteralTest, UnterminatedConstructs) {
  EXPECT_EQ(Error("[1, 2"),
            "--set x.y:1:1: error: unterminated '[' (no closing ']' before the end of the file)\n"
            " 1 | [1, 2\n"
            "   | ^\n");
  EXPECT_NE(Error("{'a': (1, 2}").find("1:12: error: expected ',' or ')' after the tuple element"),
            std::string::npos);
  EXPECT_EQ(Error("['a', 'bc]"),
            "--set x.y:1:7: error: unterminated string (missing closing ')\n"
            " 1 | ['a', 'bc]\n"
            "   |       ^\n");
}

TEST(LiteralTest, MultiLineValueInLiteral) {
  EXPECT_EQ(Repr("[1,\n 2]"), "[1, 2]");
}

}  // namespace
}  // namespace asv::parser
