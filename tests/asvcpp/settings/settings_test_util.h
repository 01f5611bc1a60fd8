// Helpers for the settings tests: assignments and resolved configs built in code, with the
// positions the parser would give them.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/settings/settings.h"
#include "parser/ast.h"
#include "parser/resolve.h"
#include "parser/value.h"
#include "recipes/shared/xvector/recipe_settings.h"

namespace asv::settings::testing {

using parser::Value;

/// The standard groups plus the voxceleb/xvector recipe group, as asvrun builds them.
struct XvectorSettings {
  Settings settings;
  recipes::xvector::RecipeSettings recipe;
  SettingsTree tree;

  XvectorSettings() {
    AddStandardGroups(tree, settings);
    tree.AddGroup("recipe", recipe);
  }
};

inline Value At(Value v, const std::string& file, int line, int column) {
  v.set_pos(SourcePos{file, line, column});
  return v;
}

inline parser::TypeExpr Type(std::string name, std::vector<parser::TypeExpr> args = {}) {
  parser::TypeExpr t;
  t.name = std::move(name);
  t.args = std::move(args);
  return t;
}

/// An assignment as the parser produces it from `text` (line `line` of `file`): key at column 1,
/// the annotation after ':' and the value after '=' located by searching `text`. The value keeps
/// positions already set on it (elements); its own position is set when it has none.
inline parser::Assignment MakeAssignment(const std::string& file, int line, const std::string& text, Value value,
                                         std::optional<parser::TypeExpr> annotation = std::nullopt) {
  parser::Assignment a;
  const auto eq = text.find('=');
  const auto colon = text.find(':');
  const auto key_end = colon != std::string::npos && colon < eq ? colon : eq;
  a.key = text.substr(0, text.find_last_not_of(' ', key_end - 1) + 1);
  a.pos = SourcePos{file, line, 1};
  a.source_line = text;
  if (annotation) {
    annotation->pos = SourcePos{file, line, static_cast<int>(text.find_first_not_of(' ', colon + 1)) + 1};
    a.annotation = annotation;
  }
  if (!value.pos().has_line()) {
    value.set_pos(SourcePos{file, line, static_cast<int>(text.find_first_not_of(' ', eq + 1)) + 1});
  }
  a.value = std::move(value);
  return a;
}

/// Adds an assignment to a resolved config with the provenance of `source` (and `block`).
inline void AddResolved(parser::ResolvedConfig& config, const parser::Assignment& a,
                        parser::Provenance::Source source, const std::string& block = {}) {
  parser::ResolvedValue rv;
  rv.value = a.value;
  rv.annotation = a.annotation;
  rv.provenance.source = source;
  rv.provenance.block = block;
  rv.provenance.pos = a.pos;
  rv.source_line = a.source_line;
  config.Set(a.key, rv);
}

/// The single error of `diags` rendered without its source lines ("file:line:col: error: msg").
inline std::string OnlyError(const Diagnostics& diags) {
  if (diags.all().size() != 1) return "expected one diagnostic, got:\n" + diags.Render();
  const Diagnostic& d = diags.all().front();
  const std::string where = d.pos.ToString();
  return (where.empty() ? "" : where + ": ") + (d.severity == Severity::kError ? "error: " : "warning: ") + d.message;
}

}  // namespace asv::settings::testing
