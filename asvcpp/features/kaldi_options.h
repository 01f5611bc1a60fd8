// Kaldi-style option registration and config-file parsing for the feature options structs.
//
// Kaldi programs read `--config=mfcc.conf` files through ParseOptions::ReadConfigFile
// (kaldi-asr/kaldi: src/util/parse-options.cc). We accept the same files with the same rules:
//   * '#' starts a comment anywhere on a line (also trailing: `--low-freq=20 # default`);
//   * blank lines are skipped, spaces and tabs around a line and a value are trimmed;
//   * every other line is `--name=value`, or `--name` alone for a boolean meaning true;
//   * names are case-insensitive and '_' equals '-' (`--num_mel_bins` = `--num-mel-bins`);
//   * booleans are true/t/1 or false/f/0 (case-insensitive), as in ParseOptions::ToBool;
//   * a later line overrides an earlier one.
// Unlike Kaldi, every problem is a DataError naming "file:line" (Kaldi aborts the program).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "asvcpp/base/error.h"

namespace asv::features {

/// Maps Kaldi option names to fields of option structs; the structs' Register(KaldiOptions*)
/// methods fill it, then ParseConfigText/ReadConfigFile set the fields. Pointers must outlive
/// this object.
class KaldiOptions {
 public:
  /// Registers a field. `name` uses Kaldi's spelling ("num-mel-bins"); registering a name twice
  /// throws std::logic_error (a programming error).
  void Register(const std::string& name, bool* value, const std::string& help);
  void Register(const std::string& name, std::int32_t* value, const std::string& help);
  void Register(const std::string& name, float* value, const std::string& help);
  void Register(const std::string& name, std::string* value, const std::string& help);

  /// Applies one option. `name` as written after "--" (normalised here), `value` the text after
  /// '=' (`has_value` false for a bare `--name`). `where` ("file:line") prefixes messages.
  /// Throws DataError for unknown names and unparsable values.
  void Set(std::string_view name, std::string_view value, bool has_value, const std::string& where);

  /// Parses the text of a Kaldi config file (rules above). `path` is used in messages only.
  /// Throws DataError "path:line: ..." for a line not starting with "--", an unknown option or
  /// a bad value.
  void ParseConfigText(std::string_view text, const std::string& path);

  /// ParseConfigText on the contents of `path`. Throws DataError if it cannot be read.
  void ReadConfigFile(const std::string& path);

  /// One line per option: "  --name : help (type, default = current value)".
  std::string Help() const;

  /// Lower-cases and maps '_' to '-' (ParseOptions::NormalizeArgName).
  static std::string NormalizeName(std::string_view name);

 private:
  struct Entry {
    std::variant<bool*, std::int32_t*, float*, std::string*> target;
    std::string help;
  };
  std::map<std::string, Entry> entries_;
};

/// Reads options of type `Options` (a struct with Register(KaldiOptions*) and Validate()) from a
/// Kaldi config file, starting from the struct's defaults. Throws DataError naming the file
/// (and line for syntax problems) for unreadable files, unknown options, bad values and values
/// that Validate() rejects.
template <class Options>
Options ReadKaldiConfig(const std::string& path) {
  Options options;
  KaldiOptions registry;
  options.Register(&registry);
  registry.ReadConfigFile(path);
  try {
    options.Validate();
  } catch (const DataError& e) {
    throw DataError(path + ": " + e.what());
  }
  return options;
}

}  // namespace asv::features
