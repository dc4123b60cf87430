// Package fsgate is the runtime permits.fs gate of the file builtins (nika:read, write, edit,
// glob, grep) and of vision files (LANGUAGE.md §2.4, D38): it makes a user path absolute,
// resolves its symlinks, and matches it against the permits.fs.read or permits.fs.write globs.
//
// The subject is made absolute (relative to the run directory, `~` to the home directory) and
// cleaned, and its symlinks are resolved, before it is matched: a symlink inside a permitted
// tree that points outside it is outside. A path that does not exist yet resolves through its
// deepest existing ancestor (a dangling symlink is followed to its target), so a write cannot
// escape through a link either.
//
// Globs: a relative glob is anchored at the run directory, `/…` is absolute and `~/…` is
// anchored at the home directory. The anchor (run or home directory) has its own symlinks
// resolved, so a run directory reached through a link still matches; the glob text itself is
// taken literally. `*` and `?` match within one segment, a `**` segment spans any number of
// segments (zero included: `out/**` also covers `out` itself), `[…]` is a class (`[!…]` and
// `[^…]` negate; a class never matches `/`), `\` escapes the next character. A `**` inside a
// longer segment (`a**b`) matches like `*`. There is no negation: any matching glob admits.
//
// For a tree walk (nika:glob, nika:grep), Reach answers whether a directory can hold admitted
// files at all, so the walk never enters a tree no glob reaches, and WalkRoot refuses a root
// outside every glob. Refusals are NIKA-SEC-004 with details {path, resolved, gate}.
package fsgate
