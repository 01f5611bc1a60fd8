// Binding config values into the typed settings, layer by layer:
//
//   compiled defaults < init config < run-config chain < --set group.field=value
//
// Typical use by asvrun (every function collects all problems into `diags`; none throws for bad
// input, and the caller stops with exit status 2 when diags.has_errors()):
//
//   ValidateAssignments(tree, init_file.assignments, diags);   // all files, all blocks, at once
//   ValidateRunConfigs(tree, run_file, diags);
//   ... per requested config, on a fresh tree:
//   BindConfig(tree, parser::ResolveInit(init_file), *parser::Resolve(run_file, name, diags), diags);
//   ApplyOverride(tree, "network.max_epochs=5", diags);        // each --set
//   Validate(tree, diags);                                      // cross-field checks, warnings
//
// Error messages (positions are the key's, the annotation's, or the offending value's):
//   unknown settings group 'netwrk' (did you mean 'network'?)
//   unknown field 'network.frame_layer_sise' (did you mean 'frame_layer_size'?)
//   annotation 'int' contradicts the type of network.bn_momentum (float)
//   network.max_epochs must be int, got bool True
//   recipe.training_datasets[1] must be str, got int 3
//   network.activation must be one of 'relu', 'lrelu', 'selu', got 'rleu' (did you mean 'relu'?)
#pragma once

#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/settings/settings_tree.h"
#include "parser/ast.h"
#include "parser/resolve.h"

namespace asv::settings {

/// Checks raw assignments (an init config, or one run-config block) against the tree: names
/// (with "did you mean"), annotations, types and per-field constraints. Changes nothing.
void ValidateAssignments(const SettingsTree& tree, const std::vector<parser::Assignment>& assignments,
                         Diagnostics& diags);

/// ValidateAssignments on every block of a run-configs file, requested or not, so that all
/// problems in the file are reported at once.
void ValidateRunConfigs(const SettingsTree& tree, const parser::RunConfigsFile& file, Diagnostics& diags);

/// What Bind does with a value it cannot bind (an unknown name, a bad value).
enum class BindProblems {
  kReport,  ///< Reports it into the diagnostics.
  kSkip,    ///< Skips it silently: ValidateAssignments or ValidateRunConfigs already reported it.
};

/// Binds every value of a resolved config (ResolveInit's or Resolve's) into the tree, in key
/// order, recording each field's provenance. Values with problems are not bound; they are
/// reported unless `problems` is kSkip (for configs resolved from assignments that were
/// validated, so that a file's problems are neither looked up nor reported twice).
/// Call once per layer: the init config first, then the run config.
/// "Did you mean" is worked out only for the first 50 errors of `diags` (the ones a ConfigError
/// shows in full), here and in ValidateAssignments, ValidateRunConfigs and ApplyOverride.
void Bind(SettingsTree& tree, const parser::ResolvedConfig& config, Diagnostics& diags,
          BindProblems problems = BindProblems::kReport);

/// Bind(init) then Bind(run): a run config's resolved values over the init config's.
void BindConfig(SettingsTree& tree, const parser::ResolvedConfig& init, const parser::ResolvedConfig& run,
                Diagnostics& diags);

/// Applies one command-line override `group.field=value` (the text after --set). The value is a
/// literal as in a config file; when it does not parse and the field holds a string (or an
/// optional string), the raw text is taken as the string, so `paths.output_folder=/tmp/x` works.
/// Diagnostics are located at "--set <arg>".
void ApplyOverride(SettingsTree& tree, const std::string& arg, Diagnostics& diags);

/// Cross-field checks of every group (e.g. network.max_clip_size >= network.min_clip_size,
/// reported at whichever of the two was set last), and a warning for every setting marked
/// NoEffect that a config or --set gave a non-default value.
void Validate(const SettingsTree& tree, Diagnostics& diags);

/// Resets every field to its default and its provenance to "default".
void ResetToDefaults(SettingsTree& tree);

}  // namespace asv::settings
