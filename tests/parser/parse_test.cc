#include "parser/parse.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "parser/resolve.h"

namespace asv::parser {
namespace {

RunConfigsFile ParseOk(const std::string& text) {
  Diagnostics diags;
  RunConfigsFile file = ParseRunConfigs(text, "run_configs", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  return file;
}

std::string Errors(const std::string& text) {
  Diagnostics diags;
  ParseRunConfigs(text, "run_configs", diags);
  EXPECT_TRUE(diags.has_errors()) << text;
  return diags.Render();
}

TEST(ParseTest, BlocksHeadersAndAssignments) {
  const auto file = ParseOk(
      "# pylint: skip-file\n"
      "\n"
      "# Trains the network\n"
      "# (default architecture)\n"
      "net\n"
      "recipe.start_stage = 5\n"
      "  network.weight_decay = 0.001  \n"
      "\n"
      "\n"
      "emb_net <emb<  net\n"
      "\n"
      "emb\n"
      "recipe.start_stage = 7\n");
  ASSERT_EQ(file.blocks.size(), 3u);
  const Block& net = file.blocks[0];
  EXPECT_EQ(net.name, "net");
  EXPECT_TRUE(net.parents.empty());
  EXPECT_EQ(net.comment, "Trains the network (default architecture)");
  EXPECT_EQ(net.pos.ToString(), "run_configs:5:1");
  EXPECT_EQ(net.source_line.str(), "net");
  ASSERT_EQ(net.assignments.size(), 2u);
  EXPECT_EQ(net.assignments[0].key, "recipe.start_stage");
  EXPECT_EQ(net.assignments[0].group(), "recipe");
  EXPECT_EQ(net.assignments[0].field(), "start_stage");
  EXPECT_EQ(net.assignments[0].value, Value::Int(5));
  EXPECT_EQ(net.assignments[0].pos.ToString(), "run_configs:6:1");
  EXPECT_EQ(net.assignments[1].pos.ToString(), "run_configs:7:3");
  EXPECT_EQ(net.assignments[1].source_line.str(), "  network.weight_decay = 0.001  ");
  EXPECT_EQ(net.assignments[1].value.pos().ToString(), "run_configs:7:26");

  const Block& emb_net = file.blocks[1];
  EXPECT_EQ(emb_net.name, "emb_net");
  EXPECT_EQ(emb_net.parents, (std::vector<std::string>{"emb", "net"}));
  ASSERT_EQ(emb_net.parent_pos.size(), 2u);
  EXPECT_EQ(emb_net.parent_pos[0].column, 10);
  EXPECT_EQ(emb_net.parent_pos[1].column, 16);
  EXPECT_TRUE(emb_net.assignments.empty());
  EXPECT_EQ(emb_net.comment, "");
}

TEST(ParseTest, CommentLinesDoNotSeparateBlocks) {
  const auto file = ParseOk(
      "net\n"
      "a.b = 1\n"
      "# still net\n"
      "   # indented comment\n"
      "a.c = 2\n");
  ASSERT_EQ(file.blocks.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments.size(), 2u);
}

TEST(ParseTest, WhitespaceOnlyLinesSeparateBlocks) {
  const auto file = ParseOk("a\nx.y = 1\n  \t \nb\nx.y = 2\n");
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_EQ(file.blocks[1].name, "b");
}

TEST(ParseTest, TrailingCommentsAndHashInStrings) {
  const auto file = ParseOk(
      "net\n"
      "recipe.selected_epoch = None  # None = select the last epoch automatically\n"
      "paths.system_folder = 'a # b'  # a real comment\n"
      "paths.other = \"c#d\"#no space\n");
  const auto& a = file.blocks[0].assignments;
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].value, Value::None());
  EXPECT_EQ(a[1].value, Value::String("a # b"));
  EXPECT_EQ(a[2].value, Value::String("c#d"));
}

TEST(ParseTest, MultiLineDictWithComments) {
  const auto file = ParseOk(
      "net\n"
      "paths.datasets = {\n"
      "    'voxceleb1': '/data/vox1',  # first\n"
      "    # a comment line inside the value\n"
      "    'voxceleb2': '/data/vox2',\n"
      "}\n"
      "network.x = [1,\n"
      "             2]  # done\n"
      "network.y = 3\n");
  const auto& a = file.blocks[0].assignments;
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].value.Repr(), "{'voxceleb1': '/data/vox1', 'voxceleb2': '/data/vox2'}");
  EXPECT_EQ(a[0].value.pos().ToString(), "run_configs:2:18");
  EXPECT_EQ(a[0].value.entries()[1].first.pos().ToString(), "run_configs:5:5");
  EXPECT_EQ(a[0].value.entries()[1].second.pos().ToString(), "run_configs:5:18");
  EXPECT_EQ(a[1].value.Repr(), "[1, 2]");
  EXPECT_EQ(a[1].value.items()[1].pos().ToString(), "run_configs:8:14");
  EXPECT_EQ(a[2].key, "network.y");
  EXPECT_EQ(a[2].pos.line, 9);
}

TEST(ParseTest, TypeAnnotations) {
  const auto file = ParseOk(
      "net\n"
      "network.frame_layer_size: int = 512\n"
      "network.a : Tuple[int, ...] = (1, 2)\n"
      "network.b:typing.Optional[List[str]]=None\n"
      "network.c: Dict[str, str] = {}\n"
      "network.d = 1\n");
  const auto& a = file.blocks[0].assignments;
  ASSERT_EQ(a.size(), 5u);
  ASSERT_TRUE(a[0].annotation.has_value());
  EXPECT_EQ(a[0].annotation->name, "int");
  EXPECT_TRUE(a[0].annotation->args.empty());
  EXPECT_EQ(a[0].annotation->pos.column, 27);
  EXPECT_EQ(a[0].value, Value::Int(512));
  EXPECT_EQ(a[1].annotation->ToString(), "Tuple[int, ...]");
  ASSERT_EQ(a[1].annotation->args.size(), 2u);
  EXPECT_EQ(a[1].annotation->args[1].name, "...");
  EXPECT_EQ(a[2].annotation->name, "Optional");
  EXPECT_EQ(a[2].annotation->ToString(), "Optional[List[str]]");
  EXPECT_EQ(a[2].annotation->args[0].args[0].name, "str");
  EXPECT_EQ(a[3].annotation->ToString(), "Dict[str, str]");
  EXPECT_FALSE(a[4].annotation.has_value());
}

TEST(ParseTest, BadTypeAnnotation) {
  EXPECT_EQ(Errors("net\nnetwork.x: List[int = 5\n"),
            "run_configs:2:21: error: expected ',' or ']' in the type\n"
            " 2 | network.x: List[int = 5\n"
            "   |                     ^\n");
  EXPECT_NE(Errors("net\nnetwork.x: 5 = 5\n").find("2:12: error: expected a type after ':'"), std::string::npos);
}

TEST(ParseTest, DottedKeysKeepTheRestAsField) {
  const auto file = ParseOk("net\na.b.c = 1\n");
  const auto& a = file.blocks[0].assignments[0];
  EXPECT_EQ(a.key, "a.b.c");
  EXPECT_EQ(a.group(), "a");
  EXPECT_EQ(a.field(), "b.c");
}

TEST(ParseTest, CrLfLineEndings) {
  const auto crlf = ParseOk("net\r\nrecipe.x = [1,\r\n  2]  # c\r\n\r\nemb < net\r\nrecipe.y = 'a'\r\n");
  ASSERT_EQ(crlf.blocks.size(), 2u);
  EXPECT_EQ(crlf.blocks[0].assignments[0].value.Repr(), "[1, 2]");
  EXPECT_EQ(crlf.blocks[0].source_line.str(), "net");
  EXPECT_EQ(crlf.blocks[1].parents, std::vector<std::string>{"net"});
  EXPECT_EQ(crlf.blocks[1].assignments[0].value, Value::String("a"));
}

TEST(ParseTest, NoNewlineAtEndOfFile) {
  const auto file = ParseOk("net\nrecipe.x = 1");
  ASSERT_EQ(file.blocks.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments[0].value, Value::Int(1));
}

TEST(ParseTest, RepeatedKeyWarnsAndLaterValueWins) {
  Diagnostics diags;
  const auto file = ParseRunConfigs("net\na.b = 1\na.c = 2\na.b = 3\n", "run_configs", diags);
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(diags.Render(),
            "run_configs:4:1: warning: 'a.b' is set twice in config 'net'; this value replaces the one on line 2\n"
            " 4 | a.b = 3\n"
            "   | ^\n"
            "run_configs:2:1: note: previous value set here\n"
            " 2 | a.b = 1\n"
            "   | ^\n");
  Diagnostics resolve_diags;
  const auto net = Resolve(file, "net", resolve_diags);
  ASSERT_TRUE(net.has_value());
  EXPECT_EQ(net->Find("a.b")->value, Value::Int(3));
  EXPECT_EQ(net->keys, (std::vector<std::string>{"a.b", "a.c"}));
}

// Past 32 keys a block's keys are hashed instead of searched; the warning must not change.
TEST(ParseTest, RepeatedKeyInALargeBlockNamesTheLatestEarlierLine) {
  std::string text = "big\n";
  for (int k = 0; k < 40; ++k) text += "g.k" + std::to_string(k) + " = " + std::to_string(k) + "\n";
  text += "g.k3 = 98\n";  // Line 42; g.k3 was first set on line 5.
  text += "g.k3 = 99\n";  // Line 43.
  Diagnostics diags;
  const auto file = ParseRunConfigs(text, "run_configs", diags);
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(diags.Render(),
            "run_configs:42:1: warning: 'g.k3' is set twice in config 'big'; this value replaces the one on line 5\n"
            " 42 | g.k3 = 98\n"
            "    | ^\n"
            "run_configs:5:1: note: previous value set here\n"
            " 5 | g.k3 = 3\n"
            "   | ^\n"
            "run_configs:43:1: warning: 'g.k3' is set twice in config 'big'; this value replaces the one on line 42\n"
            " 43 | g.k3 = 99\n"
            "    | ^\n"
            "run_configs:42:1: note: previous value set here\n"
            " 42 | g.k3 = 98\n"
            "    | ^\n");
  ASSERT_EQ(file.blocks.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments.size(), 42u);
}

// Source lines share one copy of the parsed text: they stay right after the caller's text changes
// and the file object is moved or destroyed, and diagnostics made from them show the right line.
TEST(ParseTest, SourceLinesOutliveTheTextAndTheFile) {
  std::optional<ResolvedConfig> config;
  Assignment kept;
  SourceLine header;
  {
    std::string text = "net\nnetwork.max_epochs = 3\n\nemb < net\r\n  network.max_epochs = 4  # later\n";
    Diagnostics diags;
    RunConfigsFile file = ParseRunConfigs(text, "run_configs", diags);
    text.assign(text.size(), 'x');
    ASSERT_TRUE(diags.empty()) << diags.Render();
    const RunConfigsFile moved = std::move(file);
    config = Resolve(moved, "emb", diags);
    kept = moved.blocks[1].assignments[0];
    header = moved.blocks[1].source_line;
  }
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(header.str(), "emb < net");
  EXPECT_EQ(kept.source_line.str(), "  network.max_epochs = 4  # later");
  EXPECT_EQ(kept.group(), "network");
  EXPECT_EQ(kept.field(), "max_epochs");
  const ResolvedValue* v = config->Find("network.max_epochs");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->source_line.str(), "  network.max_epochs = 4  # later");
  Diagnostics diags;
  diags.Error(v->provenance.pos, "bad value", v->source_line);
  EXPECT_EQ(diags.Render(),
            "run_configs:5:3: error: bad value\n"
            " 5 |   network.max_epochs = 4  # later\n"
            "   |   ^\n");
}

// Every position of a file names it through one interned copy of its path.
TEST(ParseTest, PositionsShareTheFileName) {
  const auto file = ParseOk("net\na.b = [1, 2]\n");
  const Assignment& a = file.blocks[0].assignments[0];
  EXPECT_EQ(a.pos.file, FileName("run_configs"));
  EXPECT_NE(a.pos.file, FileName("init_config"));
  EXPECT_EQ(&a.pos.file.str(), &a.value.items()[1].pos().file.str());
  EXPECT_EQ(&a.pos.file.str(), &file.blocks[0].pos.file.str());
  EXPECT_EQ(a.value.items()[1].pos().ToString(), "run_configs:2:11");
  EXPECT_EQ(SourcePos{}.file, FileName(""));
  EXPECT_EQ(SourcePos{}.file.str(), "");
}

TEST(ParseTest, MissingBlankLineStartsTheNextBlock) {
  Diagnostics diags;
  const auto file = ParseRunConfigs("net\na.b = 1\nnet_se < net\na.b = 2\n", "run_configs", diags);
  EXPECT_EQ(diags.Render(),
            "run_configs:3:1: error: expected an assignment 'group.field = value', found what looks like the "
            "header of config 'net_se'; is a blank line missing before it?\n"
            " 3 | net_se < net\n"
            "   | ^\n");
  // Recovery: the header still opens a block, so later references to it are not reported.
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_EQ(file.blocks[1].name, "net_se");
  EXPECT_EQ(file.blocks[1].assignments.size(), 1u);
}

TEST(ParseTest, ErrorsInDifferentStatementsAreAllReported) {
  Diagnostics diags;
  const auto file = ParseRunConfigs(
      "net\n"
      "a.b = foo\n"
      "a.c = [1,\n"
      "       2 3,\n"
      "       4]\n"
      "a.d = 'ok'\n"
      "a.e 5\n"
      "\n"
      "emb\n"
      "a.f = 1 + 1\n"
      "a.g = 2\n",
      "run_configs", diags);
  EXPECT_EQ(diags.error_count(), 4u) << diags.Render();
  ASSERT_EQ(diags.all().size(), 4u);
  EXPECT_EQ(diags.all()[0].pos.ToString(), "run_configs:2:7");
  EXPECT_EQ(diags.all()[1].pos.ToString(), "run_configs:4:10");
  EXPECT_EQ(diags.all()[2].pos.ToString(), "run_configs:7:5");
  EXPECT_EQ(diags.all()[3].pos.ToString(), "run_configs:10:9");
  // Good statements between the bad ones are kept.
  ASSERT_EQ(file.blocks.size(), 2u);
  ASSERT_EQ(file.blocks[0].assignments.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments[0].key, "a.d");
  ASSERT_EQ(file.blocks[1].assignments.size(), 1u);
  EXPECT_EQ(file.blocks[1].assignments[0].key, "a.g");
}

TEST(ParseTest, UnterminatedBracketAtBlankLineRecoversAfterIt) {
  Diagnostics diags;
  const auto file = ParseRunConfigs("net\na.b = [1,\n  2\n\nemb\na.c = 1\n", "run_configs", diags);
  EXPECT_EQ(diags.Render(),
            "run_configs:2:7: error: unterminated '[' (no closing ']' before the blank line on line 4)\n"
            " 2 | a.b = [1,\n"
            "   |       ^\n");
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_EQ(file.blocks[1].assignments.size(), 1u);
}

// Python would join the next assignment into the open list; we point at the bracket instead and
// go on with that assignment.
TEST(ParseTest, UnclosedBracketBeforeNextAssignment) {
  Diagnostics diags;
  const auto file = ParseRunConfigs("net\na.b = [1,\n  2\na.c = 3\n", "run_configs", diags);
  EXPECT_EQ(diags.Render(),
            "run_configs:2:7: error: unterminated '[' (no closing ']' before the assignment on line 4)\n"
            " 2 | a.b = [1,\n"
            "   |       ^\n");
  ASSERT_EQ(file.blocks.size(), 1u);
  ASSERT_EQ(file.blocks[0].assignments.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments[0].key, "a.c");
}

TEST(ParseTest, HeaderWithTrailingComment) {
  const auto file = ParseOk("net_se < net  # squeeze-and-excitation\na.b = 1\n\nnet\n");
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_EQ(file.blocks[0].parents, std::vector<std::string>{"net"});
}

TEST(ParseTest, LinesThatAreNeitherHeaderNorAssignment) {
  EXPECT_EQ(Errors("net\n= 5\n[1, 2]\n"),
            "run_configs:2:1: error: expected an assignment 'group.field = value'\n"
            " 2 | = 5\n"
            "   | ^\n"
            "run_configs:3:1: error: expected an assignment 'group.field = value'\n"
            " 3 | [1, 2]\n"
            "   | ^\n");
  EXPECT_NE(Errors("<net\na.b = 1\n").find("run_configs:1:1: error: expected a config header: a name"),
            std::string::npos);
}

TEST(ParseTest, NestingIsLimited) {
  const std::string deep = "net\na.b = " + std::string(300, '[') + std::string(300, ']') + "\n";
  EXPECT_NE(Errors(deep).find("run_configs:2:263: error: nesting deeper than 256 levels"), std::string::npos);
  const std::string ok = "net\na.b = " + std::string(256, '[') + std::string(256, ']') + "\n";
  EXPECT_EQ(ParseOk(ok).blocks[0].assignments.size(), 1u);

  std::string type = "int";
  for (int i = 0; i < 300; ++i) type = "List[" + type + "]";
  EXPECT_NE(Errors("net\na.b: " + type + " = 1\n").find("run_configs:2:1286: error: nesting deeper than 256 levels"),
            std::string::npos);
  type = "int";
  for (int i = 0; i < 255; ++i) type = "List[" + type + "]";
  EXPECT_TRUE(ParseOk("net\na.b: " + type + " = []\n").blocks[0].assignments[0].annotation.has_value());
}

// After an error, the rest of the statement is skipped: brackets balanced (a bracket inside a
// string or a comment does not count), over line breaks while one is open, never past a blank line.
TEST(ParseTest, RecoverySkipsTheWholeBadStatement) {
  Diagnostics diags;
  auto file = ParseRunConfigs("net\na.b = [1 2,\n  'x]', # ]\n  a.c = 2\n\nnext\nc.d = [1,\n  2 3,\n  'x]'\n\nc.e = 1\n",
                              "run_configs", diags);
  EXPECT_EQ(diags.error_count(), 3u) << diags.Render();  // 1 2, 2 3, and c.e outside any config
  ASSERT_EQ(file.blocks.size(), 2u);
  EXPECT_TRUE(file.blocks[0].assignments.empty());
  EXPECT_TRUE(file.blocks[1].assignments.empty());
  Diagnostics closed_diags;
  file = ParseRunConfigs("net\na.b = [1 2, (3, '('), {4: [5]}] # [\na.c = 2\n", "run_configs", closed_diags);
  EXPECT_EQ(closed_diags.error_count(), 1u) << closed_diags.Render();
  ASSERT_EQ(file.blocks[0].assignments.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments[0].key, "a.c");
}

// Nesting far past the limit (each level once recursed in the grammar or in the recovery after
// an error) is one error at the limit, and parsing goes on after the statement.
TEST(ParseTest, HostileNestingIsAnErrorNotACrash) {
  const std::size_t n = 100000;
  for (const char* open : {"[", "(", "{", "{1: ", "[1, ", "([{"}) {
    std::string value;
    for (std::size_t i = 0; i < n; ++i) value += open;
    const std::string text = "net\na.b = " + value + "\na.c = 1\n\nnext\na.d = 2\n";
    Diagnostics diags;
    const auto file = ParseRunConfigs(text, "run_configs", diags);
    EXPECT_EQ(diags.error_count(), 1u) << open;
    EXPECT_NE(diags.Render().find("nesting deeper than 256 levels"), std::string::npos) << open;
    ASSERT_EQ(file.blocks.size(), 2u) << open;
    EXPECT_EQ(file.blocks[1].assignments.size(), 1u) << open;
  }
  // Closed, over several lines, with strings and comments in between.
  std::string value;
  for (std::size_t i = 0; i < n; ++i) value += i % 1000 == 0 ? "[ # ]\n'[' ," : "[";
  for (std::size_t i = 0; i < n; ++i) value += "]";
  Diagnostics diags;
  const auto file = ParseRunConfigs("net\na.b = " + value + "\na.c = 1\n", "run_configs", diags);
  EXPECT_EQ(diags.error_count(), 1u) << diags.Render().substr(0, 2000);
  ASSERT_EQ(file.blocks.size(), 1u);
  ASSERT_EQ(file.blocks[0].assignments.size(), 1u);
  EXPECT_EQ(file.blocks[0].assignments[0].key, "a.c");

  std::string type;
  for (std::size_t i = 0; i < n; ++i) type += "List[";
  Diagnostics type_diags;
  ParseInitConfig("a.b: " + type + "int" + std::string(n, ']') + " = 1\n", "init_config", type_diags);
  EXPECT_EQ(type_diags.error_count(), 1u);
  EXPECT_NE(type_diags.Render().find("init_config:1:1286: error: nesting deeper than 256 levels"), std::string::npos);

  Diagnostics literal_diags;
  EXPECT_FALSE(ParseLiteral(std::string(n, '(') + std::string(n, ')'), "--set a.b", literal_diags).has_value());
  EXPECT_NE(literal_diags.Render().find("nesting deeper than 256 levels"), std::string::npos);
}

// Past the errors a ConfigError shows, a statement's error is recorded without its message or
// source line (the grammar reports errors without exceptions; the message is built only when it
// will be shown) but at the same position, and parsing goes on from the same place: every kind
// of bad statement, read once with nothing reported before it and once after 50 other errors.
TEST(ParseTest, ErrorsPastTheShownOnesKeepTheirPositionsAndRecovery) {
  const std::string text =
      "net\n"
      "a.b = foo\n"                      // a name where a value belongs
      "a.c = = 1\n"                      // no value
      "a.d = [1,\n  2\na.e = 3\n"        // bracket never closed: goes on at a.e
      "a.f = 'open\n"                    // unterminated string
      "a.g = (1 2)\n"                    // missing comma
      "a.h = 1 + 1\n"                    // an expression
      "a.i = 99999999999999999999\n"     // an int that does not fit (the action's error)
      "a.j = '\\N{DASH}'\n"              // an escape that is not supported (the action's error)
      "a.k = {[1]: 2}\n"                 // an unhashable dict key (the action's error)
      "a.l = " + std::string(300, '[') + std::string(300, ']') + "\n"  // nesting too deep
      "a.m: List[] = 1\n"                // a bad type
      "a.n = [1,\n\n"                     // bracket open at a blank line
      "next < net\n"
      "a.o = 4\n"
      "a..p = 5\n"                       // a bad key
      "a.q = 6\n";
  Diagnostics shown;
  const auto file = ParseRunConfigs(text, "run_configs", shown);
  Diagnostics hidden;
  for (int i = 0; i < 50; ++i) hidden.Error({"before", i + 1, 1}, "earlier error");
  const auto file_hidden = ParseRunConfigs(text, "run_configs", hidden);

  ASSERT_EQ(shown.error_count(), 13u) << shown.Render();
  ASSERT_EQ(hidden.error_count(), 63u) << hidden.Render().substr(0, 3000);
  for (std::size_t i = 0; i < 13; ++i) {
    const Diagnostic& full = shown.all()[i];
    const Diagnostic& brief = hidden.all()[50 + i];
    EXPECT_EQ(brief.pos.ToString(), full.pos.ToString()) << full.message;
    EXPECT_FALSE(full.source_line.empty()) << full.message;
    EXPECT_TRUE(brief.source_line.empty()) << full.message;
    EXPECT_NE(brief.message, full.message);
  }
  EXPECT_NE(shown.Render().find("run_configs:2:7: error: expected a literal value, found the name 'foo'"),
            std::string::npos);
  const auto keys = [](const RunConfigsFile& f) {
    std::vector<std::string> out;
    for (const auto& block : f.blocks) {
      for (const auto& a : block.assignments) out.push_back(block.name + ":" + a.key);
    }
    return out;
  };
  EXPECT_EQ(keys(file), (std::vector<std::string>{"net:a.e", "next:a.o", "next:a.q"}));
  EXPECT_EQ(keys(file_hidden), keys(file));
}

TEST(ParseTest, EmptyAndCommentOnlyFiles) {
  EXPECT_EQ(Errors(""), "run_configs: error: file is empty\n");
  EXPECT_EQ(Errors(" \n\t\r\n"), "run_configs: error: file is empty\n");
  EXPECT_EQ(Errors("# nothing\n\n  # here\n"), "run_configs: error: file defines no configs\n");
}

TEST(ParseTest, InvalidUtf8StopsParsing) {
  EXPECT_EQ(Errors("net\na.b = 'caf\xE9'\na.c = foo\n"),
            "run_configs:2:11: error: invalid UTF-8 byte 0xE9; config files must be UTF-8 text\n"
            " 2 | a.b = 'caf?'\n"
            "   |           ^\n");
}

TEST(ParseTest, ByteOrderMarkIsSkipped) {
  const auto file = ParseOk("\xEF\xBB\xBFnet\na.b = 1\n");
  ASSERT_EQ(file.blocks.size(), 1u);
  EXPECT_EQ(file.blocks[0].name, "net");
}

TEST(ParseTest, ParseFileReportsMissingFile) {
  Diagnostics diags;
  const auto file = ParseRunConfigsFile("/nonexistent/run_configs.py", diags);
  EXPECT_TRUE(file.blocks.empty());
  EXPECT_EQ(diags.Render(), "/nonexistent/run_configs.py: error: cannot read run-configs file: file does not exist\n");
  Diagnostics init_diags;
  ParseInitConfigFile("/nonexistent/init_config.py", init_diags);
  EXPECT_EQ(init_diags.Render(),
            "/nonexistent/init_config.py: error: cannot read init config file: file does not exist\n");
}

TEST(ParseInitTest, AssignmentsOnly) {
  Diagnostics diags;
  const auto init = ParseInitConfig(
      "# pylint: skip-file\n"
      "\n"
      "computing.gpu_ids = (0,)\n"
      "\n"
      "paths.datasets = { 'voxceleb1': '/a',\n"
      "                   'voxceleb2': '/b'}\n"
      "features.vad_mismatch_tolerance = 0 # comment\n",
      "init_config", diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  ASSERT_EQ(init.assignments.size(), 3u);
  EXPECT_EQ(init.assignments[0].value.Repr(), "(0,)");
  EXPECT_EQ(init.assignments[1].value.Repr(), "{'voxceleb1': '/a', 'voxceleb2': '/b'}");
  EXPECT_EQ(init.assignments[2].pos.ToString(), "init_config:7:1");
}

TEST(ParseInitTest, HeaderIsAnError) {
  Diagnostics diags;
  const auto init = ParseInitConfig("a.b = 1\n  net < base\na.c = 2\n", "init_config", diags);
  EXPECT_EQ(diags.Render(),
            "init_config:2:3: error: expected an assignment 'group.field = value', found what looks like the "
            "header of config 'net'; an init config holds assignments only\n"
            " 2 |   net < base\n"
            "   |   ^\n");
  EXPECT_EQ(init.assignments.size(), 2u);
}

// An init config may be empty (every setting keeps its default, as in ASVtorch); a run-configs
// file may not (there would be no config to run).
TEST(ParseInitTest, EmptyOrCommentOnlyInitConfigIsFine) {
  for (const char* text : {"# all defaults\n", "", "\n", "\n\n", " \t\r\n", "\xEF\xBB\xBF\n", "\n# x\n\n"}) {
    Diagnostics diags;
    const auto init = ParseInitConfig(text, "init_config", diags);
    EXPECT_TRUE(diags.empty()) << diags.Render();
    EXPECT_TRUE(init.assignments.empty());
  }
  Diagnostics diags;
  ParseRunConfigs("\n", "run_configs", diags);
  EXPECT_EQ(diags.Render(), "run_configs: error: file is empty\n");
}

// ---- ParseRunConfigsFor: only the chains of the configs asked for ------------------------------

// A file whose configs `score < emb < net` (parents before and after their children, comments,
// a header with a trailing comment, a multi-line value) lie among configs with errors.
constexpr const char* kChainsAmongBrokenConfigs =
    "# The scoring config\n"
    "score < emb  # scores with PLDA\n"
    "backend.plda_dim = 200\n"
    "\n"
    "broken\n"
    "network.max_epochs = [1,\n"
    "\n"
    "net\n"
    "network.frame_layer_size = 512\n"
    "recipe.training_datasets = [\n"
    "    'voxceleb2_cat',\n"
    "    None\n"
    "]\n"
    "\n"
    "  network.x = 1\n"
    "\n"
    "emb < net\n"
    "# extraction\n"
    "recipe.start_stage = 7\r\n"
    "\n"
    "cyclic < cyclic\n";

// Name, parents, position, comment and every assignment (key, value, position, line) alike.
void ExpectSameBlock(const Block& a, const Block& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.parents, b.parents);
  EXPECT_EQ(a.pos.ToString(), b.pos.ToString());
  EXPECT_EQ(a.comment, b.comment);
  EXPECT_EQ(a.source_line.str(), b.source_line.str());
  ASSERT_EQ(a.assignments.size(), b.assignments.size()) << a.name;
  for (std::size_t k = 0; k < a.assignments.size(); ++k) {
    EXPECT_EQ(a.assignments[k].key, b.assignments[k].key);
    EXPECT_EQ(a.assignments[k].value, b.assignments[k].value);
    EXPECT_EQ(a.assignments[k].value.pos().ToString(), b.assignments[k].value.pos().ToString());
    EXPECT_EQ(a.assignments[k].pos.ToString(), b.assignments[k].pos.ToString());
    EXPECT_EQ(a.assignments[k].source_line.str(), b.assignments[k].source_line.str());
  }
}

TEST(ParseForTest, ReadsTheChainOnlyAndSkipsProblemsElsewhere) {
  Diagnostics all;
  const auto whole = ParseRunConfigs(kChainsAmongBrokenConfigs, "run_configs", all);
  ASSERT_TRUE(all.has_errors());  // broken, the headerless line and the cycle
  ASSERT_EQ(whole.blocks.size(), 5u);

  Diagnostics diags;
  const auto file = ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", {"score"}, diags);
  CheckRunConfigs(file, diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  ASSERT_EQ(file.blocks.size(), 3u);  // In file order, as ParseRunConfigs reads them.
  ExpectSameBlock(file.blocks[0], whole.blocks[0]);  // score
  ExpectSameBlock(file.blocks[1], whole.blocks[2]);  // net
  ExpectSameBlock(file.blocks[2], whole.blocks[3]);  // emb
  EXPECT_EQ(file.blocks[1].assignments[1].value.Repr(), "['voxceleb2_cat', None]");
  EXPECT_EQ(file.blocks[2].assignments[0].source_line.str(), "recipe.start_stage = 7");

  const auto config = Resolve(file, "score", diags);
  ASSERT_TRUE(config.has_value()) << diags.Render();
  EXPECT_EQ(config->chain, (std::vector<std::string>{"net", "emb", "score"}));
  EXPECT_EQ(Dump(*config), Dump(*Resolve(whole, "score", all)));

  // A config of the chain: only its own chain.
  const auto net = ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", {"net"}, diags);
  ASSERT_EQ(net.blocks.size(), 1u);
  EXPECT_EQ(net.blocks[0].name, "net");
  // No names: nothing read, nothing reported.
  EXPECT_TRUE(ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", {}, diags).blocks.empty());
  EXPECT_TRUE(diags.empty()) << diags.Render();
}

TEST(ParseForTest, ProblemsInTheChainAreReportedAsByTheWholeParse) {
  // The asked-for config's own block has an error, and a cycle closes through it.
  Diagnostics diags;
  const auto broken = ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", {"broken"}, diags);
  ASSERT_EQ(broken.blocks.size(), 1u);
  EXPECT_NE(diags.Render().find("run_configs:6:"), std::string::npos) << diags.Render();
  EXPECT_EQ(diags.error_count(), 1u) << diags.Render();

  Diagnostics cycle;
  const auto cyclic = ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", {"cyclic"}, cycle);
  CheckRunConfigs(cyclic, cycle);
  EXPECT_EQ(cycle.Render(), "run_configs:21:10: error: inheritance cycle: cyclic < cyclic\n"
                            " 21 | cyclic < cyclic\n"
                            "    |          ^\n");

  // Both definitions of a config defined twice are read, so the duplicate is reported.
  Diagnostics twice;
  const auto dup =
      ParseRunConfigsFor("net\na.b = 1\n\nother\na.b = 1\n\nnet\na.b = 2\n", "run_configs", {"net"}, twice);
  CheckRunConfigs(dup, twice);
  ASSERT_EQ(dup.blocks.size(), 2u);
  EXPECT_NE(twice.Render().find("run_configs:7:1: error: config 'net' is defined twice"), std::string::npos)
      << twice.Render();

  // A header where an assignment was expected (blank line missing) still starts the config,
  // with the same error as in the whole parse.
  const std::string merged = "net\nrecipe.start_stage = 5\nemb < net\nrecipe.start_stage = 7\n\nx\n!\n";
  Diagnostics merged_diags;
  const auto emb = ParseRunConfigsFor(merged, "run_configs", {"emb"}, merged_diags);
  ASSERT_EQ(emb.blocks.size(), 2u);
  EXPECT_EQ(emb.blocks[1].name, "emb");
  Diagnostics whole_diags;
  ParseRunConfigs(merged, "run_configs", whole_diags);
  EXPECT_NE(merged_diags.Render().find("is a blank line missing before it?"), std::string::npos);
  EXPECT_NE(whole_diags.Render(), merged_diags.Render());  // the whole parse also reports line 7
  EXPECT_EQ(whole_diags.Render().find(merged_diags.Render()), 0u) << whole_diags.Render();
}

TEST(ParseForTest, NameDefinedNowhereParsesTheWholeFile) {
  // An unknown config or an undefined parent: the whole file is read, so the error can suggest
  // any config, and every problem of the file is reported as ParseRunConfigs does.
  Diagnostics whole;
  const auto all = ParseRunConfigs(kChainsAmongBrokenConfigs, "run_configs", whole);
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"scroe"}, std::vector<std::string>{"net", "nonexistent"}}) {
    Diagnostics diags;
    const auto file = ParseRunConfigsFor(kChainsAmongBrokenConfigs, "run_configs", names, diags);
    EXPECT_EQ(diags.Render(), whole.Render());
    EXPECT_EQ(file.blocks.size(), all.blocks.size());
  }
  Diagnostics diags;
  const auto file = ParseRunConfigsFor("child < bas\na.b = 1\n\nbase\na.b = 2\n", "run_configs", {"child"}, diags);
  CheckRunConfigs(file, diags);
  EXPECT_EQ(file.blocks.size(), 2u);
  EXPECT_NE(diags.Render().find("'bas', which is not defined (did you mean 'base'?)"), std::string::npos)
      << diags.Render();
}

}  // namespace
}  // namespace asv::parser
