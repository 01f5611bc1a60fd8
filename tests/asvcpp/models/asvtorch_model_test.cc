// ASVtorch's form of asvcpp's x-vector networks (asvcpp/models/asvtorch_model.h), against
// tests/asvcpp/models/golden/asvtorch_xvector_state.json: the state_dict() of ASVtorch's own
// classes (commit 9c656dd) built with each case's network.* values, written by
// tools/golden/make_asvtorch_state_golden.py with Debian's PyTorch. The export has exactly those
// keys, in that order, with those shapes and dtypes; Python's torch.load(weights_only=True) reads
// the file as an OrderedDict with the same entries and the values asvcpp wrote (a python3 with
// torch is needed for that part: Debian's python3-torch, tools/setup.sh; skipped without one).
#include "asvcpp/models/asvtorch_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/enum_names.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv::models {
namespace {

namespace stdfs = std::filesystem;

nlohmann::json Golden() {
  return nlohmann::json::parse(
      testing::Slurp(std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/models/golden/asvtorch_xvector_state.json"));
}

template <class E>
E Enum(const nlohmann::json& value) {
  const auto e = EnumFromName<E>(value.get<std::string>());
  if (!e) throw std::runtime_error("golden: unknown value " + value.dump());
  return *e;
}

// asvcpp's network of one golden case: the case's class and network.* values.
nnet::XvectorNet CaseNet(const nlohmann::json& golden, const nlohmann::json& c) {
  settings::NetworkSettings n;
  n.network_class = c["network_class"].get<std::string>();
  n.frame_layer_size = golden["network"]["frame_layer_size"].get<int>();
  n.stat_size = golden["network"]["stat_size"].get<int>();
  n.embedding_size = golden["network"]["embedding_size"].get<int>();
  n.ser = golden["network"]["ser"].get<int>();
  const auto& s = c["settings"];
  if (s.contains("pooling_layer_type")) n.pooling_layer_type = Enum<nnet::PoolingType>(s["pooling_layer_type"]);
  if (s.contains("cluster_assignment_mode")) {
    n.cluster_assignment_mode = Enum<nnet::ClusterAssignment>(s["cluster_assignment_mode"]);
  }
  if (s.contains("lde_covariance_type")) n.lde_covariance_type = Enum<nnet::LdeCovariance>(s["lde_covariance_type"]);
  if (s.contains("n_clusters")) n.n_clusters = s["n_clusters"].get<int>();
  if (s.contains("n_ghost_clusters")) n.n_ghost_clusters = s["n_ghost_clusters"].get<int>();
  torch::manual_seed(0);
  return nnet::MakeXvectorNet(n, golden["feat_dim"].get<std::int64_t>(), golden["n_speakers"].get<std::int64_t>());
}

std::string DtypeName(const at::Tensor& t) {
  return t.scalar_type() == torch::kFloat32 ? "float32" : t.scalar_type() == torch::kInt64 ? "int64" : "other";
}

TEST(AsvtorchModelTest, KeysOrderShapesAndDtypesAreAsvtorchs) {
  const auto golden = Golden();
  ASSERT_EQ(golden["asvtorch_commit"].get<std::string>().substr(0, 7), "9c656dd");
  ASSERT_EQ(golden["cases"].size(), 6u);
  for (const auto& [name, c] : golden["cases"].items()) {
    SCOPED_TRACE(name);
    const auto net = CaseNet(golden, c);
    const auto state = AsvtorchStateDict(*net, {golden["feat_dim"].get<std::int64_t>(),
                                                golden["n_speakers"].get<std::int64_t>(), 1.5f, 2});
    const auto& expected = c["state_dict"];
    ASSERT_EQ(state.size(), expected.size());
    for (std::size_t i = 0; i < state.size(); ++i) {
      EXPECT_EQ(state[i].first, expected[i][0].get<std::string>()) << "entry " << i;
      EXPECT_EQ(state[i].second.sizes().vec(), expected[i][1].get<std::vector<std::int64_t>>()) << state[i].first;
      EXPECT_EQ(DtypeName(state[i].second), expected[i][2].get<std::string>()) << state[i].first;
    }
  }
}

TEST(AsvtorchModelTest, BookkeepingValuesComeFirst) {
  const auto golden = Golden();
  const auto net = CaseNet(golden, golden["cases"]["StandardNet"]);
  const auto state = AsvtorchStateDict(*net, {30, 7, 2.25f, 3});
  ASSERT_GE(state.size(), 4u);
  EXPECT_EQ(state[0].second.item<std::int64_t>(), 30);
  EXPECT_EQ(state[1].second.item<std::int64_t>(), 7);
  EXPECT_EQ(state[2].second.item<float>(), 2.25f);
  EXPECT_EQ(state[3].second.item<std::int64_t>(), 3);
  // Then the network's own parameters and buffers, values unchanged.
  std::map<std::string, at::Tensor> own;
  for (const auto& p : net->named_parameters()) own[p.key()] = p.value().detach();
  for (const auto& b : net->named_buffers()) own[b.key()] = b.value().detach();
  ASSERT_EQ(state.size(), own.size() + 4);
  for (std::size_t i = 4; i < state.size(); ++i) {
    ASSERT_EQ(own.count(state[i].first), 1u) << state[i].first;
    EXPECT_TRUE(torch::equal(state[i].second, own.at(state[i].first))) << state[i].first;
  }
  EXPECT_THROW(AsvtorchStateDict(*net, {0, 7, 1.0f, 0}), std::invalid_argument);
}

// Runs check_asvtorch_export.py FILE by the first python3 that imports torch (PATH's, then
// Debian's); nullopt when none does.
std::optional<testing::CommandResult> ReadWithPython(const stdfs::path& file) {
  for (const std::string python : {"python3", "/usr/bin/python3"}) {
    auto r = testing::RunCommand(
        {python, std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/models/check_asvtorch_export.py", file.string()},
        file.parent_path());
    if (r.err.find("ModuleNotFoundError") == std::string::npos && r.status != 127) return r;
  }
  return std::nullopt;
}

TEST(AsvtorchModelTest, PythonTorchLoadReadsTheExport) {
  const auto golden = Golden();
  testing::ScratchDir dir("asvtorch_export");
  for (const char* name : {"StandardResSeNet", "StandardNet_netvlad"}) {
    SCOPED_TRACE(name);
    const auto net = CaseNet(golden, golden["cases"][name]);
    const AsvtorchNetState bookkeeping{30, 7, 0.75f, 1};
    const stdfs::path file = dir / (std::string(name) + ".pt");
    ExportAsvtorchModel(file, *net, bookkeeping);
    const auto r = ReadWithPython(file);
    if (!r) GTEST_SKIP() << "no python3 with torch (tools/setup.sh: python3-torch)";
    ASSERT_EQ(r->status, 0) << r->out << r->err;
    const auto read = nlohmann::json::parse(r->out);
    EXPECT_EQ(read["type"], "OrderedDict");
    const auto state = AsvtorchStateDict(*net, bookkeeping);
    const auto& entries = read["entries"];
    ASSERT_EQ(entries.size(), state.size());
    for (std::size_t i = 0; i < state.size(); ++i) {
      const auto& [key, tensor] = state[i];
      EXPECT_EQ(entries[i][0].get<std::string>(), key);
      EXPECT_EQ(entries[i][1].get<std::vector<std::int64_t>>(), tensor.sizes().vec()) << key;
      EXPECT_EQ(entries[i][2].get<std::string>(), DtypeName(tensor)) << key;
      const double sum = tensor.to(torch::kFloat64).sum().item<double>();
      EXPECT_NEAR(entries[i][3].get<double>(), sum, 1e-9 * std::max(1.0, std::abs(sum))) << key;
    }
    EXPECT_EQ(entries[2][3].get<double>(), 0.75);  // training_loss
  }
}

}  // namespace
}  // namespace asv::models
