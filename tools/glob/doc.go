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
//
// # Why the matcher and the walk are ours
//
// github.com/bmatcuk/doublestar/v4 (v4.10.4) was run against this package's tests and
// LANGUAGE.md §7.3's rules. It cannot take the place of either half:
//
//   - Its syntax is not nika's, so it cannot replace spec/catalog's tokenizer, and two parsers
//     would again give two verdicts: it accepts `a**b`, `***`, `[z-a]`, the empty pattern and
//     invalid UTF-8, which nika:glob refuses (NIKA-BUILTIN-GLOB-001).
//   - It matches differently: `src/**` matches `src` itself (here: only what is below it),
//     `{**,x}/y` matches `y` (here, `**` as an alternative is one or more segments), and a
//     class holding `/` crosses segments (`x[+-0]y` matches `x/y`).
//   - It matches braces by backtracking, exponentially: `{a,aa}` repeated 22 times then `c`,
//     against a name of 40 `a`s and a `d`, took 1.5 s for that one name, and 24 braces against
//     44 `a`s 11 s; the RE2 expression compiled here is linear in the name.
//   - Its walk (Glob, GlobWalk) goes through an fs.FS rooted at one directory, so it has no
//     `../lib/**` or absolute roots, no hook to keep it out of a directory that permits.fs
//     does not reach (nika:grep's EnterDir) and no context to stop it.
package glob
