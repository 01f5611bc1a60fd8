// Margin heads against logits computed by hand from angles (not from the cosines the heads
// compute), including WeSpeaker's fallback for theta + m > pi and easy_margin, plus gradient
// checks against finite differences.
#include "asvcpp/nnet/margin_heads.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kScale = 32.0;

std::set<std::string> StateNames(const torch::nn::Module& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters()) names.insert(p.key());
  for (const auto& b : m.named_buffers()) names.insert(b.key());
  return names;
}

// Three unit class vectors in the plane at 0°, 90° and 180° (scaled: the heads normalise), and
// embeddings at angle a (also scaled), so that theta_j = |a − angle_j| is known exactly.
const std::vector<double> kClassAngles = {0.0, kPi / 2, kPi};

torch::Tensor ClassWeights() {
  std::vector<double> w;
  for (std::size_t j = 0; j < kClassAngles.size(); ++j) {
    const double r = 1.0 + static_cast<double>(j);  // lengths 1, 2, 3: must not matter
    w.push_back(r * std::cos(kClassAngles[j]));
    w.push_back(r * std::sin(kClassAngles[j]));
  }
  return torch::tensor(w, torch::kFloat64).reshape({3, 2});
}

torch::Tensor Embeddings(const std::vector<double>& angles) {
  std::vector<double> x;
  for (double a : angles) {
    x.push_back(2.5 * std::cos(a));
    x.push_back(2.5 * std::sin(a));
  }
  return torch::tensor(x, torch::kFloat64).reshape({static_cast<std::int64_t>(angles.size()), 2});
}

template <typename Head>
std::shared_ptr<Head> MakeHead(double margin, bool easy_margin = false) {
  MarginHeadOptions o;
  o.embed_dim = 2;
  o.num_classes = 3;
  o.scale = kScale;
  o.margin = margin;
  o.easy_margin = easy_margin;
  auto head = std::make_shared<Head>(o);
  head->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  head->weight.copy_(ClassWeights());
  return head;
}

double Theta(double embedding_angle, std::size_t cls) { return std::abs(embedding_angle - kClassAngles[cls]); }

torch::Tensor Labels(const std::vector<std::int64_t>& labels) { return torch::tensor(labels, torch::kInt64); }

// Embedding angles 30°, 150° (relative to class 0), 100°; targets 0, 2, 1 -> target angles
// 30°, 30° (150° to class 2 at 180°), 10°. Row 3: 10° with target 2, theta = 170°.
const std::vector<double> kAngles = {kPi / 6, 5 * kPi / 6, 100 * kPi / 180, 10 * kPi / 180};
const std::vector<std::int64_t> kLabels = {0, 2, 1, 2};

TEST(ArcMarginHeadTest, MatchesHandComputedLogitsIncludingThetaPlusMarginAbovePi) {
  const double m = 0.2;
  auto head = MakeHead<ArcMarginHead>(m);
  const auto logits = head->forward(Embeddings(kAngles), Labels(kLabels));
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{4, 3}));
  ASSERT_EQ(logits.scalar_type(), torch::kFloat64);
  const auto a = logits.accessor<double, 2>();
  for (std::size_t i = 0; i < kAngles.size(); ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const double theta = Theta(kAngles[i], j);
      double expected = kScale * std::cos(theta);
      if (static_cast<std::int64_t>(j) == kLabels[i]) {
        // theta + m <= pi: cos(theta + m); beyond pi: WeSpeaker's cos(theta) − (1 + cos(pi − m)).
        expected = theta + m <= kPi ? kScale * std::cos(theta + m) : kScale * (std::cos(theta) - 1 - std::cos(kPi - m));
      }
      EXPECT_NEAR(a[static_cast<long>(i)][static_cast<long>(j)], expected, 1e-9) << "row " << i << " class " << j;
    }
  }
  // Row 3 is the fallback case (170° + 0.2 rad > 180°): −0.984808 − 1 + 0.980067 = −1.004741.
  EXPECT_NEAR(a[3][2], kScale * -1.00474118, 1e-6);
  // Row 0's target: cos(30° + 0.2 rad) = cos(0.72360) = 0.74943.
  EXPECT_NEAR(a[0][0], kScale * 0.74942789, 1e-6);
}

TEST(ArcMarginHeadTest, FallbackIsContinuousAtThetaEqualPiMinusMargin) {
  const double m = 0.3;
  auto head = MakeHead<ArcMarginHead>(m);
  // Target class 2 (at 180°): theta = pi − angle. Just below and above theta = pi − m.
  const double eps = 1e-7;
  const auto logits = head->forward(Embeddings({m - eps, m + eps}), Labels({2, 2}));
  const auto a = logits.accessor<double, 2>();
  EXPECT_NEAR(a[0][2], -kScale, 1e-4);  // fallback side: theta slightly above pi − m
  EXPECT_NEAR(a[1][2], -kScale, 1e-4);  // cos(theta + m) side
  EXPECT_GT(a[1][2], a[0][2]);           // decreasing in theta across the switch
}

TEST(ArcMarginHeadTest, EasyMarginAppliesOnlyWherePositiveCosine) {
  const double m = 0.2;
  auto head = MakeHead<ArcMarginHead>(m, /*easy_margin=*/true);
  // Targets: 30° (cos > 0: margin), 120° (cos < 0: plain cos), 170° (plain cos, no fallback).
  const std::vector<double> angles = {kPi / 6, 120 * kPi / 180, 10 * kPi / 180};
  const std::vector<std::int64_t> labels = {0, 0, 2};
  const auto a_logits = head->forward(Embeddings(angles), Labels(labels));
  const auto a = a_logits.accessor<double, 2>();
  EXPECT_NEAR(a[0][0], kScale * std::cos(kPi / 6 + m), 1e-9);
  EXPECT_NEAR(a[1][0], kScale * std::cos(120 * kPi / 180), 1e-9);
  EXPECT_NEAR(a[2][2], kScale * std::cos(170 * kPi / 180), 1e-9);
  EXPECT_NEAR(a[0][1], kScale * std::cos(kPi / 2 - kPi / 6), 1e-9);  // non-target untouched
}

TEST(ArcMarginHeadTest, ZeroMarginGivesScaledCosinesAndUpdateMarginTakesEffect) {
  auto head = MakeHead<ArcMarginHead>(0.0);
  const auto x = Embeddings(kAngles);
  const auto labels = Labels(kLabels);
  const auto plain = head->forward(x, labels);
  EXPECT_TRUE(torch::allclose(plain, kScale * head->Cosine(x), 0, 1e-12));
  EXPECT_EQ(head->margin(), 0.0);
  head->UpdateMargin(0.2);
  EXPECT_EQ(head->margin(), 0.2);
  const auto a_logits = head->forward(x, labels);
  const auto a = a_logits.accessor<double, 2>();
  EXPECT_NEAR(a[0][0], kScale * std::cos(kPi / 6 + 0.2), 1e-9);
  EXPECT_THROW(head->UpdateMargin(-0.1), std::invalid_argument);
  EXPECT_THROW(head->UpdateMargin(std::nan("")), std::invalid_argument);
}

TEST(AddMarginHeadTest, MatchesHandComputedLogits) {
  const double m = 0.25;
  auto head = MakeHead<AddMarginHead>(m);
  const auto a_logits = head->forward(Embeddings(kAngles), Labels(kLabels));
  const auto a = a_logits.accessor<double, 2>();
  for (std::size_t i = 0; i < kAngles.size(); ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const double c = std::cos(Theta(kAngles[i], j));
      const double expected = kScale * (static_cast<std::int64_t>(j) == kLabels[i] ? c - m : c);
      EXPECT_NEAR(a[static_cast<long>(i)][static_cast<long>(j)], expected, 1e-9) << "row " << i << " class " << j;
    }
  }
  head->UpdateMargin(0.0);
  const auto b_logits = head->forward(Embeddings(kAngles), Labels(kLabels));
  const auto b = b_logits.accessor<double, 2>();
  EXPECT_NEAR(b[0][0], kScale * std::cos(kPi / 6), 1e-9);
}

TEST(MarginHeadTest, WeightNamesShapesAndXavierRangeAsWeSpeaker) {
  MarginHeadOptions o;
  o.embed_dim = 16;
  o.num_classes = 10;
  for (auto type : {HeadType::kArcMargin, HeadType::kAddMargin}) {
    o.type = type;
    auto head = MakeMarginHead(o);
    EXPECT_EQ(StateNames(*head), (std::set<std::string>{"weight"}));
    const auto w = head->named_parameters()["weight"];
    EXPECT_EQ(w.sizes(), (std::vector<std::int64_t>{10, 16}));
    const double bound = std::sqrt(6.0 / (16 + 10));  // xavier_uniform_, gain 1
    EXPECT_LE(w.abs().max().item<double>(), bound);
    EXPECT_GT(w.abs().max().item<double>(), 0.5 * bound);
  }
  o.type = HeadType::kSoftmax;
  auto softmax = MakeMarginHead(o);
  EXPECT_EQ(StateNames(*softmax),
            (std::set<std::string>{"trans.0.weight", "trans.0.bias", "trans.0.running_mean", "trans.0.running_var",
                                   "trans.0.num_batches_tracked", "trans.2.weight", "trans.2.bias"}));
}

TEST(SoftmaxHeadTest, IsBatchNormReluLinearAndIgnoresMargins) {
  MarginHeadOptions o;
  o.type = HeadType::kSoftmax;
  o.embed_dim = 2;
  o.num_classes = 2;
  SoftmaxHead head(o);
  head.eval();  // running mean 0, variance 1: bn(x) = x / sqrt(1 + 1e-5)
  auto linear = head.trans[2]->as<torch::nn::Linear>();
  {
    torch::NoGradGuard no_grad;
    linear->weight.copy_(torch::tensor({1.f, 2.f, -1.f, 0.5f}).reshape({2, 2}));
    linear->bias.copy_(torch::tensor({0.5f, -0.25f}));
  }
  const auto x = torch::tensor({1.f, -2.f, 3.f, 4.f}).reshape({2, 2});
  const auto a_logits = head.forward(x, Labels({0, 1}));
  const auto a = a_logits.accessor<float, 2>();
  const float k = 1.f / std::sqrt(1.f + 1e-5f);
  // Row 0: relu -> (k, 0). Row 1: (3k, 4k).
  EXPECT_NEAR(a[0][0], 1 * k + 0.5f, 1e-5);
  EXPECT_NEAR(a[0][1], -1 * k - 0.25f, 1e-5);
  EXPECT_NEAR(a[1][0], 3 * k + 8 * k + 0.5f, 1e-5);
  EXPECT_NEAR(a[1][1], -3 * k + 2 * k - 0.25f, 1e-5);
  head.UpdateMargin(0.2);
  EXPECT_EQ(head.margin(), 0.0);
}

TEST(MarginHeadTest, RejectsBadShapesAndNames) {
  MarginHeadOptions o;
  o.embed_dim = 4;
  o.num_classes = 3;
  for (auto type : {HeadType::kArcMargin, HeadType::kAddMargin, HeadType::kSoftmax}) {
    o.type = type;
    auto head = MakeMarginHead(o);
    const auto x = torch::randn({2, 4});
    EXPECT_NO_THROW(head->forward(x, Labels({0, 2})));
    EXPECT_THROW(head->forward(torch::randn({2, 5}), Labels({0, 2})), std::invalid_argument);
    EXPECT_THROW(head->forward(torch::randn({2, 4, 1}), Labels({0, 2})), std::invalid_argument);
    EXPECT_THROW(head->forward(x, Labels({0, 2, 1})), std::invalid_argument);
    EXPECT_THROW(head->forward(x, torch::tensor({0, 2}, torch::kInt32)), std::invalid_argument);
  }
  o.embed_dim = 0;
  EXPECT_THROW(MakeMarginHead(o), std::invalid_argument);
  o.embed_dim = 4;
  o.type = HeadType::kArcMargin;
  o.scale = 0;
  EXPECT_THROW(MakeMarginHead(o), std::invalid_argument);
  EXPECT_EQ(ParseHeadType("arc_margin"), HeadType::kArcMargin);
  EXPECT_EQ(ParseHeadType("add_margin"), HeadType::kAddMargin);
  EXPECT_EQ(ParseHeadType("softmax"), HeadType::kSoftmax);
  for (auto type : {HeadType::kArcMargin, HeadType::kAddMargin, HeadType::kSoftmax}) {
    EXPECT_EQ(ParseHeadType(HeadTypeName(type)), type);
  }
  try {
    ParseHeadType("sphere");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'sphere'"), std::string::npos) << e.what();
  }
}

// Cross-entropy loss of the head's logits, and its gradient with respect to the embeddings and
// the weight, against central finite differences (float64). Rows cover both arc branches.
void CheckGradients(MarginHead& head, torch::Tensor weight) {
  {
    torch::NoGradGuard no_grad;
    weight.add_(0.1 * torch::tensor({0.3, -0.2, 0.5, 0.1, -0.4, 0.2}, torch::kFloat64).reshape({3, 2}));
  }
  const auto labels = Labels(kLabels);
  auto x = Embeddings(kAngles).requires_grad_(true);
  auto loss_of = [&](const torch::Tensor& emb) {
    return torch::nn::functional::cross_entropy(head.forward(emb, labels), labels);
  };
  auto loss = loss_of(x);
  loss.backward();
  const auto gx = x.grad().clone();
  const auto gw = weight.grad().clone();
  ASSERT_TRUE(torch::isfinite(gx).all().item<bool>());
  ASSERT_TRUE(torch::isfinite(gw).all().item<bool>());
  EXPECT_GT(gw.abs().sum().item<double>(), 0);
  const double h = 1e-6;
  torch::NoGradGuard no_grad;
  for (std::int64_t i = 0; i < x.size(0); ++i) {
    for (std::int64_t d = 0; d < 2; ++d) {
      auto plus = x.detach().clone();
      auto minus = x.detach().clone();
      plus[i][d] += h;
      minus[i][d] -= h;
      const double numeric = (loss_of(plus).item<double>() - loss_of(minus).item<double>()) / (2 * h);
      EXPECT_NEAR(gx[i][d].item<double>(), numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << "embedding " << i << "," << d;
    }
  }
  for (std::int64_t j = 0; j < 3; ++j) {
    for (std::int64_t d = 0; d < 2; ++d) {
      const double saved = weight[j][d].item<double>();
      weight[j][d] = saved + h;
      const double up = loss_of(x.detach()).item<double>();
      weight[j][d] = saved - h;
      const double down = loss_of(x.detach()).item<double>();
      weight[j][d] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(gw[j][d].item<double>(), numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << "weight " << j << ","
                                                                                               << d;
    }
  }
}

TEST(ArcMarginHeadTest, GradientsMatchFiniteDifferences) {
  for (auto [margin, easy] : {std::pair{0.2, false}, std::pair{0.2, true}, std::pair{0.0, false}}) {
    auto head = MakeHead<ArcMarginHead>(margin, easy);
    CheckGradients(*head, head->weight);
  }
}

TEST(AddMarginHeadTest, GradientsMatchFiniteDifferences) {
  auto head = MakeHead<AddMarginHead>(0.2);
  CheckGradients(*head, head->weight);
}

TEST(MarginHeadTest, MarginRaisesTheLossOfTheSameEmbeddings) {
  // A margin penalises the target logit: for fixed weights the loss grows with the margin.
  for (auto type : {HeadType::kArcMargin, HeadType::kAddMargin}) {
    MarginHeadOptions o;
    o.type = type;
    o.embed_dim = 8;
    o.num_classes = 5;
    torch::manual_seed(3);
    auto head = MakeMarginHead(o);
    const auto x = torch::randn({16, 8});
    const auto labels = torch::randint(0, 5, {16}, torch::kInt64);
    double previous = -1;
    for (double m : {0.0, 0.1, 0.2, 0.3}) {
      head->UpdateMargin(m);
      const double loss = torch::nn::functional::cross_entropy(head->forward(x, labels), labels).item<double>();
      EXPECT_GT(loss, previous) << HeadTypeName(type) << " margin " << m;
      previous = loss;
    }
  }
}

}  // namespace
}  // namespace asv::nnet
