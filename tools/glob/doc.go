// Package glob compiles nika:glob patterns (LANGUAGE.md §7.3) and walks the tree below their
// root, for nika:glob and nika:grep. The syntax and its tokens are spec/catalog's (ParseGlob,
// the one tokenizer, which the static check also uses); this package decides what they match
// on disk. Permits are not its business: the caller's callbacks consult tools/fsgate.
//
// A pattern is split into its literal root — the leading segments with no `*`, `?`, `[`, `{`
// (nor an escaped `/`), the last segment excepted — and the rest. The root is where the walk
// starts: nothing above or beside it is ever read. The rest is compiled to one RE2 expression
// over the path below the root, braces becoming alternations (so `{a,b}{c,d}…` never expands
// exponentially). Paths are matched with NUL, which no file name holds, as the separator, so
// `*`, `?` and classes can never cross a `/`, even a class such as `[!a]` or `[+-0]` that
// contains it.
//
// Decisions where the text is silent:
//   - `/…` is absolute and `~`, `~/…` are under the home directory (as for paths): outputs are
//     then absolute. Anything else is relative to the run directory and outputs are relative
//     to it too. Outputs are clean: `./src/*.go` gives `src/a.go`, `a//b` is `a/b`.
//   - `.` and `..` are meaningful in the literal root only (`../lib/*.go`); after the first
//     wildcard segment they match nothing, as no listed name is `.` or `..`.
//   - `**` is a whole segment and matches zero or more segments (`a/**/b` matches `a/b`); at the
//     end (`a/**`) it matches every file below `a`, not `a` itself. As a brace alternative
//     (`{**,x}/y`) it matches one or more segments.
//   - A trailing `/` matches nothing: only regular files are listed.
//   - The walk's root itself is followed when it is a symlink (the user named it); below it,
//     symlinks to directories are never followed, and a symlink to a regular file is listed
//     (like nika:read, which follows it). Other file types (pipes, devices, sockets) are not.
//   - A missing or unreadable directory is skipped: a missing root gives nothing.
package glob
