#include "asvcpp/base/progress.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <unistd.h>

#include "asvcpp/base/live_line.h"
#include "asvcpp/base/log.h"

namespace asv::base {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The process-wide board of CurrentProgress().
struct Board {
  std::mutex mutex;
  std::optional<ProgressSnapshot> snapshot;
  std::uint64_t sequence = 0;
};

Board& TheBoard() {
  static Board board;
  return board;
}

std::atomic<bool> g_live_line_shown{false};

}  // namespace

namespace internal {
void SetLiveLineShown(bool shown) { g_live_line_shown.store(shown); }
bool LiveLineShown() { return g_live_line_shown.load(); }
}  // namespace internal

void SetProgressStage(const std::string& stage) {
  Board& board = TheBoard();
  std::lock_guard<std::mutex> lock(board.mutex);
  if (!board.snapshot) board.snapshot.emplace();
  board.snapshot->stage = stage;
  board.snapshot->sequence = ++board.sequence;
}

std::optional<ProgressSnapshot> CurrentProgress() {
  Board& board = TheBoard();
  std::lock_guard<std::mutex> lock(board.mutex);
  return board.snapshot;
}

void ClearProgressBoard() {
  Board& board = TheBoard();
  std::lock_guard<std::mutex> lock(board.mutex);
  board.snapshot.reset();
}

Progress::Progress(std::string label, std::int64_t total, ProgressOptions options)
    : label_(std::move(label)), total_(total), options_(std::move(options)) {
  if (!options_.clock) options_.clock = SteadySeconds;
  if (options_.mode == ProgressMode::kAuto) {
    if (log::Rank() != 0) {
      options_.mode = ProgressMode::kSilent;
    } else {
      options_.mode = ::isatty(STDERR_FILENO) ? ProgressMode::kLive : ProgressMode::kLog;
    }
  }
  live_ = options_.mode == ProgressMode::kLive;
  start_ = options_.clock();
  last_output_ = start_;
  sample_time_ = start_;
  std::lock_guard<std::mutex> lock(mutex_);
  PublishLocked(start_, false);
}

Progress::~Progress() {
  try {
    Finish();
  } catch (...) {  // a destructor must not throw; the report is cosmetic
  }
}

std::string Progress::FormatCount(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<std::int64_t>(std::llround(seconds));
  const std::int64_t h = total / 3600;
  const std::int64_t m = (total / 60) % 60;
  const std::int64_t s = total % 60;
  return h > 0 ? fmt::format("{}:{:02d}:{:02d}", h, m, s) : fmt::format("{}:{:02d}", m, s);
}

std::string Progress::FormatRate(double per_second) {
  if (!std::isfinite(per_second)) return "?";
  if (per_second >= 1000) return FormatCount(std::llround(per_second));
  if (per_second >= 0.1 || per_second <= 0) return fmt::format("{:.1f}", per_second);
  return fmt::format("{:.3f}", per_second);
}

double Progress::RateLocked(double now) const {
  // The sample in progress counts once it is kRateSampleSeconds long, as Sample() would count it.
  const double dt = now - sample_time_;
  if (dt >= kRateSampleSeconds) {
    const double current = static_cast<double>(done_ - sample_done_) / dt;
    if (!have_rate_) return current;
    return rate_ + (1.0 - std::exp(-dt / options_.rate_window_s)) * (current - rate_);
  }
  if (have_rate_) return rate_;
  const double elapsed = now - start_;
  return elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
}

std::optional<double> Progress::EtaLocked(double now) const {
  if (total_ <= 0) return std::nullopt;
  if (done_ >= total_) return 0.0;
  const double rate = RateLocked(now);
  if (!(rate > 0)) return std::nullopt;
  return static_cast<double>(total_ - done_) / rate;
}

void Progress::Sample(double now) {
  const double dt = now - sample_time_;
  if (dt < kRateSampleSeconds) return;
  rate_ = RateLocked(now);
  have_rate_ = true;
  sample_time_ = now;
  sample_done_ = done_;
}

std::string Progress::LineLocked(double now) const {
  const double elapsed = now - start_;
  std::string line = fmt::format("{}: {}", label_, FormatCount(done_));
  if (total_ > 0) {
    line += fmt::format("/{} {} ({:.1f}%)", FormatCount(total_), options_.unit,
                        100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  } else {
    line += " " + options_.unit;
  }
  if (elapsed > 0) {
    line += fmt::format(", {} {}/s", FormatRate(RateLocked(now)), options_.unit);
    if (!options_.amount_rate_suffix.empty()) {
      line += fmt::format(", {:.1f}{}", amount_ / elapsed, options_.amount_rate_suffix);
    }
  }
  line += ", elapsed " + FormatDuration(elapsed);
  if (total_ > 0 && done_ < total_) {
    const auto eta = EtaLocked(now);
    line += ", ETA " + (eta ? FormatDuration(*eta) : std::string("?"));
  }
  return line;
}

std::string Progress::EndLineLocked(double now) const {
  const double elapsed = now - start_;
  const bool early = total_ > 0 && done_ < total_;
  std::string line = fmt::format("{}: {}{} {} in {}", label_, FormatCount(done_),
                                 early ? "/" + FormatCount(total_) : std::string(), options_.unit,
                                 FormatDuration(elapsed));
  if (elapsed > 0) {
    line += fmt::format(", mean {} {}/s", FormatRate(static_cast<double>(done_) / elapsed), options_.unit);
    if (!options_.amount_rate_suffix.empty()) {
      line += fmt::format(", {:.1f}{}", amount_ / elapsed, options_.amount_rate_suffix);
    }
  }
  if (early) line += ", stopped early";
  return line;
}

void Progress::PublishLocked(double now, bool finished) {
  if (!options_.publish) return;
  last_publish_ = now;
  Board& board = TheBoard();
  const double rate = RateLocked(now);
  const auto eta = EtaLocked(now);
  std::lock_guard<std::mutex> lock(board.mutex);
  if (!board.snapshot) board.snapshot.emplace();
  ProgressSnapshot& s = *board.snapshot;
  s.what = label_;
  s.done = done_;
  s.total = total_;
  s.unit = options_.unit;
  s.rate = finished ? (now > start_ ? static_cast<double>(done_) / (now - start_) : 0.0) : rate;
  s.eta_seconds = eta;
  s.finished = finished;
  s.sequence = ++board.sequence;
}

void Progress::Emit(const std::string& line, bool final_line) {
  if (options_.sink) {
    options_.sink(line);
    return;
  }
  if (live_) {
    // "\r" + clear to end of line keeps one line on the terminal; the newline comes at Finish.
    const std::string text = "\r" + line + "\033[K" + (final_line ? "\n" : "");
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
    internal::SetLiveLineShown(!final_line);
  } else {
    ASV_LOG(Info, "{}", line);
  }
}

void Progress::Add(std::int64_t n, double amount) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  amount_ += amount;
  if (finished_) return;
  const double now = options_.clock();
  Sample(now);
  if (now - last_publish_ >= kPublishSeconds) PublishLocked(now, false);
  if (options_.mode == ProgressMode::kSilent) return;
  bool due = false;
  if (live_) {
    due = now - last_output_ >= options_.redraw_interval_s;
  } else {
    // The end line reports the last items; a line for them would say the same.
    if (total_ > 0 && done_ >= total_) return;
    due = now - last_output_ >= options_.log_interval_s;
    if (total_ > 0 && options_.log_fraction > 0) {
      const double step = options_.log_fraction * static_cast<double>(total_);
      const auto k = static_cast<std::int64_t>(std::floor(static_cast<double>(done_) / step));
      if (k > last_output_step_) due = true;
    }
  }
  if (!due) return;
  last_output_ = now;
  if (total_ > 0 && options_.log_fraction > 0) {
    last_output_step_ = static_cast<std::int64_t>(
        std::floor(static_cast<double>(done_) / (options_.log_fraction * static_cast<double>(total_))));
  }
  // Emitting under the lock keeps lines in order; output is rare (bounded frequency).
  Emit(LineLocked(now), false);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  const double now = options_.clock();
  PublishLocked(now, true);
  if (options_.mode != ProgressMode::kSilent) Emit(EndLineLocked(now), true);
}

std::string Progress::Line() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return LineLocked(options_.clock());
}

std::string Progress::EndLine() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return EndLineLocked(options_.clock());
}

double Progress::Rate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return RateLocked(options_.clock());
}

std::optional<double> Progress::EtaSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return EtaLocked(options_.clock());
}

std::int64_t Progress::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

double Progress::elapsed() const {
  return options_.clock() - start_;
}

}  // namespace asv::base
