// Progress of a long loop: items done of a total, a smoothed rate, elapsed time and ETA, on the
// terminal or in the log, and published for the experiment database.
//
// On a terminal (stderr, where the log goes, is a tty) one line is redrawn in place ("\r") at
// most every `redraw_interval_s` and replaced by the end line at Finish(); otherwise (log files,
// CI) a plain log line is written whenever another `log_fraction` of the total is done or
// `log_interval_s` have passed since the last line, whichever comes first, and an end line with
// the total time and the mean rate at Finish():
//
//   [asvcpp I 12:00:10] voxceleb1: 1,200/4,874 utt (24.6%), 118.3 utt/s, 97.2x real time, elapsed 0:10, ETA 0:31
//   [asvcpp I 12:00:41] voxceleb1: 4,874 utt in 0:41, mean 118.9 utt/s, 97.5x real time
//
// Only global rank 0 (log::Rank()) writes lines in kAuto mode; every rank publishes.
//
// The rate is an exponentially weighted mean of the rates of successive sampling intervals of at
// least kRateSampleSeconds, with time constant `rate_window_s` (a sample dt seconds long gets the
// weight 1 - exp(-dt / rate_window_s)); before the first sample it is the mean rate so far. The
// ETA is (total - done) / rate.
//
// Publication: every Progress (unless options.publish is false) writes its state to a
// process-wide board at most every kPublishSeconds, at its start and at Finish(); CurrentProgress()
// reads the latest, and the stage driver names the stage with SetProgressStage(). asvrun's
// progress reporter (asvcpp/db/progress_reporter.h) copies it into the database every few
// seconds, where `asvrun runs --running` reads it.
//
//   base::ProgressOptions options;
//   options.unit = "utt";
//   options.amount_rate_suffix = "x real time";
//   base::Progress progress("voxceleb1", utterances.size(), options);
//   ... progress.Add(1, seconds_of_audio);   // from any thread
//   progress.Finish();
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace asv::base {

/// How a Progress reports.
enum class ProgressMode {
  kAuto,    ///< Global rank 0: kLive when stderr is a terminal, kLog otherwise; other ranks kSilent.
  kLive,    ///< One line redrawn in place ("\r" + line + clear to end of line) on stderr.
  kLog,     ///< A log line (Info) every log_fraction of the total or log_interval_s.
  kSilent,  ///< Nothing is written; Line() and publication still work.
};

struct ProgressOptions {
  std::string unit = "items";  ///< Name of an item in the line ("utt", "batches").
  ProgressMode mode = ProgressMode::kAuto;
  double log_interval_s = 30.0;    ///< kLog: at most this many seconds between lines.
  double log_fraction = 0.1;       ///< kLog: a line each time another such fraction of total is done.
  double redraw_interval_s = 0.2;  ///< kLive: minimum seconds between redraws.
  double rate_window_s = 10.0;     ///< Time constant of the smoothed rate, seconds.
  /// Optional second quantity summed by Add(n, amount), shown as its mean rate with this suffix,
  /// e.g. amount = seconds of audio and suffix "x real time" gives "97.2x real time". Empty: not
  /// shown.
  std::string amount_rate_suffix;
  /// Publish to the process-wide board (CurrentProgress()). Tests of the lines turn it off.
  bool publish = true;
  /// Monotonic clock in seconds; default std::chrono::steady_clock. Injected by tests.
  std::function<double()> clock;
  /// Receives each line instead of stderr/the log (kLive lines without "\r"). Injected by tests.
  std::function<void(const std::string&)> sink;
};

/// The state of a Progress as published to the process-wide board.
struct ProgressSnapshot {
  std::string stage;         ///< The stage named by SetProgressStage ("" before any).
  std::string what;          ///< The Progress's label, e.g. "voxceleb1" or "epoch 3/20".
  std::int64_t done = 0;     ///< Items done.
  std::int64_t total = 0;    ///< Items in all; <= 0: unknown.
  std::string unit;          ///< Name of an item.
  double rate = 0;           ///< Smoothed rate, items per second; 0 when not known yet.
  std::optional<double> eta_seconds;  ///< Seconds left at `rate`; nullopt when unknown.
  bool finished = false;     ///< The Progress has finished (its end line was written).
  std::uint64_t sequence = 0;  ///< Increases with every publication (board-wide).
};

/// Names the current stage (e.g. "5 train") for the board; the published snapshot keeps its
/// counts. Thread-safe.
void SetProgressStage(const std::string& stage);

/// The latest published state, or nullopt when no stage was named and no Progress published
/// since the start (or ClearProgressBoard()). Thread-safe.
std::optional<ProgressSnapshot> CurrentProgress();

/// Forgets the published state (tests; a process that starts another run). Thread-safe.
void ClearProgressBoard();

/// Thread-safe progress reporter for `total` items (total <= 0: unknown, no percentage/ETA).
class Progress {
 public:
  /// Shortest sampling interval of the smoothed rate, seconds.
  static constexpr double kRateSampleSeconds = 1.0;
  /// Shortest interval between two publications to the board, seconds (of the Progress's clock).
  static constexpr double kPublishSeconds = 1.0;

  Progress(std::string label, std::int64_t total, ProgressOptions options = {});
  /// Calls Finish().
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Adds `n` finished items (and `amount` of the optional second quantity); writes a line when
  /// it is due (see the file comment). Thread-safe; cheap when nothing is written.
  void Add(std::int64_t n = 1, double amount = 0.0);

  /// Ends the report: writes the end line (kLive: in place of the live line, then a newline;
  /// kLog: a log line) and publishes the final state. Idempotent.
  void Finish();

  /// The current line: "label: done/total unit (pct%), rate unit/s[, amount rate], elapsed
  /// H:MM:SS, ETA H:MM:SS" (rate: smoothed; ETA "?" while the rate is 0). Thread-safe.
  std::string Line() const;

  /// The end line: "label: done unit in H:MM:SS, mean rate unit/s[, amount rate]"; "done/total"
  /// and ", stopped early" when fewer than total items were done. Thread-safe.
  std::string EndLine() const;

  /// The smoothed rate now, items per second (the mean rate before the first sample; 0 at the
  /// start). Thread-safe.
  double Rate() const;

  /// Seconds left at Rate(); nullopt when the total is unknown or the rate is 0. Thread-safe.
  std::optional<double> EtaSeconds() const;

  std::int64_t done() const;
  /// Seconds since construction.
  double elapsed() const;

  /// 1234567 -> "1,234,567".
  static std::string FormatCount(std::int64_t n);

  /// "M:SS" below an hour, "H:MM:SS" from one hour; negative or non-finite values give "?".
  static std::string FormatDuration(double seconds);

  /// A rate with at most 4 significant digits: 0.0123 -> "0.0123", 12.5 -> "12.5", 1234.5 -> "1,234".
  static std::string FormatRate(double per_second);

 private:
  double RateLocked(double now) const;
  std::optional<double> EtaLocked(double now) const;
  std::string LineLocked(double now) const;
  std::string EndLineLocked(double now) const;
  void Sample(double now);
  void PublishLocked(double now, bool finished);
  void Emit(const std::string& line, bool final_line);

  std::string label_;
  std::int64_t total_;
  ProgressOptions options_;
  bool live_ = false;
  mutable std::mutex mutex_;
  double start_ = 0.0;
  double last_output_ = 0.0;
  std::int64_t last_output_step_ = 0;  // kLog: floor(done / (log_fraction * total)) at the last line
  double last_publish_ = 0.0;
  double sample_time_ = 0.0;   // start of the current rate sample
  std::int64_t sample_done_ = 0;
  double rate_ = 0.0;          // smoothed rate up to sample_time_
  bool have_rate_ = false;
  std::int64_t done_ = 0;
  double amount_ = 0.0;
  bool finished_ = false;
};

}  // namespace asv::base
