#include "asvcpp/nnet/clustering_layer.h"

#include <stdexcept>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::nnet {

ClusteringLayerImpl::ClusteringLayerImpl(std::int64_t input_dim, const ClusteringOptions& options)
    : input_dim_(input_dim), options_(options) {
  const std::int64_t k = options.n_clusters;
  const std::int64_t g = options.n_ghost_clusters;
  if (k < 1 || g < 0 || input_dim < 1) {
    throw ConfigError(
        fmt::format("clustering pooling needs n_clusters >= 1, n_ghost_clusters >= 0 and input "
                    "dimension >= 1 (got {}, {}, {})",
                    k, g, input_dim));
  }
  const auto all_centroids = torch::rand({k + g, input_dim});
  centroids = register_parameter("centroids", all_centroids.slice(0, 0, k).clone());
  if (options.assignment == ClusterAssignment::kNetVlad) {
    linear = register_module("linear", torch::nn::Linear(input_dim, k + g));
    torch::NoGradGuard no_grad;
    linear->weight.copy_(2.0 * options.net_vlad_alpha * all_centroids);
  } else {
    switch (options.lde_covariance) {
      case LdeCovariance::kSpherical:
        precision = register_parameter("precision", torch::ones({k}));
        break;
      case LdeCovariance::kSharedSpherical:
        precision = register_parameter("precision", torch::ones({1}));
        break;
      case LdeCovariance::kDiagonal:
        precision = register_parameter("precision", torch::ones({k, input_dim}));
        break;
      case LdeCovariance::kSharedDiagonal:
        precision = register_parameter("precision", torch::ones({input_dim}));
        break;
    }
    bias_terms = register_parameter("bias_terms", torch::randn({k}));
  }
}

torch::Tensor ClusteringLayerImpl::AssignFrames(const torch::Tensor& frames) {
  const std::int64_t k = options_.n_clusters;
  if (options_.assignment == ClusterAssignment::kNetVlad) {
    return torch::softmax(linear(frames), 2).slice(2, 0, k);
  }
  const auto terms = LdeDistanceTerms();
  const auto x2 = torch::matmul(frames.pow(2), terms.precision_t);            // [B, T, K]
  const auto cross = torch::matmul(frames, terms.weighted_centroids_t);       // [B, T, K]
  const auto distances = x2 - 2.0 * cross + terms.weighted_norms;
  return torch::softmax(-0.5 * distances + bias_terms, 2);
}

ClusteringLayerImpl::LdeTerms ClusteringLayerImpl::LdeDistanceTerms() const {
  if (options_.assignment != ClusterAssignment::kLde) {
    throw std::logic_error("LdeDistanceTerms: a NetVLAD assignment has no precision");
  }
  const std::int64_t k = options_.n_clusters;
  const torch::Tensor lambda = [&]() -> torch::Tensor {  // [K, F]
    switch (options_.lde_covariance) {
      case LdeCovariance::kSpherical:
        return precision.unsqueeze(1).expand({k, input_dim_});
      case LdeCovariance::kSharedSpherical:
        return precision.expand({k, input_dim_});
      case LdeCovariance::kDiagonal:
        return precision;
      case LdeCovariance::kSharedDiagonal:
        return precision.unsqueeze(0).expand({k, input_dim_});
    }
    return precision;
  }();
  return {lambda.t(), (lambda * centroids).t(), (lambda * centroids.pow(2)).sum(1)};
}

torch::Tensor ClusteringLayerImpl::Assignments(const torch::Tensor& x) {
  return AssignFrames(x.transpose(1, 2));
}

torch::Tensor ClusteringLayerImpl::forward(const torch::Tensor& x) {
  const auto frames = x.transpose(1, 2);                                             // [B, T, F]
  const auto a = AssignFrames(frames);                                               // [B, T, K]
  const auto counts = a.sum(1);                                                      // [B, K]
  auto v = torch::bmm(a.transpose(1, 2), frames) - counts.unsqueeze(2) * centroids;  // [B, K, F]
  if (options_.supervector == SupervectorMode::kNetVlad) {
    v = torch::nn::functional::normalize(v, torch::nn::functional::NormalizeFuncOptions().p(2).dim(2));
  } else {
    v = v / counts.clamp_min(1e-10).unsqueeze(2);
  }
  auto supervector = v.reshape({x.size(0), -1});
  if (options_.normalize_supervector) {
    supervector =
        torch::nn::functional::normalize(supervector, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1));
  }
  return supervector;
}

}  // namespace asv::nnet
