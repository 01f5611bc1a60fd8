#include "asvcpp/nnet/clustering_layer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {
namespace {

// ASVtorch's ClusteringLayer.forward transcribed literally (residual tensor [B, T, K, F]): the
// independent reference for the closed forms in clustering_layer.cc.
torch::Tensor ReferenceForward(ClusteringLayerImpl& layer, const torch::Tensor& x) {
  const auto& o = layer.options();
  const std::int64_t k = o.n_clusters;
  auto frames = x.transpose(1, 2);
  auto residuals = frames.unsqueeze(2) - layer.centroids.unsqueeze(0).unsqueeze(0);  // [B, T, K, F]
  torch::Tensor a;
  if (o.assignment == ClusterAssignment::kNetVlad) {
    a = torch::softmax(layer.linear(frames), 2).slice(2, 0, k);
  } else {
    torch::Tensor weighted;
    switch (o.lde_covariance) {
      case LdeCovariance::kSpherical:
        weighted = residuals.pow(2).sum(3) * layer.precision;
        break;
      case LdeCovariance::kSharedSpherical:
        weighted = residuals.pow(2).sum(3) * layer.precision[0];
        break;
      case LdeCovariance::kDiagonal:
        weighted = (residuals.pow(2) * layer.precision).sum(3);
        break;
      case LdeCovariance::kSharedDiagonal:
        weighted = (residuals.pow(2) * layer.precision).sum(3);
        break;
    }
    a = torch::softmax(-0.5 * weighted + layer.bias_terms, 2);
  }
  auto v = (residuals * a.unsqueeze(3)).sum(1);
  if (o.supervector == SupervectorMode::kNetVlad) {
    v = v / v.norm(2, {2}, true).clamp_min(1e-12);
  } else {
    v = v / a.sum(1).unsqueeze(2);
  }
  auto s = v.reshape({x.size(0), -1});
  if (o.normalize_supervector) s = s / s.norm(2, {1}, true).clamp_min(1e-12);
  return s;
}

TEST(ClusteringLayerTest, NetVladShapesGhostsAndInit) {
  torch::manual_seed(10);
  ClusteringOptions o;
  o.n_clusters = 4;
  o.n_ghost_clusters = 2;
  o.net_vlad_alpha = 1.5;
  ClusteringLayer layer(6, o);
  EXPECT_EQ(layer->centroids.sizes(), (std::vector<std::int64_t>{4, 6}));
  EXPECT_EQ(layer->linear->weight.sizes(), (std::vector<std::int64_t>{6, 6}));
  EXPECT_TRUE(torch::allclose(layer->linear->weight.slice(0, 0, 4), 3.0 * layer->centroids));
  EXPECT_GE(layer->centroids.min().item<float>(), 0.f);
  EXPECT_LT(layer->centroids.max().item<float>(), 1.f);

  auto x = torch::randn({3, 6, 9});
  auto a = layer->Assignments(x);
  ASSERT_EQ(a.sizes(), (std::vector<std::int64_t>{3, 9, 4}));
  auto sums = a.sum(2);
  EXPECT_LE(sums.max().item<float>(), 1.f);
  EXPECT_LT(sums.max().item<float>(), 1.f - 1e-6f);  // ghosts take a share of every frame
  EXPECT_GE(a.min().item<float>(), 0.f);

  auto y = layer(x);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 24}));
  EXPECT_TRUE(torch::allclose(y.norm(2, {1}), torch::ones({3}), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(y, ReferenceForward(*layer, x), 1e-4, 1e-5));
}

TEST(ClusteringLayerTest, NetVladWithoutGhostsSumsToOne) {
  torch::manual_seed(11);
  ClusteringOptions o;
  o.n_clusters = 3;
  o.n_ghost_clusters = 0;
  o.normalize_supervector = false;
  ClusteringLayer layer(5, o);
  auto x = torch::randn({2, 5, 7});
  EXPECT_TRUE(torch::allclose(layer->Assignments(x).sum(2), torch::ones({2, 7}), 1e-5, 1e-6));
  auto y = layer(x);
  // Intra-normalised component vectors without the global normalisation: each has unit norm.
  EXPECT_TRUE(torch::allclose(y.reshape({2, 3, 5}).norm(2, {2}), torch::ones({2, 3}), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(y, ReferenceForward(*layer, x), 1e-4, 1e-5));
}

TEST(ClusteringLayerTest, LdeCovarianceTypesMatchReference) {
  const std::vector<std::pair<LdeCovariance, std::vector<std::int64_t>>> cases = {
      {LdeCovariance::kSpherical, {4}},
      {LdeCovariance::kSharedSpherical, {1}},
      {LdeCovariance::kDiagonal, {4, 6}},
      {LdeCovariance::kSharedDiagonal, {6}}};
  for (const auto& [cov, shape] : cases) {
    torch::manual_seed(12);
    ClusteringOptions o;
    o.n_clusters = 4;
    o.n_ghost_clusters = 2;
    o.assignment = ClusterAssignment::kLde;
    o.supervector = SupervectorMode::kLde;
    o.lde_covariance = cov;
    o.normalize_supervector = false;
    ClusteringLayer layer(6, o);
    EXPECT_EQ(layer->precision.sizes(), shape);
    EXPECT_EQ(layer->bias_terms.sizes(), (std::vector<std::int64_t>{4}));
    EXPECT_EQ(layer->centroids.sizes(), (std::vector<std::int64_t>{4, 6}));
    {
      torch::NoGradGuard g;
      layer->precision.uniform_(0.5, 1.5);
    }
    auto x = torch::randn({2, 6, 8});
    auto a = layer->Assignments(x);
    EXPECT_TRUE(torch::allclose(a.sum(2), torch::ones({2, 8}), 1e-5, 1e-6));
    auto y = layer(x);
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 24}));
    EXPECT_TRUE(torch::allclose(y, ReferenceForward(*layer, x), 1e-4, 1e-4)) << static_cast<int>(cov);
    EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
  }
}

TEST(ClusteringLayerTest, ParameterNamesAndGradients) {
  torch::manual_seed(13);
  ClusteringOptions o;
  o.n_clusters = 2;
  o.assignment = ClusterAssignment::kLde;
  ClusteringLayer lde(3, o);
  std::vector<std::string> names;
  for (const auto& p : lde->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"centroids", "precision", "bias_terms"}));
  lde(torch::randn({2, 3, 5})).sum().backward();
  EXPECT_TRUE(lde->precision.grad().defined());

  o.assignment = ClusterAssignment::kNetVlad;
  ClusteringLayer vlad(3, o);
  names.clear();
  for (const auto& p : vlad->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"centroids", "linear.weight", "linear.bias"}));
}

}  // namespace
}  // namespace asv::nnet
