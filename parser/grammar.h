// PEGTL grammar of the config language (README.md, "The config language"): one rule per line,
// every rule used under must<> has its message in the error table at the end of this file.
//
// The line structure (blank lines separating blocks, comment lines, headers versus assignments)
// is driven line by line by the Reader (reader.h, blocks.cc); each statement (a header, an
// assignment, a `--set` literal) is parsed with the rules below from its first character. Inside
// open brackets a value may continue over several lines (Python's implicit line joining) but
// never across a blank line.
//
// Values and type annotations are recursive rules, one level of C++ recursion per bracket: the
// actions (actions.cc) stop at 256 levels with an error, so no input can exhaust the stack. After
// an error, the Reader (reader.cc) skips the rest of the statement with a loop, not with a rule.
//
// Errors throw no exception: the control class records the first failure in the state
// (SyntaxContext::failed) and from then on every rule fails at once and no action runs, so the
// parse returns within a few calls. Unwinding an exception through the grammar's frames cost
// ~25,000 instructions per error, most of the time of a file with many syntax errors.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/analyze_traits.hpp>

namespace asv::parser::grammar {

using namespace tao::pegtl;  // NOLINT(google-build-using-namespace): the PEGTL DSL, this namespace only.

// Reports Rule's error (the control's raise, which records it) where it stands and fails: PEGTL's
// raise<Rule> requires a raise that throws.
template <typename Rule>
struct report {
  using rule_t = report;
  using subs_t = empty_list;
  template <apply_mode, rewind_mode, template <typename...> class Action, template <typename...> class Control,
            typename ParseInput, typename... States>
  static bool match(ParseInput& in, States&&... st) {
    Control<Rule>::raise(static_cast<const ParseInput&>(in), st...);
    return false;
  }
};

// ---- Whitespace, comments and line breaks ------------------------------------------------------
struct sp : one<' ', '\t'> {};
struct ws : star<sp> {};
struct comment : seq<one<'#'>, until<at<eolf>>> {};
struct blank_rest : seq<ws, eolf> {};                      // the rest of the line is empty
struct continuation : seq<eol, not_at<blank_rest>> {};     // line break inside brackets
struct bws : star<sor<sp, comment, continuation>> {};      // whitespace inside brackets

// ---- Names -------------------------------------------------------------------------------------
struct ident_first : ranges<'a', 'z', 'A', 'Z', '_'> {};
struct ident_other : ranges<'a', 'z', 'A', 'Z', '0', '9', '_'> {};
struct identifier : seq<ident_first, star<ident_other>> {};
struct config_name : seq<ident_first, star<sor<ident_other, one<'-'>>>> {};

// ---- Block header: `name` or `name < parent1 < parent2` ----------------------------------------
struct header_name : config_name {};
struct parent_name : config_name {};
struct parent : seq<one<'<'>, ws, must<parent_name>, ws> {};
struct header_end : eolf {};
struct header : seq<must<header_name>, ws, star<parent>, opt<comment>, must<header_end>> {};

// Probes (no must<>, no actions) that classify a line before it is parsed.
struct header_like : seq<ws, config_name, ws, sor<eolf, one<'<', '#'>>> {};
struct assignment_like : seq<ws, identifier, sor<one<'.'>, seq<ws, one<'=', ':'>>>> {};

// ---- Type annotations: `int`, `Tuple[int, ...]`, `typing.Optional[List[str]]` ------------------
struct type_expr;
struct type_name : seq<identifier, star<one<'.'>, identifier>> {};
struct type_ellipsis : string<'.', '.', '.'> {};
struct type_arg : sor<type_ellipsis, type_expr> {};
struct type_open : one<'['> {};
struct type_close : one<']'> {};
struct type_comma : one<','> {};
struct type_args : seq<type_arg, ws, star<type_comma, ws, not_at<type_close>, must<type_arg>, ws>, opt<type_comma, ws>> {};
struct type_expr : seq<type_name, opt<ws, type_open, ws, must<type_args>, ws, must<type_close>>> {};
struct annotation : seq<one<':'>, ws, must<type_expr>> {};

// ---- Scalar literals ---------------------------------------------------------------------------
struct none_lit : keyword<'N', 'o', 'n', 'e'> {};
struct true_lit : keyword<'T', 'r', 'u', 'e'> {};
struct false_lit : keyword<'F', 'a', 'l', 's', 'e'> {};

struct sign : one<'+', '-'> {};
struct digits : seq<digit, star<opt<one<'_'>>, digit>> {};
struct exponent : seq<one<'e', 'E'>, opt<sign>, digits> {};
// Python's floatnumber: `1.5`, `.5`, `1.`, each with an optional exponent, or `1e5`. Written so
// that the leading digits are matched once (number tries a float first, then an int).
struct fraction : seq<one<'.'>, opt<digits>, opt<exponent>> {};
struct float_body : sor<seq<digits, sor<fraction, exponent>>, seq<one<'.'>, digits, opt<exponent>>> {};
struct hex_int : seq<one<'0'>, one<'x', 'X'>, plus<opt<one<'_'>>, xdigit>> {};
struct oct_int : seq<one<'0'>, one<'o', 'O'>, plus<opt<one<'_'>>, range<'0', '7'>>> {};
struct bin_int : seq<one<'0'>, one<'b', 'B'>, plus<opt<one<'_'>>, one<'0', '1'>>> {};
struct dec_int : sor<seq<range<'1', '9'>, star<opt<one<'_'>>, digit>>, seq<one<'0'>, star<opt<one<'_'>>, one<'0'>>>> {};
struct int_body : sor<hex_int, oct_int, bin_int, dec_int> {};
struct float_lit : seq<opt<sign>, ws, float_body> {};
struct int_lit : seq<opt<sign>, ws, int_body> {};
struct number : sor<float_lit, int_lit> {};

// int(x) and float(x) around a number literal (e.g. `int(100e6)`), nothing else is callable.
struct int_kw : keyword<'i', 'n', 't'> {};
struct float_kw : keyword<'f', 'l', 'o', 'a', 't'> {};
struct conv_open : one<'('> {};
struct conv_arg : number {};
struct conv_close : one<')'> {};
struct conv_call : seq<sor<int_kw, float_kw>, ws, conv_open, bws, must<conv_arg>, bws, must<conv_close>> {};

// Strings: '...' or "..." on one line, optional r/R prefix; escapes are decoded by the action.
struct raw_prefix : one<'r', 'R'> {};
struct escape : seq<one<'\\'>, not_one<'\r', '\n'>> {};
template <char Q>
struct str_char : sor<escape, not_one<Q, '\\', '\r', '\n'>> {};
struct sq_open : seq<opt<raw_prefix>, one<'\''>> {};
struct sq_close : one<'\''> {};
struct sq_string : seq<sq_open, star<str_char<'\''>>, must<sq_close>> {};
struct dq_open : seq<opt<raw_prefix>, one<'"'>> {};
struct dq_close : one<'"'> {};
struct dq_string : seq<dq_open, star<str_char<'"'>>, must<dq_close>> {};
struct string_lit : sor<sq_string, dq_string> {};

// ---- Containers (elements separated by commas, trailing comma allowed) -------------------------
struct value;
struct comma : one<','> {};

struct list_open : one<'['> {};
struct list_close : one<']'> {};
struct list_items : seq<must<value>, bws, star<comma, bws, not_at<list_close>, must<value>, bws>, opt<comma, bws>, must<list_close>> {};
struct list_lit : seq<list_open, bws, sor<list_close, list_items>> {};

// `()` and `(1,)` are tuples, `(1)` is just 1.
struct paren_open : one<'('> {};
struct paren_close : one<')'> {};
struct paren_comma : one<','> {};
struct paren_items : seq<must<value>, bws, star<paren_comma, bws, not_at<paren_close>, must<value>, bws>, opt<paren_comma, bws>, must<paren_close>> {};
struct paren_lit : seq<paren_open, bws, sor<paren_close, paren_items>> {};

struct dict_open : one<'{'> {};
struct dict_close : one<'}'> {};
struct dict_colon : one<':'> {};
struct dict_key : seq<value> {};
struct dict_entry : seq<must<dict_key>, bws, must<dict_colon>, bws, must<value>> {};
struct dict_items : seq<dict_entry, bws, star<comma, bws, not_at<dict_close>, dict_entry, bws>, opt<comma, bws>, must<dict_close>> {};
struct dict_lit : seq<dict_open, bws, sor<dict_close, dict_items>> {};

// A name where a value belongs (`foo`, `torch.float`, `true`) is reported with its own message.
struct bare_name : identifier {};
struct name_value : seq<at<bare_name>, report<bare_name>> {};

struct value : sor<none_lit, true_lit, false_lit, conv_call, number, string_lit, paren_lit, list_lit, dict_lit, name_value> {};

// ---- Statements --------------------------------------------------------------------------------
struct key_group : identifier {};
struct key_field : identifier {};
struct key_dot : seq<one<'.'>, must<key_field>> {};
struct key : seq<key_group, must<key_dot>, star<key_dot>> {};
struct equals : one<'='> {};
struct line_end : eolf {};
struct assignment : seq<must<key>, ws, opt<annotation>, ws, must<equals>, ws, must<value>, ws, opt<comment>, must<line_end>> {};

// The value of `--set group.field=VALUE`.
struct literal_end : seq<opt<eol>, eof> {};
struct literal : seq<ws, must<value>, ws, must<literal_end>> {};

// ---- Error messages ----------------------------------------------------------------------------
template <typename Rule>
inline constexpr const char* error_message = nullptr;

// clang-format off
template <> inline constexpr auto error_message<header_name> = "expected a config header: a name, or 'name < parent < ...' (names are letters, digits, '_' and '-')";
template <> inline constexpr auto error_message<parent_name> = "expected the name of a parent config after '<'";
template <> inline constexpr auto error_message<header_end> = "expected '<' and a parent config name, or the end of the line, after the config name";
template <> inline constexpr auto error_message<type_expr> = "expected a type after ':' (e.g. int, str, List[int], Optional[str])";
template <> inline constexpr auto error_message<type_args> = "expected a type after '[' (e.g. int, str, ...)";
template <> inline constexpr auto error_message<type_arg> = "expected a type after ','";
template <> inline constexpr auto error_message<type_close> = "expected ',' or ']' in the type";
template <> inline constexpr auto error_message<conv_arg> = "expected a number literal inside int(...) or float(...); nothing else is evaluated";
template <> inline constexpr auto error_message<conv_close> = "expected ')' after the number of int(...) or float(...)";
template <> inline constexpr auto error_message<sq_close> = "unterminated string (missing closing ')";
template <> inline constexpr auto error_message<dq_close> = "unterminated string (missing closing \")";
template <> inline constexpr auto error_message<value> = "expected a literal value (None, True, False, a number, a quoted string, a tuple, a list or a dict)";
template <> inline constexpr auto error_message<list_close> = "expected ',' or ']' after the list element";
template <> inline constexpr auto error_message<paren_close> = "expected ',' or ')' after the tuple element";
template <> inline constexpr auto error_message<dict_key> = "expected a dict key (a literal value) or '}'";
template <> inline constexpr auto error_message<dict_colon> = "expected ':' after the dict key";
template <> inline constexpr auto error_message<dict_close> = "expected ',' or '}' after the dict entry";
template <> inline constexpr auto error_message<bare_name> = "expected a literal value, found the name '{}'; strings need quotes, and names are not evaluated";
template <> inline constexpr auto error_message<key> = "expected an assignment 'group.field = value'";
template <> inline constexpr auto error_message<key_dot> = "expected '.' and a field name: settings are assigned as 'group.field = value'";
template <> inline constexpr auto error_message<key_field> = "expected a field name after '.' (no spaces around '.')";
template <> inline constexpr auto error_message<equals> = "expected '=' after the setting name";
template <> inline constexpr auto error_message<line_end> = "expected a literal value, found an expression: operators, names and calls are not evaluated (write the resulting literal)";
template <> inline constexpr auto error_message<literal_end> = "expected a literal value, found an expression: operators, names and calls are not evaluated (write the resulting literal)";
// clang-format on

// How a failure is turned into a message (see ThrowSyntaxError).
enum class ErrorKind {
  kPlain,               ///< The message as is, at the failure position.
  kBareName,            ///< '{}' in the message is replaced by the name at the failure position.
  kUnterminatedString,  ///< Reported at the opening quote.
};
template <typename Rule>
inline constexpr ErrorKind error_kind = ErrorKind::kPlain;
template <> inline constexpr ErrorKind error_kind<bare_name> = ErrorKind::kBareName;
template <> inline constexpr ErrorKind error_kind<sq_close> = ErrorKind::kUnterminatedString;
template <> inline constexpr ErrorKind error_kind<dq_close> = ErrorKind::kUnterminatedString;

/// Open constructs at the point of failure; the parser state derives from this so that errors at
/// a blank line or the end of the file can point at the bracket or quote that was left open. Also
/// the first failure of a statement's parse: the grammar reports errors here, not by throwing.
struct SyntaxContext {
  struct Open {
    char bracket;
    int line;
    int column;
  };
  std::vector<Open> open_brackets;  ///< Innermost last.
  int quote_line = 0;               ///< Opening quote of the string being read.
  int quote_column = 0;

  /// False: a failure records only where it is and where parsing goes on, not its message (the
  /// message of an error that will not be shown costs more than the parse).
  bool want_message = true;
  bool failed = false;  ///< A failure is recorded; every rule now fails and no action runs.
  std::string message;  ///< The failure's message (empty unless want_message).
  int line = 0;         ///< The failure's 1-based line:column (byte column).
  int column = 0;
  /// When non-zero, the line where parsing should go on (an unclosed bracket swallowed it).
  int resume_line = 0;

  /// Records a failure unless one is recorded already (the first one counts). `make_message` is
  /// called for the text only when want_message.
  template <typename MakeMessage>
  void RecordFailure(int at_line, int at_column, MakeMessage&& make_message, int resume = 0) {
    if (failed) return;
    failed = true;
    line = at_line;
    column = at_column;
    resume_line = resume;
    if (want_message) message = make_message();
  }
  void ClearFailure() {
    failed = false;
    message.clear();
    line = column = resume_line = 0;
  }
};

/// A bad token (parser/tokens.h), a value that is not a valid dict key or a nesting too deep, at
/// 1-based line:column (byte column), as the actions throw it; the control turns it into the
/// recorded failure (SyntaxContext). The grammar's own failures throw nothing.
class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(const std::string& message, int line, int column)
      : std::runtime_error(message), line_(line), column_(column) {}
  int line() const noexcept { return line_; }
  int column() const noexcept { return column_; }

 private:
  int line_;
  int column_;
};

/// Records the failure of a must<> rule in `context` (SyntaxContext::RecordFailure): its position, where
/// parsing goes on, and (when wanted) its message. `current`..`end` is the unread input at the
/// failure position `line`:`column`.
void RecordSyntaxError(const char* message, ErrorKind kind, int line, int column, const char* current, const char* end,
                       SyntaxContext& context);

/// PEGTL control class: must<> failures are recorded in the state (a SyntaxContext) with the
/// message from the table; once one is, every rule fails without reading and no action runs.
template <typename Rule>
struct control : normal<Rule> {
  template <apply_mode A, rewind_mode M, template <typename...> class Action, template <typename...> class Control,
            typename ParseInput, typename State>
  [[nodiscard]] static bool match(ParseInput& in, State& state) {
    if (state.failed) return false;
    return normal<Rule>::template match<A, M, Action, Control>(in, state);
  }

  template <typename ParseInput, typename State>
  static void raise(const ParseInput& in, State& state) {
    static_assert(error_message<Rule> != nullptr, "every rule under must<> needs an error_message");
    if (state.failed) return;
    const auto& it = in.iterator();
    RecordSyntaxError(error_message<Rule>, error_kind<Rule>, static_cast<int>(it.line), static_cast<int>(it.column),
                      in.current(), in.end(), static_cast<SyntaxContext&>(state));
  }

  // An action that finds a bad token throws SyntaxError (rare: the exception leaves one or two
  // frames); it becomes the recorded failure.
  template <template <typename...> class Action, typename Iterator, typename ParseInput, typename State>
  static auto apply(const Iterator& begin, const ParseInput& in, State& state)
      -> decltype(normal<Rule>::template apply<Action>(begin, in, state)) {
    if (state.failed) return;
    try {
      normal<Rule>::template apply<Action>(begin, in, state);
    } catch (const SyntaxError& e) {
      state.RecordFailure(e.line(), e.column(), [&] { return std::string(e.what()); });
    }
  }

  template <template <typename...> class Action, typename ParseInput, typename State>
  static auto apply0(const ParseInput& in, State& state) -> decltype(normal<Rule>::template apply0<Action>(in, state)) {
    if (state.failed) return;
    try {
      normal<Rule>::template apply0<Action>(in, state);
    } catch (const SyntaxError& e) {
      state.RecordFailure(e.line(), e.column(), [&] { return std::string(e.what()); });
    }
  }
};

}  // namespace asv::parser::grammar

// For pegtl::analyze (the grammar's tests): report<R> never consumes input, as raise<R>.
namespace tao::pegtl {
template <typename Name, typename Rule>
struct analyze_traits<Name, asv::parser::grammar::report<Rule>> : analyze_any_traits<> {};
}  // namespace tao::pegtl
