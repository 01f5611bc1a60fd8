#include "asvcpp/eval/calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/eval/llr_metrics.h"

namespace asv::eval {
namespace {

// 1 / (1 + exp(-x)) without overflow.
double Sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

std::size_t Rows(const std::vector<double>& features, std::size_t dim, const char* what) {
  if (dim == 0) throw std::invalid_argument("calibration: at least one feature is needed");
  if (features.size() % dim != 0) {
    throw std::invalid_argument(
        fmt::format("calibration: {} features hold {} values, not a multiple of {} features per trial", what,
                    features.size(), dim));
  }
  for (double v : features) {
    if (!std::isfinite(v)) throw DataError(fmt::format("calibration: a {} feature is not finite", what));
  }
  return features.size() / dim;
}

// Solves the symmetric positive definite system a x = rhs (a [n, n] row-major) by Cholesky;
// throws std::runtime_error when a is not positive definite.
std::vector<double> SolveSpd(std::vector<double> a, std::vector<double> rhs) {
  const std::size_t n = rhs.size();
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) throw std::runtime_error("calibration: the Hessian is not positive definite");
    const double l = std::sqrt(d);
    a[j * n + j] = l;
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (std::size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / l;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // L y = rhs
    for (std::size_t k = 0; k < i; ++k) rhs[i] -= a[i * n + k] * rhs[k];
    rhs[i] /= a[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {  // L^T x = y
    for (std::size_t k = i + 1; k < n; ++k) rhs[i] -= a[k * n + i] * rhs[k];
    rhs[i] /= a[i * n + i];
  }
  return rhs;
}

// The training problem on standardised features z = (x - shift) / scale, with an appended 1 for
// the bias: parameters theta [dim + 1].
struct Problem {
  std::size_t dim = 0;
  std::vector<double> z;       // [n, dim + 1], targets first
  std::size_t n_tar = 0;
  double weight_tar = 0;       // prior / N_tar
  double weight_non = 0;       // (1 - prior) / N_non
  double offset = 0;           // logit(prior)
  double l2 = 0;

  std::size_t n() const { return z.size() / (dim + 1); }
  double Linear(const std::vector<double>& theta, std::size_t i) const {
    double s = 0;
    for (std::size_t k = 0; k <= dim; ++k) s += theta[k] * z[i * (dim + 1) + k];
    return s;
  }
  double Objective(const std::vector<double>& theta) const {
    double j = 0;
    for (std::size_t i = 0; i < n(); ++i) {
      const double a = Linear(theta, i) + offset;
      j += i < n_tar ? weight_tar * Softplus(-a) : weight_non * Softplus(a);
    }
    for (std::size_t k = 0; k < dim; ++k) j += 0.5 * l2 * theta[k] * theta[k];
    return j;
  }
  // Gradient [dim + 1] and Hessian [dim + 1, dim + 1] row-major.
  void Derivatives(const std::vector<double>& theta, std::vector<double>* gradient,
                   std::vector<double>* hessian) const {
    const std::size_t m = dim + 1;
    gradient->assign(m, 0.0);
    hessian->assign(m * m, 0.0);
    for (std::size_t i = 0; i < n(); ++i) {
      const double a = Linear(theta, i) + offset;
      const double p = Sigmoid(a);
      const double g = i < n_tar ? weight_tar * (p - 1.0) : weight_non * p;
      const double h = (i < n_tar ? weight_tar : weight_non) * p * (1.0 - p);
      const double* zi = &z[i * m];
      for (std::size_t r = 0; r < m; ++r) {
        (*gradient)[r] += g * zi[r];
        for (std::size_t c = 0; c <= r; ++c) (*hessian)[r * m + c] += h * zi[r] * zi[c];
      }
    }
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t c = r + 1; c < m; ++c) (*hessian)[r * m + c] = (*hessian)[c * m + r];
    }
    for (std::size_t k = 0; k < dim; ++k) {
      (*gradient)[k] += l2 * theta[k];
      (*hessian)[k * m + k] += l2;
    }
    // A tiny ridge on the bias too, so that a degenerate curvature (all p at 0 or 1) still solves.
    (*hessian)[dim * m + dim] += 1e-12;
  }
};

}  // namespace

void CalibrationOptions::Validate() const {
  if (!(prior > 0 && prior < 1)) throw std::invalid_argument(fmt::format("calibration prior {} is not in (0, 1)", prior));
  if (!(l2 >= 0) || !std::isfinite(l2)) throw std::invalid_argument(fmt::format("calibration l2 {} is not >= 0", l2));
  if (max_iterations < 1) throw std::invalid_argument("calibration max_iterations must be >= 1");
  if (!(tolerance > 0)) throw std::invalid_argument("calibration tolerance must be > 0");
}

double LinearCalibration::Apply(const std::vector<double>& features) const {
  if (features.size() != weights.size()) {
    throw std::invalid_argument(
        fmt::format("calibration has {} features, the trial gives {}", weights.size(), features.size()));
  }
  double llr = bias;
  for (std::size_t k = 0; k < weights.size(); ++k) llr += weights[k] * features[k];
  return llr;
}

std::vector<double> LinearCalibration::ApplyAll(const std::vector<double>& features) const {
  const std::size_t d = dim();
  if (d == 0 || features.size() % d != 0) {
    throw std::invalid_argument(
        fmt::format("calibration: {} values are not a whole number of {}-feature trials", features.size(), d));
  }
  std::vector<double> llrs(features.size() / d);
  for (std::size_t i = 0; i < llrs.size(); ++i) {
    double llr = bias;
    for (std::size_t k = 0; k < d; ++k) llr += weights[k] * features[i * d + k];
    llrs[i] = llr;
  }
  return llrs;
}

LinearCalibration TrainLinearCalibration(const std::vector<double>& target_features,
                                         const std::vector<double>& nontarget_features,
                                         const std::vector<std::string>& feature_names,
                                         const CalibrationOptions& options) {
  options.Validate();
  const std::size_t dim = feature_names.size();
  const std::size_t n_tar = Rows(target_features, dim, "target");
  const std::size_t n_non = Rows(nontarget_features, dim, "non-target");
  if (n_tar == 0 || n_non == 0) {
    throw DataError(fmt::format("calibration needs target and non-target trials, got {} target and {} non-target",
                                n_tar, n_non));
  }
  const std::size_t n = n_tar + n_non;
  const auto value = [&](std::size_t i, std::size_t k) {
    return i < n_tar ? target_features[i * dim + k] : nontarget_features[(i - n_tar) * dim + k];
  };
  // Standardisation of each feature over all training trials.
  std::vector<double> shift(dim, 0.0), scale(dim, 1.0);
  for (std::size_t k = 0; k < dim; ++k) {
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += value(i, k);
    mean /= static_cast<double>(n);
    double var = 0;
    for (std::size_t i = 0; i < n; ++i) var += (value(i, k) - mean) * (value(i, k) - mean);
    var /= static_cast<double>(n);
    shift[k] = mean;
    if (var > 0) scale[k] = std::sqrt(var);
  }
  Problem problem;
  problem.dim = dim;
  problem.n_tar = n_tar;
  problem.weight_tar = options.prior / static_cast<double>(n_tar);
  problem.weight_non = (1.0 - options.prior) / static_cast<double>(n_non);
  problem.offset = std::log(options.prior) - std::log1p(-options.prior);
  problem.l2 = options.l2;
  problem.z.resize(n * (dim + 1));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < dim; ++k) problem.z[i * (dim + 1) + k] = (value(i, k) - shift[k]) / scale[k];
    problem.z[i * (dim + 1) + dim] = 1.0;
  }

  std::vector<double> theta(dim + 1, 0.0), gradient, hessian;
  double objective = problem.Objective(theta);
  int iteration = 0;
  double decrement = 0;
  bool converged = false;
  while (iteration < options.max_iterations) {
    ++iteration;
    problem.Derivatives(theta, &gradient, &hessian);
    const std::vector<double> step = SolveSpd(hessian, gradient);  // theta -= step
    decrement = 0;
    for (std::size_t k = 0; k <= dim; ++k) decrement += gradient[k] * step[k];
    if (decrement / 2 < options.tolerance) {
      converged = true;
      break;
    }
    // Backtracking (Armijo) line search along the Newton direction.
    double t = 1.0;
    std::vector<double> candidate(dim + 1);
    for (;;) {
      for (std::size_t k = 0; k <= dim; ++k) candidate[k] = theta[k] - t * step[k];
      const double next = problem.Objective(candidate);
      if (next <= objective - 0.25 * t * decrement || t < 1e-10) {
        objective = next;
        break;
      }
      t *= 0.5;
    }
    theta.swap(candidate);
  }
  if (!converged) {
    throw std::runtime_error(fmt::format("calibration did not converge in {} Newton iterations (decrement {:g})",
                                         options.max_iterations, decrement));
  }

  LinearCalibration result;
  result.feature_names = feature_names;
  result.weights.resize(dim);
  result.bias = theta[dim];
  for (std::size_t k = 0; k < dim; ++k) {
    result.weights[k] = theta[k] / scale[k];
    result.bias -= result.weights[k] * shift[k];
  }
  result.prior = options.prior;
  result.iterations = iteration;
  result.objective = objective;
  return result;
}

double CalibrationObjective(const LinearCalibration& calibration, const std::vector<double>& target_features,
                            const std::vector<double>& nontarget_features, double prior, double l2) {
  CalibrationOptions options;
  options.prior = prior;
  options.l2 = l2;
  options.Validate();
  const std::size_t dim = calibration.dim();
  const std::size_t n_tar = Rows(target_features, dim, "target");
  const std::size_t n_non = Rows(nontarget_features, dim, "non-target");
  if (n_tar == 0 || n_non == 0) throw DataError("calibration objective needs target and non-target trials");
  const double offset = std::log(prior) - std::log1p(-prior);
  const std::vector<double> tar = calibration.ApplyAll(target_features);
  const std::vector<double> non = calibration.ApplyAll(nontarget_features);
  double sum_tar = 0, sum_non = 0;
  for (double llr : tar) sum_tar += Softplus(-(llr + offset));
  for (double llr : non) sum_non += Softplus(llr + offset);
  double j = prior * sum_tar / static_cast<double>(n_tar) + (1.0 - prior) * sum_non / static_cast<double>(n_non);
  for (double w : calibration.weights) j += 0.5 * l2 * w * w;
  return j;
}

std::vector<double> QualityFeatures(double score, const TrialSideQuality& enrollment, const TrialSideQuality& test,
                                    double max_duration) {
  if (!(enrollment.duration > 0) || !(test.duration > 0)) {
    throw DataError(fmt::format("quality measures: durations must be positive, got {} s and {} s",
                                enrollment.duration, test.duration));
  }
  const double d1 = std::log(std::min(enrollment.duration, max_duration));
  const double d2 = std::log(std::min(test.duration, max_duration));
  return {score, std::min(d1, d2), std::max(d1, d2), std::min(enrollment.magnitude, test.magnitude),
          std::max(enrollment.magnitude, test.magnitude)};
}

std::vector<std::string> QualityFeatureNames() {
  return {"score", "log_min_duration", "log_max_duration", "min_magnitude", "max_magnitude"};
}

CalibrationCheck CheckCalibration(const LinearCalibration& calibration, double training_cllr, std::int64_t n_target,
                                  std::int64_t n_nontarget, double min_information_bits) {
  if (calibration.weights.empty()) throw std::invalid_argument("CheckCalibration: the calibration has no weight");
  if (!(min_information_bits >= 0.0 && min_information_bits < 1.0)) {
    throw std::invalid_argument(
        fmt::format("CheckCalibration: min_information_bits must lie in [0, 1), got {}", min_information_bits));
  }
  if (n_target <= 0 || n_nontarget <= 0) {
    throw std::invalid_argument(
        fmt::format("CheckCalibration: {} target and {} non-target trials", n_target, n_nontarget));
  }
  if (std::isnan(training_cllr)) throw DataError("CheckCalibration: the training Cllr is NaN");
  CalibrationCheck check;
  check.score_weight = calibration.weights[0];
  check.training_cllr = training_cllr;
  const double k = static_cast<double>(calibration.dim() + 1);
  const double n_eff = 4.0 / (1.0 / static_cast<double>(n_target) + 1.0 / static_cast<double>(n_nontarget));
  const double chance = (k + 4.0 * std::sqrt(2.0 * k)) / (2.0 * std::log(2.0) * n_eff);
  check.margin = std::max(min_information_bits, chance);
  const double min_information = check.margin;
  if (check.score_weight < 0.0) {
    check.reason = fmt::format("the score's weight {:.4g} is negative: the calibrated LLRs would rank the trials in "
                               "reverse",
                               check.score_weight);
  } else if (check.score_weight == 0.0) {
    check.reason = "the score's weight is 0: the calibrated LLRs would ignore the score";
  } else if (!(training_cllr < 1.0 - min_information)) {
    check.reason = fmt::format("Cllr of the calibrated training trials is {:.4f} bits, not below 1 - {:.4g}: the "
                               "LLRs would carry (almost) no information (llr = 0 always has Cllr 1)",
                               training_cllr, min_information);
  }
  check.degenerate = !check.reason.empty();
  return check;
}

void SaveCalibration(const LinearCalibration& calibration, const std::filesystem::path& path,
                     const CalibrationUse* use) {
  nlohmann::json doc;
  doc["kind"] = "linear_calibration";
  doc["feature_names"] = calibration.feature_names;
  doc["weights"] = calibration.weights;
  doc["bias"] = calibration.bias;
  doc["prior"] = calibration.prior;
  doc["iterations"] = calibration.iterations;
  doc["objective"] = calibration.objective;
  if (use != nullptr) {
    doc["applied"] = use->applied;
    doc["degenerate"] = use->check.degenerate;
    doc["degenerate_reason"] = use->check.reason;
    doc["training_cllr"] = use->check.training_cllr;
    doc["cllr_margin"] = use->check.margin;
    doc["n_target_trials"] = use->n_target_trials;
    doc["n_nontarget_trials"] = use->n_nontarget_trials;
  }
  fs::WriteFileAtomic(path, doc.dump(1) + "\n");
}

LinearCalibration LoadCalibration(const std::filesystem::path& path) {
  const std::string text = fs::ReadFile(path);
  LinearCalibration c;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.at("kind") != "linear_calibration") throw DataError("not a linear calibration");
    c.feature_names = doc.at("feature_names").get<std::vector<std::string>>();
    c.weights = doc.at("weights").get<std::vector<double>>();
    c.bias = doc.at("bias").get<double>();
    c.prior = doc.at("prior").get<double>();
    c.iterations = doc.at("iterations").get<int>();
    c.objective = doc.at("objective").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: not a calibration file: {}", path.string(), e.what()));
  } catch (const DataError& e) {
    throw DataError(fmt::format("{}: {}", path.string(), e.what()));
  }
  if (c.weights.empty() || c.weights.size() != c.feature_names.size()) {
    throw DataError(fmt::format("{}: {} weights for {} feature names", path.string(), c.weights.size(),
                                c.feature_names.size()));
  }
  const bool finite = std::all_of(c.weights.begin(), c.weights.end(), [](double w) { return std::isfinite(w); });
  if (!finite || !std::isfinite(c.bias)) throw DataError(fmt::format("{}: a weight is not finite", path.string()));
  return c;
}

}  // namespace asv::eval
