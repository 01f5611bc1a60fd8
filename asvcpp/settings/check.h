// Checking config values against settings fields: types, annotations and constraints.
//
// Binding rules (reference section 1.2 types, made strict):
//   int    accepts int literals only (True/False are rejected although Python bools are ints)
//   float  accepts int or float literals
//   str    accepts strings only; bool accepts True/False only
//   Optional[X] accepts None or what X accepts
//   List[X], Tuple[X, ...] accept list or tuple literals; every element is checked and an error
//          points at the element
//   Dict[str, X] accepts dict literals with str keys; every value is checked
// A type annotation (`network.frame_layer_size: int = 512`) must agree with the field's type
// (`X` is fine for an Optional[X] field; `Tuple[int]`, `Tuple[int, ...]` and `tuple` all agree
// with a tuple field) and the value must match the annotation (a list literal does not match a
// Tuple annotation, None does not match `int`).
#pragma once

#include <string>
#include <string_view>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/settings/settings_tree.h"
#include "asvcpp/settings/types.h"
#include "parser/value.h"

namespace asv::settings {

/// Where an assignment came from, for diagnostics.
struct Site {
  SourcePos pos;            ///< Position of the key (or, for --set, the argument as file name).
  std::string_view source_line;  ///< Text of the line at `pos`; must outlive the Site.
  bool value_positions = true;  ///< Whether positions stored in the values are meaningful.

  /// Position of `v` when known, else the key position.
  SourcePos At(const parser::Value& v) const {
    return value_positions && v.pos().has_line() ? v.pos() : pos;
  }
};

/// Checks `value` against `type`, reporting every mismatch as "<what> must be <type>, got <kind>
/// <repr>" at the offending value or element ("<what>[2]", "<what>['key']"). Returns true when
/// the value can be converted by SettingTraits::FromValue.
bool CheckType(const TypeDesc& type, const parser::Value& value, const std::string& what, const Site& site,
               Diagnostics& diags);

/// Whether annotation `annotation` agrees with a field of type `type`.
bool AnnotationAgrees(const parser::TypeExpr& annotation, const TypeDesc& type);

/// Whether `value` matches `annotation` (Python typing semantics, with `Tuple[X]` read as a
/// homogeneous tuple as ASVtorch writes it).
bool MatchesAnnotation(const parser::TypeExpr& annotation, const parser::Value& value);

/// Checks a type-correct value against the field's range, choices, unsupported values and
/// custom checks. Returns true when nothing was reported.
bool CheckConstraints(const Field& field, const parser::Value& value, const Site& site, Diagnostics& diags);

/// The complete check of one assignment to `field`: annotation agreement (error at the
/// annotation), type, annotation match (error at the value), constraints. Returns true when the
/// value may be bound.
bool CheckAssignment(const Field& field, const parser::TypeExpr* annotation, const parser::Value& value,
                     const Site& site, Diagnostics& diags);

}  // namespace asv::settings
