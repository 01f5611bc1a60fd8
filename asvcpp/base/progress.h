// Progress of a long loop: items done of a total, rate, elapsed time and ETA.
//
// On a terminal (stderr is a tty) a live line is redrawn in place at most every
// `redraw_interval_s`; otherwise (log files, CI) a plain log line is written every
// `log_interval_s`, so logs stay readable:
//
//   [asvcpp I 12:00:10] voxceleb1: 1,200/4,874 utt (24.6%), 118.3 utt/s, 97.2x real time, elapsed 0:10, ETA 0:31
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
#include <string>

namespace asv::base {

/// How a Progress reports.
enum class ProgressMode {
  kAuto,    ///< kLive when stderr is a terminal, kLog otherwise.
  kLive,    ///< One line redrawn in place ("\r" + line + clear to end of line) on stderr.
  kLog,     ///< A log line (Info) every log_interval_s.
  kSilent,  ///< Nothing is written; Line() still works.
};

struct ProgressOptions {
  std::string unit = "items";  ///< Name of an item in the line ("utt", "batches").
  ProgressMode mode = ProgressMode::kAuto;
  double log_interval_s = 10.0;    ///< kLog: seconds between lines.
  double redraw_interval_s = 0.2;  ///< kLive: minimum seconds between redraws.
  /// Optional second quantity summed by Add(n, amount), shown as its rate with this suffix, e.g.
  /// amount = seconds of audio and suffix "x real time" gives "97.2x real time". Empty: not shown.
  std::string amount_rate_suffix;
  /// Monotonic clock in seconds; default std::chrono::steady_clock. Injected by tests.
  std::function<double()> clock;
  /// Receives each line instead of stderr/the log (kLive lines without "\r"). Injected by tests.
  std::function<void(const std::string&)> sink;
};

/// Thread-safe progress reporter for `total` items (total <= 0: unknown, no percentage/ETA).
class Progress {
 public:
  Progress(std::string label, std::int64_t total, ProgressOptions options = {});
  /// Calls Finish().
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Adds `n` finished items (and `amount` of the optional second quantity); writes a line when
  /// the interval has passed. Thread-safe; cheap when nothing is written.
  void Add(std::int64_t n = 1, double amount = 0.0);

  /// Ends the report: kLive redraws the line a last time and ends it with a newline; kLog writes
  /// nothing more (callers log their own summary). Idempotent.
  void Finish();

  /// The current line: "label: done/total unit (pct%), rate unit/s[, amount rate], elapsed
  /// H:MM:SS, ETA H:MM:SS". Thread-safe.
  std::string Line() const;

  std::int64_t done() const;
  /// Seconds since construction.
  double elapsed() const;

  /// 1234567 -> "1,234,567".
  static std::string FormatCount(std::int64_t n);

  /// "M:SS" below an hour, "H:MM:SS" from one hour; negative or non-finite values give "?".
  static std::string FormatDuration(double seconds);

 private:
  std::string LineLocked(double now) const;
  void Emit(const std::string& line, bool final_line);

  std::string label_;
  std::int64_t total_;
  ProgressOptions options_;
  bool live_ = false;
  mutable std::mutex mutex_;
  double start_ = 0.0;
  double last_output_ = 0.0;
  std::int64_t done_ = 0;
  double amount_ = 0.0;
  bool finished_ = false;
};

}  // namespace asv::base
