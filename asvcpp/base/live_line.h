// Between base::Progress and the logger: whether a live progress line (kLive, redrawn in place on
// stderr without a newline) is on the terminal now. log::Write clears it before a log line, so
// that the log line starts at the left margin; the next redraw shows the progress line again
// below it. Internal to asv_base.
#pragma once

namespace asv::base::internal {

/// Set by Progress when it draws a live line (true) and when it ends it with a newline (false).
/// Thread-safe.
void SetLiveLineShown(bool shown);

/// True while a live progress line is on stderr. Thread-safe.
bool LiveLineShown();

}  // namespace asv::base::internal
