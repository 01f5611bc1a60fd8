#include "parser/resolve.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

// The definition of inheritance, followed literally: a config is its parents' configs applied
// rightmost first (each resolved again wherever it is reached), then its own lines; the chain
// keeps each name at its last application. Exponential on lattices: for small files only.
ResolvedConfig Layered(const RunConfigsFile& file, const std::string& name) {
  const auto block = std::find_if(file.blocks.begin(), file.blocks.end(), [&](const Block& b) { return b.name == name; });
  ResolvedConfig config;
  config.name = name;
  for (std::size_t j = block->parents.size(); j-- > 0;) {
    const ResolvedConfig parent = Layered(file, block->parents[j]);
    for (const auto& n : parent.chain) {
      config.chain.erase(std::remove(config.chain.begin(), config.chain.end(), n), config.chain.end());
      config.chain.push_back(n);
    }
    for (const auto& key : parent.keys) config.Set(key, parent.values.at(key));
  }
  for (const auto& a : block->assignments) {
    config.Set(a.key, ResolvedValue{a.value, a.annotation, Provenance{Provenance::Source::kRunConfig, name, a.pos},
                                    a.source_line});
  }
  config.chain.push_back(name);
  return config;
}

// Random inheritance lattices (parents in any order and file position, shared ancestors, keys
// set in several places and twice in one block): the resolver gives exactly the definition.
TEST(ResolverTest, AgreesWithTheDefinitionOnRandomLattices) {
  std::mt19937 random(7);
  const auto below = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = 1 + below(9);
    std::vector<std::string> blocks;
    for (std::size_t b = 0; b < n; ++b) {
      std::string text = "c" + std::to_string(b);
      std::vector<std::size_t> parents;
      for (std::size_t k = b == 0 ? 0 : below(4); k > 0; --k) {
        const std::size_t p = below(b);
        if (std::find(parents.begin(), parents.end(), p) == parents.end()) parents.push_back(p);
      }
      for (const std::size_t p : parents) text += " < c" + std::to_string(p);
      text += "\n";
      for (std::size_t k = below(4); k > 0; --k) {
        text += fmt::format("x.{} = {}\n", "abcd"[below(4)], below(1000));
      }
      blocks.push_back(text);
    }
    std::shuffle(blocks.begin(), blocks.end(), random);
    std::string text;
    for (const auto& b : blocks) text += b + "\n";
    Diagnostics parse_diags;
    const RunConfigsFile file = ParseRunConfigs(text, "run_configs", parse_diags);
    ASSERT_FALSE(parse_diags.has_errors()) << parse_diags.Render();
    Resolver resolver(file);
    for (std::size_t b = n; b-- > 0;) {
      const std::string name = "c" + std::to_string(b);
      Diagnostics diags;
      const ResolvedConfig* got = resolver.Resolve(name, diags);
      ASSERT_NE(got, nullptr) << diags.Render();
      const ResolvedConfig want = Layered(file, name);
      EXPECT_EQ(got->chain, want.chain) << text << name;
      EXPECT_EQ(got->keys, want.keys) << text << name;
      EXPECT_EQ(Dump(*got), Dump(want)) << text << name;
    }
  }
}

std::string Chain(std::size_t depth) {
  std::string text = "c0\nx.v0 = 0\n\n";
  for (std::size_t i = 1; i < depth; ++i) text += fmt::format("c{} < c{}\nx.v{} = {}\n\n", i, i - 1, i % 7, i);
  return text;
}

// Nothing recurses along the inheritance: chains far deeper than the stack allows resolve (and
// in time linear in the chain: quadratic work would take minutes here).
TEST(ResolverTest, DeepChainsResolve) {
  const std::size_t depth = 100000;
  const auto file = Parse(Chain(depth));
  Diagnostics diags;
  CheckRunConfigs(file, diags);
  EXPECT_TRUE(diags.empty()) << diags.Render().substr(0, 1000);
  Resolver resolver(file);
  const ResolvedConfig* top = resolver.Resolve("c99999", diags);
  ASSERT_NE(top, nullptr) << diags.Render().substr(0, 1000);
  ASSERT_EQ(top->chain.size(), depth);
  EXPECT_EQ(top->chain.front(), "c0");
  EXPECT_EQ(top->chain[depth / 2], "c50000");
  EXPECT_EQ(top->keys, (std::vector<std::string>{"x.v0", "x.v1", "x.v2", "x.v3", "x.v4", "x.v5", "x.v6"}));
  for (std::size_t k = 0; k < 7; ++k) {
    const std::size_t last = (depth - 1) - ((depth - 1) % 7 + 7 - k) % 7;  // Largest i < depth with i % 7 == k.
    EXPECT_EQ(top->Find(fmt::format("x.v{}", k))->value, Value::Int(static_cast<std::int64_t>(last))) << k;
  }
  EXPECT_EQ(resolver.Resolve("c1", diags)->chain, (std::vector<std::string>{"c0", "c1"}));

  // The same chain closed into a cycle: one error naming it whole, found by both.
  std::string cyclic = Chain(depth);
  cyclic.replace(0, 2, "c0 < c99999");
  const auto cycle = Parse(cyclic);
  Diagnostics cycle_diags;
  CheckRunConfigs(cycle, cycle_diags);
  ASSERT_EQ(cycle_diags.error_count(), 1u);
  EXPECT_EQ(cycle_diags.all()[0].message.rfind("inheritance cycle: c0 < c99999 < c99998 < ", 0), 0u);
  EXPECT_EQ(cycle_diags.all()[0].message,
            "inheritance cycle: c0 < c99999 < c99998 < c99997 < c99996 < c99995 < c99994 < c99993 < c99992 < c99991 < "
            "... (99980 more) < c10 < c9 < c8 < c7 < c6 < c5 < c4 < c3 < c2 < c1 < c0");
  Diagnostics resolve_diags;
  EXPECT_EQ(Resolver(cycle).Resolve("c5", resolve_diags), nullptr);
  ASSERT_EQ(resolve_diags.error_count(), 1u);
  EXPECT_EQ(resolve_diags.all()[0].message.rfind("inheritance cycle: c5 < c4 < c3 < c2 < c1 < c0 < c99999 < ", 0), 0u);
}

// Every config of a long chain closing its own cycle back to the first: one error each, each
// message of bounded length (whole, they would hold the square of the chain).
TEST(ResolverTest, ManyLongCyclesAreNamedShortly) {
  std::string text;
  const int depth = 20000;
  for (int i = 0; i < depth; ++i) text += fmt::format("c{} < c{} < c0\n\n", i, i + 1);
  text += fmt::format("c{}\n", depth);
  Diagnostics diags;
  CheckRunConfigs(Parse(text), diags);
  ASSERT_EQ(diags.error_count(), static_cast<std::size_t>(depth));
  std::size_t longest = 0;
  for (const auto& d : diags.all()) longest = std::max(longest, d.message.size());
  EXPECT_LT(longest, 250u);
  EXPECT_EQ(diags.all()[depth - 3].message, "inheritance cycle: c0 < c1 < c2 < c0");  // Deepest first.
  EXPECT_EQ(diags.all()[depth - 1].message, "inheritance cycle: c0 < c0");
}

TEST(ResolverTest, ManyParentsAndLattices) {
  std::string wide = "x < p1";
  for (int i = 2; i <= 10000; ++i) wide += fmt::format(" < p{}", i);
  wide += "\n\n";
  for (int i = 1; i <= 10000; ++i) wide += fmt::format("p{}\nx.v = {}\n\n", i, i);
  const auto many = ResolveOk(Parse(wide), "x");
  ASSERT_EQ(many.chain.size(), 10001u);
  EXPECT_EQ(many.chain[0], "p10000");
  EXPECT_EQ(many.chain[9999], "p1");
  EXPECT_EQ(many.Find("x.v")->value, Value::Int(1));

  // 300 configs, each inheriting from both configs of the layer below: 2^150 paths to the root.
  std::string lattice = "d0_0\nx.v = 0\n\nd0_1\nx.w = 0\n\n";
  for (int l = 1; l < 150; ++l) {
    for (int k = 0; k < 2; ++k) lattice += fmt::format("d{}_{} < d{}_0 < d{}_1\nx.l{} = {}\n\n", l, k, l - 1, l - 1, l % 5, l);
  }
  const auto top = ResolveOk(Parse(lattice), "d149_0");
  ASSERT_EQ(top.chain.size(), 299u);
  EXPECT_EQ(top.chain.back(), "d149_0");
  EXPECT_EQ(top.chain[297], "d148_0");
  EXPECT_EQ(top.chain[296], "d147_0");
  EXPECT_EQ(top.chain[0], "d148_1");
  EXPECT_EQ(top.keys.size(), 7u);
  EXPECT_EQ(top.Find("x.l4")->value, Value::Int(149));
  EXPECT_EQ(top.Find("x.l3")->value, Value::Int(148));
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
