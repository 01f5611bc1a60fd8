// DET curves for plots: the probit (inverse standard normal CDF) scale of DET plots (A. Martin et
// al., "The DET curve in assessment of detection task performance", Eurospeech 1997) and a
// thinned list of DET points that keeps the curve's shape on that scale, small enough to store
// for every scored trial list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/eval/metrics.h"

namespace asv::eval {

/// Inverse of the standard normal CDF: the z with Phi(z) = p, for p in (0, 1); -inf at 0, +inf at
/// 1. Acklam's rational approximation (P. J. Acklam, "An algorithm for computing the inverse
/// normal cumulative distribution function", 2003; relative error 1.15e-9) refined by two Halley
/// steps on std::erfc, which brings it to about 1e-15. Throws std::invalid_argument for p outside
/// [0, 1] or NaN.
double Probit(double p);

/// One point of a DET curve: operating point k of metrics.h (the k lowest scores rejected).
struct DetPoint {
  double p_miss = 0;     ///< FRR[k], fraction in [0, 1].
  double p_fa = 0;       ///< FAR[k], fraction in [0, 1].
  double threshold = 0;  ///< threshold[k].
};

/// The DET points of `scores` whose rates are both in (0, 1) (the others lie off a probit plot),
/// thinned to about `max_points` (at most max_points + 3): walking along the curve, a point is
/// kept when it lies at least L / max_points away (Euclidean, in probit units) from the last
/// point kept, L being the curve's length on probit axes; the first and last points and the EER
/// point are always kept. Sorts all scores (O(n log n)). Throws std::invalid_argument when
/// max_points < 2.
std::vector<DetPoint> DetPoints(const SortedScores& scores, std::size_t max_points = 2000);

/// The thinning of DetPoints on any list of points along a DET curve (e.g. read back with
/// ReadDetPoints): the points whose rates are both in (0, 1), about `max_points` of them, always
/// the first, the last and `points[keep]` (when keep < points.size() and it lies inside).
/// Throws std::invalid_argument when max_points < 2.
std::vector<DetPoint> ThinDetPoints(const std::vector<DetPoint>& points, std::size_t max_points,
                                    std::size_t keep = static_cast<std::size_t>(-1));

/// The standard DET axis ticks (fractions): 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20 and 40 %.
const std::vector<double>& DetAxisTicks();

/// The lower end (a fraction, one of DetAxisTicks()) of DET axes that show `points` on both
/// axes from it to 40 %: the largest tick at or below both rates of every point that lies inside
/// (0, 40 %] on both axes, never above 0.1 % (the axes show at least 0.1-40 %) and never below
/// 0.01 % (the smallest tick; points further down are cut off). Points outside that square (a rate
/// of 0, or above 40 %) do not move it. Never throws.
double DetAxisMin(const std::vector<DetPoint>& points);

/// The file name of trial list `trial_list`'s DET points written by run `run_id` (the experiment
/// database's run id): "det_<trial_list>.run<run_id>.tsv", or "det_<trial_list>.tsv" when run_id
/// is 0 (no database). One file per run, so that rescoring a system in the same output folder
/// keeps the curve every earlier run recorded.
std::string DetFileName(const std::string& trial_list, std::int64_t run_id);

/// The trial list of a DET file named as DetFileName names it (the file name of `path` is used):
/// "det_vox1_o.run12.tsv" and "det_vox1_o.tsv" -> "vox1_o"; nullopt for any other name.
std::optional<std::string> TrialListOfDetFile(const std::filesystem::path& path);

/// Writes `points` as a tab-separated file with the header
/// "p_miss<TAB>p_fa<TAB>probit_miss<TAB>probit_fa<TAB>threshold" (rates as fractions, 17
/// significant digits), to a temporary name then renamed. Throws DataError naming the path.
void WriteDetPoints(const std::filesystem::path& path, const std::vector<DetPoint>& points);

/// Reads a file of WriteDetPoints: p_miss, p_fa and threshold of every line (the probit columns
/// are recomputed by whoever needs them; "inf" and "-inf" thresholds are read). Throws DataError
/// naming the path for a file that cannot be opened or is not a regular file (a FIFO would block
/// the reader), and path:line for a wrong header, a line
/// that is not 5 tab-separated numbers, or a rate outside [0, 1].
std::vector<DetPoint> ReadDetPoints(const std::filesystem::path& path);

}  // namespace asv::eval
