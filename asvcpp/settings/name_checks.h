// Checks of settings whose strings become names on disk, added to fields with Field::Check so
// that a bad value is an error when the config is read (file:line:column, or the --set argument),
// not a failure hours later:
// - plain names: dataset names, trial-list names and trial-list file names become single path
//   components under paths.output_folder; "../../victim" would read and write outside it;
// - path text: folders and files may be any path the user chooses, but not text that breaks the
//   list files and Kaldi specifiers they are written into (control characters, and for the
//   output folders a ',' that splits a Kaldi wspecifier "ark,scp:A,B").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "asvcpp/settings/settings_tree.h"

namespace asv::settings {

/// Why `name` is not a plain name, or nullopt when it is one: 1 to 255 bytes of letters, digits,
/// '_', '-', '+' and '.', not starting with '.' (so never "." or "..").
std::optional<std::string> PlainNameProblem(std::string_view name);

/// Where the names of a field's value are.
enum class NamesIn {
  kStrings,   ///< The string itself, or every string of a list/tuple/optional.
  kDictKeys,  ///< The keys of a dict.
  kDictKeysAndValues,  ///< Keys and string values of a dict.
};

/// A Field check: every name of the value (see NamesIn) is a plain name. `what` says what the
/// names are, e.g. "dataset name". Message: "<key>: dataset name '../x' is not a plain name: ...".
Field::CheckFn PlainNames(std::string key, std::string what, NamesIn where);

/// A Field check for a path setting (a string, or the string values of a dict): no control
/// characters (newline, tab, NUL, ...); with `kaldi_specifier`, no ',' either (the path is put
/// into Kaldi rspecifiers and wspecifiers); with `non_empty`, not "".
Field::CheckFn PathText(std::string key, bool kaldi_specifier, bool non_empty);

/// Adds PathText to every paths.* field of `tree` (output_folder, feature_and_list_folder and
/// system_folder as Kaldi-specifier paths; output_folder non-empty) and PlainNames to the keys of
/// paths.datasets. Throws std::logic_error when the tree has no paths group.
void AddPathChecks(SettingsTree& tree);

}  // namespace asv::settings
