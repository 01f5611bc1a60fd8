// Clustering-based pooling of ASVtorch (ClusteringLayer in asvtorch/src/networks/modules.py):
// NetVLAD with ghost clusters (Arandjelović et al. 2016,
// "NetVLAD: CNN architecture for weakly supervised place recognition"; ghost clusters from Zhong
// et al. 2018, GhostVLAD) and learnable dictionary encoding (LDE; Cai et al. 2018, "Exploring the
// encoding layer and loss function in end-to-end speaker and language recognition system").
//
// With frames x_t ∈ R^F (F = input_dim), K clusters with centroids μ_k and soft assignments a_tk:
//   v_k = Σ_t a_tk (x_t − μ_k)                                   component vectors
//   supervector "net_vlad": v_k / ||v_k||  ("intra-normalisation")
//   supervector "lde":      v_k / Σ_t a_tk
//   output = flatten(v_1..v_K) (K·F), L2-normalised when normalize_supervector.
// Assignments:
//   net_vlad: a_t = softmax over K+G of (W x_t + b), ghost columns dropped afterwards (the K
//             real columns then sum to <= 1; no renormalisation, as in ASVtorch);
//             W is initialised to 2·α·[μ; ghost centroids], b with PyTorch's default init.
//   lde:      a_tk = softmax_k(−½ Σ_f λ (x_tf − μ_kf)² + b_k), λ of shape
//             spherical [K], shared_spherical [1], diagonal [K, F], shared_diagonal [F] (init 1),
//             b ~ N(0, 1) [K]. full / shared_full are not supported (the setting rejects them), as in ASVtorch.
// Centroids are initialised U[0, 1) for K+G clusters; only the first K rows are kept.
// The sums over time are computed as Σ_t a_tk x_t − (Σ_t a_tk) μ_k and the LDE distances by
// expanding the square (matrix products instead of ASVtorch's [batch, frames, K, F] residual
// tensor); the results are the same up to float rounding.
// Deviation: the "lde" division uses max(Σ_t a_tk, 1e-10) so a cluster that no frame is
// assigned to gives a zero vector instead of NaN.
#pragma once

#include <cstdint>
#include <string>

#include <torch/nn.h>

#include "asvcpp/enums/nnet_types.h"

namespace asv::nnet {

struct ClusteringOptions {
  std::int64_t n_clusters = 64;       ///< K
  std::int64_t n_ghost_clusters = 2;  ///< G (used by the NetVLAD assignment only)
  ClusterAssignment assignment = ClusterAssignment::kNetVlad;
  SupervectorMode supervector = SupervectorMode::kNetVlad;
  LdeCovariance lde_covariance = LdeCovariance::kSpherical;
  bool normalize_supervector = true;
  double net_vlad_alpha = 1.0;  ///< α of the NetVLAD assignment initialisation
};

/// NetVLAD / LDE pooling. Parameters (ASVtorch names): `centroids` [K, F]; LDE: `precision`
/// (shape above), `bias_terms` [K]; NetVLAD: submodule `linear` (F -> K+G).
class ClusteringLayerImpl : public torch::nn::Module {
 public:
  ClusteringLayerImpl(std::int64_t input_dim, const ClusteringOptions& options);

  /// Pooled supervector: [batch, F, frames] -> [batch, K·F] (cluster-major: v_1, v_2, ...).
  torch::Tensor forward(const torch::Tensor& x);

  /// Soft assignments a_tk of the K real clusters: [batch, F, frames] -> [batch, frames, K].
  /// Each row sums to 1 without ghost clusters and to <= 1 with them.
  torch::Tensor Assignments(const torch::Tensor& x);

  /// The constants of LDE's squared distances Σ_f λ_kf (x_tf − μ_kf)² = (x²)·λ_tᵀ − 2 x·(λμ)ᵀ +
  /// Σ_f λ_kf μ_kf² (Cai et al. 2018, "Exploring the encoding layer and loss function in
  /// end-to-end speaker and language recognition system"; ASVtorch's LDE layer), with the precision
  /// λ broadcast to [K, F] whatever its `lde_covariance` shape.
  struct LdeTerms {
    torch::Tensor precision_t;            ///< λᵀ [F, K]
    torch::Tensor weighted_centroids_t;   ///< (λ ⊙ μ)ᵀ [F, K]
    torch::Tensor weighted_norms;         ///< Σ_f λ_kf μ_kf² [K]
  };
  /// LdeTerms of the current parameters (what the forward pass uses, and the ONNX export).
  /// Throws std::logic_error for a NetVLAD assignment.
  LdeTerms LdeDistanceTerms() const;

  std::int64_t output_dim() const { return options_.n_clusters * input_dim_; }
  const ClusteringOptions& options() const { return options_; }

  torch::Tensor centroids;            ///< [K, F]
  torch::Tensor precision;            ///< LDE only
  torch::Tensor bias_terms;           ///< LDE only, [K]
  torch::nn::Linear linear{nullptr};  ///< NetVLAD only

 private:
  /// Assignments from frames already laid out as [batch, frames, F].
  torch::Tensor AssignFrames(const torch::Tensor& frames);

  std::int64_t input_dim_;
  ClusteringOptions options_;
};
TORCH_MODULE(ClusteringLayer);

}  // namespace asv::nnet
