// Typed exceptions of the asvcpp library and the process exit codes they map to.
//
// The library throws; only main() functions catch (see ExitCodeFor) and exit.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"

namespace asv {

/// Process exit codes used by asvrun and every other tool.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      ///< Unexpected internal error.
  kExitConfigError = 2,  ///< Bad config files, bad command line, unknown config names.
  kExitDataError = 3,    ///< Missing or malformed input data.
  kExitDbError = 4,      ///< Experiment database could not be read or written.
  kExitStageError = 5,   ///< A recipe stage failed.
};

/// Base of every asvcpp exception; carries the exit code main() should return.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

/// Configuration problems: every diagnostic of all files at once. what() is the rendered report
/// (file:line:column, source line, caret), one block per diagnostic up to the 50th error (of the
/// warnings and notes before it, the first 50), then "and N more errors and M more warnings" for
/// the rest, then the total; diagnostics() keeps them all.
class ConfigError : public Error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  /// Single problem without a source position (e.g. an unknown option value on the command line).
  explicit ConfigError(const std::string& message);
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// Missing, unreadable or malformed input data; the message names the file path.
class DataError : public Error {
 public:
  explicit DataError(const std::string& what) : Error(kExitDataError, what) {}
};

/// The experiment database could not be opened, migrated or written.
class DbError : public Error {
 public:
  explicit DbError(const std::string& what) : Error(kExitDbError, what) {}
};

/// The experiment database stayed locked by another process for longer than the writer would
/// wait (asvcpp/db/database.h: DatabaseOptions::retry_limit); nothing was written. A writer that
/// can wait longer (a training run's records) keeps the write and tries again later.
class DbBusyError : public DbError {
 public:
  explicit DbBusyError(const std::string& what) : DbError(what) {}
};

/// A recipe stage failed; the message names the stage.
class StageError : public Error {
 public:
  explicit StageError(const std::string& what) : Error(kExitStageError, what) {}
};

/// Exit code for any exception caught in main(): the typed code for asv::Error, kExitFailure
/// otherwise.
int ExitCodeFor(const std::exception& e) noexcept;

}  // namespace asv
