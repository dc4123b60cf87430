// Package expr is nika's expression front end: the `${{ }}` placeholder
// scanner and the compilation of expressions with github.com/expr-lang/expr,
// patched with nika's semantics (LANGUAGE.md §4, DECISIONS.md D13, D14, D43).
//
// The package is a leaf: it imports nothing else from this module. It reports
// problems as values (ScanError, Issue, EvalError) carrying NIKA codes and byte
// offsets relative to its input; the caller (package spec, and the runtime)
// turns them into findings and errors with file positions.
//
// # Pipeline
//
// Compile parses the source with expr's parser and then:
//
//  1. analyses the raw tree: references to the namespace roots (Refs), unknown
//     names (NIKA-VAR-001), `now()`, malformed `has()`, chained comparisons
//     (D43), a `let` that redeclares a root or a function (NIKA-VAR-005);
//  2. rewrites the CEL-style compatibility forms before type checking
//     (`x.size()`, `x.contains(s)`, `x.startsWith(s)`, `x.endsWith(s)`,
//     `has(e.f)`, `null`) and turns `==`/`!=` into deep equality, which is
//     never a type error;
//  3. type-checks with expr's checker against the static types of the
//     environment (D13); a type error it proves is NIKA-VAR-005;
//  4. rewrites, using the types just computed, the operations whose run-time
//     behaviour nika defines differently from expr (D14): boolean operands of
//     `&&`, `||`, `!`, `?:` and of predicates, `in`, the string operators,
//     member access on values of unknown type, non-integral indexes; nodes
//     whose static type already proves the rule are left alone;
//  5. rewrites every predicate body to charge the evaluation's step budget
//     and to stop once the evaluation's context is done (budget.go: expr's
//     VM has neither);
//  6. compiles to expr bytecode (without expr's optimizer, whose folding
//     assumes expr's own semantics).
//
// Besides the D14 rules, `fromJSON` decodes numbers as LANGUAGE.md §4.3,
// `toJSON` renders canonical JSON (compact, sorted keys, no HTML escaping),
// and `keys`, `values` and `toPairs` return their results sorted by key so
// that evaluation is deterministic.
//
// The expr configuration (function table, builtins, limits) is built once,
// at package initialisation, and never mutated afterwards; each compilation
// works on its own shallow copy, so Compile and Program.Eval are safe for
// concurrent use (a Budget, which EvalBudget may share between evaluations,
// is not).
package expr
