#include "parser/resolve.h"

#include <gtest/gtest.h>

#include "parser/parse.h"

namespace asv::parser {
namespace {

RunConfigsFile Parse(const std::string& text) {
  Diagnostics diags;
  RunConfigsFile file = ParseRunConfigs(text, "run_configs", diags);
  EXPECT_FALSE(diags.has_errors()) << diags.Render();
  return file;
}

ResolvedConfig ResolveOk(const RunConfigsFile& file, const std::string& name) {
  Diagnostics diags;
  auto config = Resolve(file, name, diags);
  EXPECT_TRUE(diags.empty()) << diags.Render();
  return config ? *config : ResolvedConfig{};
}

std::string Checked(const std::string& text) {
  Diagnostics diags;
  CheckRunConfigs(Parse(text), diags);
  return diags.Render();
}

// ASVtorch (reference 1.4): for `a < b < c`, c is applied first, then b, then a's own lines.
TEST(ResolveTest, RightmostParentFirstOwnLinesLast) {
  const auto file = Parse(
      "c\nx.v = 'c'\nx.only_c = 1\nx.bc = 'c'\n\n"
      "b\nx.v = 'b'\nx.bc = 'b'\n\n"
      "a < b < c\nx.v = 'a'\n");
  const auto a = ResolveOk(file, "a");
  EXPECT_EQ(a.Find("x.v")->value, Value::String("a"));
  EXPECT_EQ(a.Find("x.bc")->value, Value::String("b"));
  EXPECT_EQ(a.Find("x.only_c")->value, Value::Int(1));
  EXPECT_EQ(a.Find("x.bc")->provenance.block, "b");
  EXPECT_EQ(a.Find("x.only_c")->provenance.block, "c");
  EXPECT_EQ(a.Find("x.v")->provenance.block, "a");
  EXPECT_EQ(a.chain, (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ(a.keys, (std::vector<std::string>{"x.v", "x.only_c", "x.bc"}));  // First-set order.
  EXPECT_EQ(a.Find("x.missing"), nullptr);
}

TEST(ResolveTest, ParentsMayFollowTheirChildren) {
  const auto file = Parse(
      "score_net < score < emb_net\n\n"
      "emb_net < emb < net\n\n"
      "score\nrecipe.start_stage = 9\n\n"
      "emb\nrecipe.start_stage = 7\nnetwork.max_batch_size_in_frames = 30000\n\n"
      "net\nrecipe.start_stage = 5\nnetwork.max_batch_size_in_frames = 15000\npaths.system_folder = 'x'\n");
  const auto emb_net = ResolveOk(file, "emb_net");
  EXPECT_EQ(emb_net.chain, (std::vector<std::string>{"net", "emb", "emb_net"}));
  EXPECT_EQ(emb_net.Find("recipe.start_stage")->value, Value::Int(7));
  EXPECT_EQ(emb_net.Find("network.max_batch_size_in_frames")->value, Value::Int(30000));
  EXPECT_EQ(emb_net.Find("paths.system_folder")->provenance.block, "net");
  const auto score_net = ResolveOk(file, "score_net");
  EXPECT_EQ(score_net.chain, (std::vector<std::string>{"net", "emb", "emb_net", "score", "score_net"}));
  EXPECT_EQ(score_net.Find("recipe.start_stage")->value, Value::Int(9));
  EXPECT_EQ(score_net.Find("network.max_batch_size_in_frames")->value, Value::Int(30000));
}

// A diamond: both parents inherit from `base`; each name appears once, at its last application.
TEST(ResolveTest, DiamondChainListsEachNameOnceAtItsLastApplication) {
  const auto file = Parse(
      "base\nx.v = 0\nx.w = 0\n\n"
      "left < base\nx.v = 1\n\n"
      "right < base\nx.w = 2\n\n"
      "d < left < right\n");
  const auto d = ResolveOk(file, "d");
  EXPECT_EQ(d.chain, (std::vector<std::string>{"right", "base", "left", "d"}));
  // left's resolved values (which include base's x.w = 0) override right's x.w = 2, as in ASVtorch.
  EXPECT_EQ(d.Find("x.v")->value, Value::Int(1));
  EXPECT_EQ(d.Find("x.w")->value, Value::Int(0));
}

TEST(ResolveTest, UnknownConfigNameSuggestsClosest) {
  const auto file = Parse("net\nx.v = 1\n\nemb_net < net\n");
  Diagnostics diags;
  EXPECT_FALSE(Resolve(file, "emb_nett", diags).has_value());
  EXPECT_EQ(diags.Render(), "error: no config named 'emb_nett' in run_configs (did you mean 'emb_net'?)\n");
  Diagnostics far;
  EXPECT_FALSE(Resolve(file, "completely_different", far).has_value());
  EXPECT_EQ(far.Render(), "error: no config named 'completely_different' in run_configs\n");
}

TEST(ResolveTest, BrokenChainsAreReportedNotThrown) {
  const auto undefined = Parse("a < nett\n\nnet\nx.v = 1\n");
  Diagnostics diags;
  EXPECT_FALSE(Resolve(undefined, "a", diags).has_value());
  EXPECT_EQ(diags.Render(),
            "run_configs:1:5: error: config 'a' inherits from 'nett', which is not defined (did you mean 'net'?)\n"
            " 1 | a < nett\n"
            "   |     ^\n");
  const auto cycle = Parse("a < b\n\nb < c\n\nc < a\n");
  Diagnostics cycle_diags;
  EXPECT_FALSE(Resolve(cycle, "b", cycle_diags).has_value());
  EXPECT_EQ(cycle_diags.error_count(), 1u);
  EXPECT_NE(cycle_diags.Render().find("inheritance cycle: b < c < a < b"), std::string::npos);
  const auto twice = Parse("a\nx.v = 1\n\nb < a\n\na\nx.v = 2\n");
  Diagnostics twice_diags;
  EXPECT_FALSE(Resolve(twice, "b", twice_diags).has_value());
  EXPECT_NE(twice_diags.Render().find("run_configs:6:1: error: config 'a' is defined twice"), std::string::npos);
}


// One Resolver over a whole file gives every config exactly what resolving it alone gives, in any
// order, and keeps broken chains broken without disturbing the others.
TEST(ResolverTest, SharedResolutionEqualsResolvingEachAlone) {
  const auto file = Parse(
      "score_net < score < emb_net\nx.s = 's'\n\n"
      "emb_net < emb < net\nx.e = 'e'\n\n"
      "score\nrecipe.start_stage = 9\n\n"
      "emb\nrecipe.start_stage = 7\nnetwork.max_batch_size_in_frames = 30000\n\n"
      "net\nrecipe.start_stage = 5\nnetwork.max_batch_size_in_frames = 15000\n\n"
      "broken < missing\n\n"
      "child_of_broken < broken\n");
  Resolver resolver(file);
  for (const char* name : {"score_net", "net", "emb_net", "score", "emb"}) {
    Diagnostics diags;
    const ResolvedConfig* shared = resolver.Resolve(name, diags);
    ASSERT_NE(shared, nullptr) << name << ": " << diags.Render();
    const ResolvedConfig alone = ResolveOk(file, name);
    EXPECT_EQ(Dump(*shared), Dump(alone)) << name;
    EXPECT_EQ(shared->chain, alone.chain) << name;
    EXPECT_EQ(shared->keys, alone.keys) << name;
    EXPECT_EQ(resolver.Resolve(name, diags), shared) << name << ": resolved once, then reused";
  }
  Diagnostics diags;
  EXPECT_EQ(resolver.Resolve("child_of_broken", diags), nullptr);
  EXPECT_NE(diags.Render().find("config 'broken' inherits from 'missing', which is not defined"), std::string::npos);
  Diagnostics again;
  EXPECT_EQ(resolver.Resolve("broken", again), nullptr);
  EXPECT_EQ(again.error_count(), 1u);
  Diagnostics unknown;
  EXPECT_EQ(resolver.Resolve("scor", unknown), nullptr);
  EXPECT_NE(unknown.Render().find("no config named 'scor' in run_configs (did you mean 'score'?)"),
            std::string::npos);
  EXPECT_EQ(resolver.names(), (std::vector<std::string>{"score_net", "emb_net", "score", "emb", "net", "broken",
                                                        "child_of_broken"}));
}
TEST(CheckRunConfigsTest, CleanFileHasNoDiagnostics) {
  EXPECT_EQ(Checked("net\nx.v = 1\n\nemb < net\n\nscore < emb < net\n"), "");
}

TEST(CheckRunConfigsTest, CycleIsReportedOncePerCycle) {
  EXPECT_EQ(Checked("a < b\n\nb < c\n\nc < a\n"),
            "run_configs:5:5: error: inheritance cycle: a < b < c < a\n"
            " 5 | c < a\n"
            "   |     ^\n");
  EXPECT_EQ(Checked("s < s\n"),
            "run_configs:1:5: error: inheritance cycle: s < s\n"
            " 1 | s < s\n"
            "   |     ^\n");
  // Two separate cycles sharing nothing: two errors.
  Diagnostics diags;
  CheckRunConfigs(Parse("a < b\n\nb < a\n\nc < d\n\nd < c\n\ne < a\n"), diags);
  EXPECT_EQ(diags.error_count(), 2u) << diags.Render();
}

TEST(CheckRunConfigsTest, DuplicateAndUndefined) {
  EXPECT_EQ(Checked("net\nx.v = 1\n\nemb < nte\n\nnet\nx.v = 2\n"),
            "run_configs:6:1: error: config 'net' is defined twice\n"
            " 6 | net\n"
            "   | ^\n"
            "run_configs:1:1: note: first defined here\n"
            " 1 | net\n"
            "   | ^\n"
            "run_configs:4:7: error: config 'emb' inherits from 'nte', which is not defined (did you mean 'net'?)\n"
            " 4 | emb < nte\n"
            "   |       ^\n");
}

// Names defined more than once are reported by name, then in file order.
TEST(CheckRunConfigsTest, DuplicatesAreReportedByName) {
  EXPECT_EQ(Checked("b\n\na\n\nb\n\na\n\nb\n"),
            "run_configs:7:1: error: config 'a' is defined twice\n"
            " 7 | a\n"
            "   | ^\n"
            "run_configs:3:1: note: first defined here\n"
            " 3 | a\n"
            "   | ^\n"
            "run_configs:5:1: error: config 'b' is defined twice\n"
            " 5 | b\n"
            "   | ^\n"
            "run_configs:1:1: note: first defined here\n"
            " 1 | b\n"
            "   | ^\n"
            "run_configs:9:1: error: config 'b' is defined twice\n"
            " 9 | b\n"
            "   | ^\n"
            "run_configs:1:1: note: first defined here\n"
            " 1 | b\n"
            "   | ^\n");
}

TEST(ProvenanceTest, ToString) {
  EXPECT_EQ(Provenance{}.ToString(), "default");
  EXPECT_EQ((Provenance{Provenance::Source::kInitConfig, "", {"init_config.py", 7, 1}}).ToString(),
            "init config init_config.py:7");
  EXPECT_EQ((Provenance{Provenance::Source::kRunConfig, "net", {"run_configs.py", 42, 1}}).ToString(),
            "run config 'net' (run_configs.py:42)");
  EXPECT_EQ((Provenance{Provenance::Source::kCommandLine, "", {}}).ToString(), "command line (--set)");
}

TEST(ResolvedConfigTest, SetKeepsFirstSetOrder) {
  ResolvedConfig c;
  c.Set("b.x", ResolvedValue{Value::Int(1), {}, {}, {}});
  c.Set("a.x", ResolvedValue{Value::Int(2), {}, {}, {}});
  c.Set("b.x", ResolvedValue{Value::Int(3), {}, {}, {}});
  EXPECT_EQ(c.keys, (std::vector<std::string>{"b.x", "a.x"}));
  EXPECT_EQ(c.Find("b.x")->value, Value::Int(3));
}

TEST(DumpTest, SortedByKeyWithAnnotationAndProvenance) {
  const auto file = Parse("net\nz.last = [1, 'a']\nnetwork.size: int = 512\na.first = None\n");
  EXPECT_EQ(Dump(ResolveOk(file, "net")),
            "a.first = None  # run config 'net' (run_configs:4)\n"
            "network.size: int = 512  # run config 'net' (run_configs:3)\n"
            "z.last = [1, 'a']  # run config 'net' (run_configs:2)\n");
}

TEST(ResolveInitTest, InitProvenance) {
  Diagnostics diags;
  const auto init = ParseInitConfig("a.b = 1\na.c = 'x'\na.b = 2\n", "init_config", diags);
  const auto config = ResolveInit(init);
  EXPECT_EQ(config.keys, (std::vector<std::string>{"a.b", "a.c"}));
  EXPECT_EQ(Dump(config),
            "a.b = 2  # init config init_config:3\n"
            "a.c = 'x'  # init config init_config:2\n");
}

}  // namespace
}  // namespace asv::parser
