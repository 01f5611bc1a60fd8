// Child processes whose standard output is captured: Kaldi wav.scp pipes (and the tests' ffmpeg runs).
//
// Started with posix_spawn (no fork of a large, multi-threaded process image), pipes created
// close-on-exec so that concurrent calls from several threads never leak each other's pipe ends
// (a leaked write end would keep another reader from ever seeing end-of-file). Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace asv::audio {

/// What a finished child process left behind.
struct ProcessResult {
  std::string output;       ///< Everything the child wrote to its standard output.
  std::string error_tail;   ///< The last (at most 4 KiB) bytes it wrote to its standard error.
  int exit_status = -1;     ///< Exit status when it exited normally, else -1.
  int signal = 0;           ///< Number of the signal that killed it, else 0.

  /// True when the child exited normally with status 0.
  bool ok() const { return signal == 0 && exit_status == 0; }
  /// "exit status 1", "killed by signal 9 (Killed)", followed by ": <last stderr line(s)>" when
  /// the child wrote to stderr.
  std::string Describe() const;
};

/// Runs `argv[0]` (looked up in PATH when it has no '/') with arguments `argv[1..]`, no shell,
/// standard input from /dev/null; waits for it and returns its output. A non-zero exit status is
/// NOT an error here (see ProcessResult::ok). Throws DataError when the program cannot be started
/// (e.g. "ffmpeg: program not found in PATH") and std::invalid_argument for an empty argv.
ProcessResult RunProcess(const std::vector<std::string>& argv);

/// Runs `command` through `/bin/sh -c` (Kaldi's rxfilename pipes: "sox x.flac -t wav - |" minus
/// the '|'). Same contract as RunProcess.
ProcessResult RunShell(const std::string& command);

}  // namespace asv::audio
