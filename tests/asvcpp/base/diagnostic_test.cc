#include "asvcpp/base/diagnostic.h"

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"

namespace asv {
namespace {

TEST(DiagnosticTest, RendersPositionLineAndCaret) {
  Diagnostic d{Severity::kError, {"run_configs", 12, 9}, "unknown field", "network.frame_layer_sise = 512", {}};
  EXPECT_EQ(d.Render(),
            "run_configs:12:9: error: unknown field\n"
            " 12 | network.frame_layer_sise = 512\n"
            "    |         ^\n");
}

TEST(DiagnosticTest, CaretKeepsTabs) {
  Diagnostic d{Severity::kWarning, {"f", 3, 3}, "m", "\tab", {}};
  EXPECT_EQ(d.Render(), "f:3:3: warning: m\n 3 | \tab\n   | \t ^\n");
}

TEST(DiagnosticTest, FileOnlyAndNoPosition) {
  EXPECT_EQ((Diagnostic{Severity::kError, {"f", 0, 0}, "empty file", "", {}}).Render(), "f: error: empty file\n");
  EXPECT_EQ((Diagnostic{Severity::kError, {}, "no config given", "", {}}).Render(), "error: no config given\n");
}

TEST(DiagnosticTest, NotesFollowTheirDiagnostic) {
  Diagnostics diags;
  auto& d = diags.Error({"f", 5, 1}, "config 'net' defined twice", "net");
  d.notes.push_back(Diagnostic{Severity::kNote, {"f", 2, 1}, "first defined here", "net", {}});
  EXPECT_EQ(diags.Render(),
            "f:5:1: error: config 'net' defined twice\n 5 | net\n   | ^\n"
            "f:2:1: note: first defined here\n 2 | net\n   | ^\n");
}

TEST(DiagnosticTest, ThrowIfErrorsCollectsAllAndMapsToExitCode2) {
  Diagnostics diags;
  diags.Warning({"f", 1, 1}, "w");
  EXPECT_NO_THROW(diags.ThrowIfErrors());
  diags.Error({"f", 2, 1}, "e1");
  diags.Error({"g", 3, 1}, "e2");
  try {
    diags.ThrowIfErrors();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), 3u);
    EXPECT_EQ(ExitCodeFor(e), 2);
    const std::string what = e.what();
    EXPECT_NE(what.find("f:2:1: error: e1"), std::string::npos);
    EXPECT_NE(what.find("g:3:1: error: e2"), std::string::npos);
    EXPECT_NE(what.find("2 errors in configuration"), std::string::npos);
  }
}

TEST(DiagnosticTest, AppendUniqueSkipsRepeats) {
  Diagnostics a;
  a.Error({"f", 1, 2}, "bad");
  Diagnostics b;
  b.Error({"f", 1, 2}, "bad");
  b.Error({"f", 1, 3}, "bad");
  b.Warning({"f", 1, 2}, "bad");
  a.AppendUnique(b);
  ASSERT_EQ(a.all().size(), 3u);
  EXPECT_EQ(a.all()[1].pos.column, 3);
  EXPECT_EQ(a.all()[2].severity, Severity::kWarning);
}

TEST(DiagnosticTest, AppendUniqueOnManyDiagnostics) {
  Diagnostics a;
  Diagnostics b;
  for (int i = 0; i < 20000; ++i) {
    a.Error({"f", i, 1}, "bad");
    b.Error({"f", i, 1}, "bad");
    b.Error({"f", i, 1}, i % 2 == 0 ? "bad" : "other");
  }
  a.AppendUnique(b);
  EXPECT_EQ(a.all().size(), 30000u);
  EXPECT_EQ(a.all()[20000].message, "other");
  EXPECT_EQ(a.all()[20000].pos.line, 1);
}

// Long source lines are shown as a window around the caret, cut at character boundaries.
TEST(DiagnosticTest, LongLinesAreShortenedAroundTheCaret) {
  const std::string line = "network." + std::string(1000000, 'a') + " = 1";
  Diagnostic at_start{Severity::kError, {"f", 2, 1}, "m", line, {}};
  EXPECT_EQ(at_start.Render(), "f:2:1: error: m\n 2 | " + line.substr(0, 120) + "...\n   | ^\n");
  Diagnostic in_middle{Severity::kError, {"f", 2, 500001}, "m", line, {}};
  EXPECT_EQ(in_middle.Render(),
            "f:2:500001: error: m\n 2 | ..." + std::string(120, 'a') + "...\n   | " + std::string(63, ' ') + "^\n");
  Diagnostic at_end{Severity::kError, {"f", 2, static_cast<int>(line.size())}, "m", line, {}};
  EXPECT_EQ(at_end.Render(), "f:2:" + std::to_string(line.size()) + ": error: m\n 2 | ..." +
                                 line.substr(line.size() - 120) + "\n   | " + std::string(3 + 119, ' ') + "^\n");
  // Two-byte characters: the window never splits one.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "\xC3\xA9";
  Diagnostic utf8{Severity::kError, {"f", 1, 202}, "m", wide, {}};  // A window from byte 141 to 261.
  const std::string shown = utf8.Render();
  const std::string body = shown.substr(shown.find("| ") + 2, shown.find('\n', shown.find("| ")) - shown.find("| ") - 2);
  EXPECT_EQ(body, "..." + wide.substr(142, 118) + "...");
}

// After 50 errors only their number is given.
TEST(DiagnosticTest, ConfigErrorShowsTheFirstFiftyErrors) {
  Diagnostics diags;
  for (int i = 1; i <= 120; ++i) diags.Error({"f", i, 1}, "bad " + std::to_string(i));
  diags.Warning({"f", 121, 1}, "late");
  try {
    diags.ThrowIfErrors();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("f:50:1: error: bad 50\n"), std::string::npos);
    EXPECT_EQ(what.find("bad 51"), std::string::npos);
    EXPECT_EQ(what.find("late"), std::string::npos);
    EXPECT_NE(what.find("and 70 more errors and 1 more warning\n120 errors in configuration; nothing was run."),
              std::string::npos)
        << what.substr(what.size() - 200);
    EXPECT_EQ(e.diagnostics().size(), 121u);
  }
}

// Warnings too: past the 50th only their number is given (a key set 100,000 times made a message
// of 100,000 warnings before the first error).
TEST(DiagnosticTest, ConfigErrorShowsTheFirstFiftyWarnings) {
  Diagnostics diags;
  for (int i = 1; i <= 80; ++i) diags.Warning({"f", i, 1}, "twice " + std::to_string(i));
  diags.Error({"f", 81, 1}, "bad");
  try {
    diags.ThrowIfErrors();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("f:50:1: warning: twice 50\n"), std::string::npos);
    EXPECT_EQ(what.find("twice 51"), std::string::npos);
    EXPECT_NE(what.find("f:81:1: error: bad\n"), std::string::npos);
    EXPECT_NE(what.find("and 30 more warnings\n1 error in configuration; nothing was run."), std::string::npos)
        << what.substr(what.size() - 200);
    EXPECT_EQ(e.diagnostics().size(), 81u);
  }
}

// Past the diagnostics a ConfigError shows, what is added keeps its position and message but not
// its source line; NextShown says when that point is reached, per kind.
TEST(DiagnosticTest, PastTheShownOnesNoSourceLineIsKept) {
  Diagnostics diags;
  for (int i = 1; i <= 49; ++i) diags.Warning({"f", i, 1}, "w", "warned line");
  EXPECT_TRUE(diags.NextShown(Severity::kWarning));
  diags.Warning({"f", 50, 1}, "w", "warned line");
  EXPECT_FALSE(diags.NextShown(Severity::kWarning));
  EXPECT_TRUE(diags.NextShown(Severity::kError));
  diags.Warning({"f", 51, 1}, "w", "warned line");
  for (int i = 1; i <= 60; ++i) {
    EXPECT_EQ(diags.NextShown(), i <= 50) << i;
    diags.Error({"f", 100 + i, 1}, "e", "bad line");
  }
  EXPECT_EQ(diags.error_count(), 60u);
  EXPECT_EQ(diags.all().size(), 111u);
  EXPECT_EQ(diags.all()[49].source_line, "warned line");
  EXPECT_EQ(diags.all()[50].source_line, "");
  EXPECT_EQ(diags.all()[51 + 49].source_line, "bad line");
  EXPECT_EQ(diags.all()[51 + 50].source_line, "");
  EXPECT_EQ(diags.all()[51 + 50].message, "e");
  EXPECT_EQ(diags.all()[51 + 50].pos.line, 151);

  // Counts follow appending.
  Diagnostics more;
  more.Error({"g", 1, 1}, "x");
  more.Warning({"g", 2, 1}, "y");
  Diagnostics all;
  all.Append(more);
  all.AppendUnique(more);  // nothing new
  all.AppendUnique(diags);
  EXPECT_EQ(all.error_count(), 61u);
  EXPECT_EQ(all.all().size(), 113u);
  EXPECT_FALSE(all.NextShown());
}

TEST(DiagnosticTest, RenderWarningsShowsFiftyAndCountsTheRest) {
  Diagnostics diags;
  diags.Error({"f", 1, 1}, "not a warning");
  for (int i = 1; i <= 53; ++i) diags.Warning({"f", i + 1, 1}, "twice " + std::to_string(i));
  const std::string text = diags.RenderWarnings();
  EXPECT_EQ(text.find("not a warning"), std::string::npos);
  EXPECT_NE(text.find("f:51:1: warning: twice 50\n"), std::string::npos);
  EXPECT_EQ(text.find("twice 51"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 20), "and 3 more warnings\n") << text;
  Diagnostics few;
  few.Warning({"f", 1, 1}, "one");
  EXPECT_EQ(few.RenderWarnings(), "f:1:1: warning: one\n");
}

// The rvalue form hands the diagnostics to the ConfigError without a copy.
TEST(DiagnosticTest, ThrowIfErrorsOfAnRvalueMovesTheDiagnostics) {
  Diagnostics diags;
  diags.Warning({"f", 1, 1}, "w");
  std::move(diags).ThrowIfErrors();  // no error: nothing thrown
  diags.Error({"f", 2, 3}, "bad", "line two");
  try {
    std::move(diags).ThrowIfErrors();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u);
    EXPECT_EQ(e.diagnostics()[1].source_line, "line two");
    EXPECT_NE(std::string(e.what()).find("f:2:3: error: bad\n"), std::string::npos) << e.what();
  }
}

TEST(DiagnosticTest, LineOf) {
  const std::string text = "a\nbb\r\n\nccc";
  EXPECT_EQ(LineOf(text, 1), "a");
  EXPECT_EQ(LineOf(text, 2), "bb");
  EXPECT_EQ(LineOf(text, 3), "");
  EXPECT_EQ(LineOf(text, 4), "ccc");
  EXPECT_EQ(LineOf(text, 5), "");
}

TEST(ErrorTest, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(DataError("x")), kExitDataError);
  EXPECT_EQ(ExitCodeFor(DbError("x")), kExitDbError);
  EXPECT_EQ(ExitCodeFor(StageError("x")), kExitStageError);
  EXPECT_EQ(ExitCodeFor(std::runtime_error("x")), kExitFailure);
}

}  // namespace
}  // namespace asv
