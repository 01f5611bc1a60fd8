// WeSpeaker's model directories in and out of asvcpp (asvcpp/models/wespeaker_model.h), checked
// against PyTorch itself: models that asvcpp exports are read back by Python's torch.load and
// PyYAML (check_wespeaker_export.py), and models that Python's torch.save wrote
// (make_wespeaker_checkpoint.py) are imported and give the embeddings that WeSpeaker's own code
// computed for the same weights and inputs (tests/asvcpp/nnet/golden/wespeaker_models_golden.json,
// tools/golden/make_model_golden.py). The Python tests need a python3 with torch and yaml
// (Debian's python3-torch and python3-yaml, tools/setup.sh) and are skipped without one. This file
// is compiled with -ffp-contract=off (the weight generator of wespeaker_golden_util.h).
#include "asvcpp/models/wespeaker_model.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/models/torch_pickle.h"
#include "asvcpp/models/wespeaker_config.h"
#include "asvcpp/nnet/speaker_net.h"
#include "tests/asvcpp/nnet/wespeaker_golden_util.h"
#include "tests/tools/test_util.h"

namespace asv::models {
namespace {

namespace stdfs = std::filesystem;
using nnet::Golden;
using nnet::GoldenModel;

constexpr std::int64_t kClasses = 7;

// Runs the Python script `args[0]` of this folder with `args[1..]` by the first python3 that
// imports torch, numpy and yaml (PATH's python3, then Debian's); nullopt when none does.
std::optional<testing::CommandResult> RunPython(std::vector<std::string> args, const stdfs::path& cwd) {
  args[0] = std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/models/" + args[0];
  for (const std::string python : {"python3", "/usr/bin/python3"}) {
    args.insert(args.begin(), python);
    auto r = testing::RunCommand(args, cwd);
    args.erase(args.begin());
    if (r.err.find("ModuleNotFoundError") == std::string::npos && r.status != 127) return r;
  }
  return std::nullopt;
}

constexpr const char* kNoPython = "no python3 with torch, numpy and yaml (tools/setup.sh: python3-torch)";

// The MarginNet of golden model `name` with an arc_margin head of kClasses classes, filled with
// the deterministic weights (golden tensor i gets seed i, the head the next seed).
nnet::MarginNet GoldenNet(const std::string& name) {
  const auto& golden = GoldenModel(name);
  const auto embed_dim = golden["kwargs"]["embed_dim"].get<std::int64_t>();
  auto net = nnet::MakeMarginNet(name, 80, embed_dim, kClasses, nnet::MarginHeadOptions{});
  std::map<std::string, torch::Tensor> state;
  for (auto& p : net->named_parameters()) state[p.key()] = p.value();
  for (auto& b : net->named_buffers()) state[b.key()] = b.value();
  torch::NoGradGuard no_grad;
  const auto& list = golden["state_dict"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    nnet::Fill(list[i][0], state.at(list[i][0]), i, golden["gain"].get<double>());
  }
  nnet::Fill("projection.weight", state.at("projection.weight"), list.size(), golden["gain"].get<double>());
  net->eval();
  return net;
}

WespeakerConfig ConfigOf(const std::string& name) {
  WespeakerConfig c;
  c.model = name;
  c.embed_dim = GoldenModel(name)["kwargs"]["embed_dim"].get<std::int64_t>();
  c.num_class = kClasses;
  return c;
}

torch::Tensor EmbedGolden(nnet::SpeakerNet& net, std::int64_t frames) {
  torch::NoGradGuard no_grad;
  const auto x =
      nnet::MakeInput(Golden()["batch"].get<std::int64_t>(), frames, 80, Golden()["input_seed"].get<std::uint64_t>());
  return net.Embed(x);
}

TEST(WespeakerModelTest, StateDictIsInWespeakersOrder) {
  for (const char* name : {"ResNet34", "ECAPA_TDNN_GLOB_c512"}) {
    auto net = nnet::MakeMarginNet(name, 80, GoldenModel(name)["kwargs"]["embed_dim"].get<std::int64_t>(), kClasses,
                                   nnet::MarginHeadOptions{});
    const auto state = WespeakerStateDict(*net);
    const auto& golden = GoldenModel(name)["state_dict"];
    ASSERT_EQ(state.size(), golden.size() + 1) << name;
    for (std::size_t i = 0; i < golden.size(); ++i) {
      EXPECT_EQ(state[i].first, golden[i][0].get<std::string>()) << name << " tensor " << i;
      EXPECT_EQ(state[i].second.sizes().vec(), golden[i][1].get<std::vector<std::int64_t>>()) << state[i].first;
    }
    EXPECT_EQ(state.back().first, "projection.weight");
  }
}

TEST(WespeakerModelTest, PythonReadsTheExport) {
  testing::ScratchDir dir("wespeaker_export");
  std::vector<std::string> args{"check_wespeaker_export.py", std::to_string(kClasses)};
  for (const char* name : {"ResNet34", "ECAPA_TDNN_GLOB_c512"}) {
    auto net = GoldenNet(name);
    ExportWespeakerModel(dir / name, *net, ConfigOf(name));
    args.push_back((dir / name).string() + ":" + name);
  }
  const auto r = RunPython(args, dir.path());
  if (!r) GTEST_SKIP() << kNoPython;
  EXPECT_EQ(r->status, 0) << r->out << r->err;
}

TEST(WespeakerModelTest, ImportsPyTorchCheckpointsWithWespeakersEmbeddings) {
  testing::ScratchDir dir("wespeaker_import");
  // (model, written as a training checkpoint models/model_3.pt with "module." keys)
  const std::vector<std::pair<std::string, bool>> cases = {
      {"ResNet34", false}, {"ECAPA_TDNN_GLOB_c512", false}, {"ECAPA_TDNN_c512", true}};
  std::vector<std::string> args{"make_wespeaker_checkpoint.py", std::to_string(kClasses)};
  for (const auto& [name, training] : cases) {
    args.push_back((dir / name).string() + ":" + name + (training ? ":training" : ""));
  }
  const auto made = RunPython(args, dir.path());
  if (!made) GTEST_SKIP() << kNoPython;
  ASSERT_EQ(made->status, 0) << made->out << made->err;
  for (const auto& [name, training] : cases) {
    const auto model = ImportWespeakerModel(training ? dir / name / "models/model_3.pt" : dir / name);
    EXPECT_EQ(model.config.model, name);
    EXPECT_TRUE(model.has_head);
    EXPECT_EQ(model.net->info().n_speakers, kClasses);
    for (const auto& c : GoldenModel(name)["cases"]) {
      const auto e = EmbedGolden(*model.net, c["frames"].get<std::int64_t>());
      const auto shape = c["embedding_shape"].get<std::vector<std::int64_t>>();
      const auto reference = torch::tensor(c["embedding"].get<std::vector<float>>()).reshape(shape);
      ASSERT_EQ(e.sizes().vec(), shape);
      const auto cosine = torch::nn::functional::cosine_similarity(
          e, reference, torch::nn::functional::CosineSimilarityFuncOptions().dim(1));
      EXPECT_GE(cosine.min().item<double>(), 0.9999) << name << (training ? " model_3.pt" : "");
      EXPECT_LE((e - reference).abs().max().item<double>(), 1e-4) << name;
    }
  }
}

TEST(WespeakerModelTest, RoundTripGivesIdenticalEmbeddings) {
  testing::ScratchDir dir("wespeaker_round_trip");
  for (const char* name : {"ResNet34", "ECAPA_TDNN_GLOB_c512"}) {
    auto net = GoldenNet(name);
    ExportWespeakerModel(dir / name, *net, ConfigOf(name));
    const auto model = ImportWespeakerModel(dir / name);
    EXPECT_TRUE(torch::equal(EmbedGolden(*net, 157), EmbedGolden(*model.net, 157))) << name;
    const auto config = ReadWespeakerConfig(dir / name / kWespeakerConfig);
    EXPECT_EQ(config.num_class, kClasses);
    EXPECT_EQ(config.dither, 1.0);
  }
}

TEST(WespeakerModelTest, StateDictFileKeepsDtypesAndOrder) {
  testing::ScratchDir dir("torch_pickle");
  const StateDict state{{"b.weight", torch::arange(6, torch::kFloat32).reshape({2, 3})},
                        {"a.num_batches_tracked", torch::tensor(std::int64_t{5})},
                        {"c.half", torch::ones({4}, torch::kFloat16)},
                        {"d.big", torch::tensor(std::int64_t{1} << 40)}};
  SaveStateDict(dir / "s.pt", state);
  const auto back = LoadStateDict(dir / "s.pt");
  ASSERT_EQ(back.size(), state.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(back[i].first, state[i].first);
    EXPECT_EQ(back[i].second.scalar_type(), state[i].second.scalar_type()) << state[i].first;
    EXPECT_TRUE(torch::equal(back[i].second, state[i].second)) << state[i].first;
  }
  dir.Write("not_a_zip.pt", "hello");
  EXPECT_THROW(LoadStateDict(dir / "not_a_zip.pt"), DataError);
}

// Writes a model directory of ResNet34 whose config.yaml has `old` replaced by `replacement`.
stdfs::path EditedModel(const testing::ScratchDir& dir, const std::string& old, const std::string& replacement) {
  auto net = nnet::MakeMarginNet("ResNet34", 80, 256, kClasses, nnet::MarginHeadOptions{});
  const stdfs::path folder = dir / "edited";
  ExportWespeakerModel(folder, *net, ConfigOf("ResNet34"));
  std::string text = testing::Slurp(folder / kWespeakerConfig);
  const auto at = text.find(old);
  EXPECT_NE(at, std::string::npos) << old << " not in\n" << text;
  if (at != std::string::npos) text.replace(at, old.size(), replacement);
  dir.Write("edited/config.yaml", text);
  return folder;
}

std::string ImportError(const stdfs::path& path) {
  try {
    ImportWespeakerModel(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(WespeakerModelTest, ErrorsNameTheKey) {
  testing::ScratchDir dir("wespeaker_errors");
  EXPECT_NE(ImportError(EditedModel(dir, "model: ResNet34", "model: ResNet50"))
                .find("model: asvcpp has no model "
                      "'ResNet50'"),
            std::string::npos);
  EXPECT_NE(
      ImportError(EditedModel(dir, "  feat_dim: 80", "  feat_dim: 80\n  m_channels: 16")).find("model_args.m_channels"),
      std::string::npos);
  EXPECT_NE(
      ImportError(EditedModel(dir, "two_emb_layer: false", "two_emb_layer: true")).find("model_args.two_emb_layer"),
      std::string::npos);
  EXPECT_NE(ImportError(EditedModel(dir, "project_type: arc_margin", "project_type: sphereface2"))
                .find("projection_args.project_type"),
            std::string::npos);

  // A missing and an unexpected tensor, named.
  const stdfs::path folder = EditedModel(dir, "model: ResNet34", "model: ResNet34");
  auto state = LoadStateDict(folder / kWespeakerWeights);
  state.erase(state.begin() + 3);  // bn1.running_mean
  state.emplace_back("back.weight", torch::zeros({2}));
  SaveStateDict(folder / kWespeakerWeights, state);
  const std::string message = ImportError(folder);
  EXPECT_NE(message.find("1 missing key(s): bn1.running_mean"), std::string::npos) << message;
  EXPECT_NE(message.find("1 unexpected key(s): back.weight"), std::string::npos) << message;

  // Without the head: loads for extraction, has_head false.
  StateDict no_head;
  auto full = WespeakerStateDict(*nnet::MakeMarginNet("ResNet34", 80, 256, kClasses, nnet::MarginHeadOptions{}));
  for (auto& entry : full) {
    if (entry.first.rfind("projection.", 0) != 0) no_head.push_back(entry);
  }
  SaveStateDict(folder / kWespeakerWeights, no_head);
  const auto headless = ImportWespeakerModel(folder);
  EXPECT_FALSE(headless.has_head);
  ExportWespeakerModel(dir / "headless", *headless.net, headless.config, /*with_head=*/false);
  EXPECT_EQ(LoadStateDict(dir / "headless" / kWespeakerWeights).size(), no_head.size());
  // A shape that differs.
  full[0].second = torch::zeros({1});
  SaveStateDict(folder / kWespeakerWeights, full);
  EXPECT_NE(ImportError(folder).find("'conv1.weight' has shape"), std::string::npos);
}

}  // namespace
}  // namespace asv::models
