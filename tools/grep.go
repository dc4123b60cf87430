package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/fsgate"
	"github.com/nikahq/nika/tools/glob"
)

// nika:grep (LANGUAGE.md §7.3).
//
// Decisions where the text is silent:
//   - Lines end at `\n`; a `\r` before it is not part of the line (CRLF files match like LF
//     ones). The regexp is matched against each line without its ending, unanchored.
//   - Memory is bounded: a file is read through a 64 KiB buffer, and a line longer than
//     grepMaxLine (1 MiB) is matched and reported by its first 1 MiB only (the rest of that
//     line is skipped, the following lines keep their numbers).
//   - A file is binary, and skipped, when its first 8 KiB hold a NUL byte — also when it is
//     the `path` given. Invalid UTF-8 in a reported line becomes U+FFFD.
//   - Paths are styled as nika:glob's: a relative `path` gives paths relative to the run
//     directory (`./src/` gives `src/a.go`; `.` gives `a.go`), an absolute or `~` one gives
//     absolute paths. A file given directly is reported under its own (cleaned) path.
//   - A directory is searched recursively with the walk of nika:glob: directory symlinks
//     below it are not followed, symlinks to regular files are searched, pipes and devices
//     are not, and unreadable files and directories are skipped. The `path` itself is
//     followed when it is a symlink.
//   - Under permits, a file given directly must match permits.fs.read, like nika:read; a
//     directory must be reachable by a fs.read glob (as a glob root), and only its files
//     that fs.read admits are searched. Both are checked before the existence of `path`, so
//     GREP-002 never tells whether something exists outside the permits.
//   - A `path` that is neither a regular file nor a directory is GREP-002; a file given
//     directly that cannot be read is NIKA-INVOKE-003.

const (
	codeGrepRegexp = spec.CodeBuiltinGrepRegexp
	codeGrepPath   = spec.CodeBuiltinGrepPath

	grepMaxLine    = 1 << 20 // the longest line matched and reported whole
	grepBinaryScan = 8 << 10 // the prefix searched for a NUL byte
	grepBufSize    = 64 << 10
)

// grepHit is one matching line.
type grepHit struct {
	path  string
	line  int
	match string
}

// runGrep searches a file, or a directory recursively, for lines matching an RE2 pattern.
// Output: [{path, line, match}] sorted by path, then line.
func runGrep(ctx context.Context, in *invocation) (any, error) {
	pattern, err := in.str("pattern", "")
	if err != nil {
		return nil, err
	}
	p, err := in.str("path", ".")
	if err != nil {
		return nil, err
	}
	fold, err := in.boolean("case_insensitive", false)
	if err != nil {
		return nil, err
	}
	src := pattern
	if fold {
		src = "(?i)" + pattern
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, spec.NewError(codeGrepRegexp, "invalid RE2 regular expression: "+strings.ReplaceAll(err.Error(), "\n", " ")+"; RE2 has no backreferences or look-around, and a literal `(`, `[`, `.` or `*` needs a `\\`",
			map[string]any{"pattern": pattern}).Wrap(err)
	}
	details := map[string]any{"path": p}
	abs, err := fsgate.Abs(in.call.RunDir, p)
	if err != nil {
		return nil, spec.NewError(codeGrepPath, "cannot search "+quote(p)+": "+err.Error(), details).Wrap(err)
	}
	prefix := filepath.ToSlash(abs)
	if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
		prefix = path.Clean(filepath.ToSlash(p))
	}
	reach := fsgate.NewReach(in.call.Permits, in.call.RunDir)
	resolved, rerr := fsgate.Resolve(abs)
	if rerr != nil {
		resolved = abs
	}
	fi, statErr := os.Stat(resolved)
	isFile := statErr == nil && fi.Mode().IsRegular()
	if reach != nil {
		// A file is checked as nika:read checks it; anything else as a walk root.
		if isFile {
			if _, err := fsgate.Check(in.call.Permits, in.call.RunDir, fsgate.Read, p, abs); err != nil {
				return nil, err
			}
		} else if _, err := fsgate.WalkRoot(reach, p, abs); err != nil {
			return nil, err
		}
	}
	switch {
	case statErr != nil:
		why := "it does not exist"
		if !errors.Is(statErr, fs.ErrNotExist) {
			why = describeFSError(statErr).Error()
		}
		return nil, spec.NewError(codeGrepPath, "cannot search "+quote(p)+": "+why+"; check the path (relative paths resolve against the run directory)", details).Wrap(statErr)
	case isFile:
		hits, err := grepFile(ctx, re, resolved, prefix)
		if err != nil {
			var se *spec.Error
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, spec.NewError(codeFailed, "cannot search "+quote(p)+": "+describeFSError(err).Error(), details).Wrap(err)
		}
		return grepOutput(hits), nil
	case !fi.IsDir():
		return nil, spec.NewError(codeGrepPath, "cannot search "+quote(p)+": it is neither a regular file nor a directory", details)
	}
	var hits []grepHit
	w := &glob.Walk{
		MaxDepth: -1,
		EnterDir: func(e glob.Entry) bool { return reach == nil || reach.Reaches(e.Resolved) },
		File: func(e glob.Entry) error {
			if reach != nil && !reach.Admits(e.Resolved) {
				return nil
			}
			found, err := grepFile(ctx, re, e.Abs, glob.Join(prefix, e.Rel))
			if err != nil {
				var se *spec.Error
				if errors.As(err, &se) {
					return err // cancelled
				}
				return nil // unreadable: skipped
			}
			hits = append(hits, found...)
			return nil
		},
	}
	if err := walk(ctx, w, abs, resolved); err != nil {
		return nil, err
	}
	return grepOutput(hits), nil
}

// grepOutput sorts the hits by path (bytes), then line, and renders them.
func grepOutput(hits []grepHit) []any {
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].path != hits[j].path {
			return hits[i].path < hits[j].path
		}
		return hits[i].line < hits[j].line
	})
	out := make([]any, len(hits))
	for i, h := range hits {
		out[i] = map[string]any{"path": h.path, "line": h.line, "match": h.match}
	}
	return out
}

// grepFile returns the matching lines of one regular file, nothing for a binary file. Errors
// are I/O errors, or NIKA-CANCEL-001.
func grepFile(ctx context.Context, re *regexp.Regexp, name, shown string) ([]grepHit, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errNotRegular // swapped since it was listed: never read a pipe
	}
	r := bufio.NewReaderSize(f, grepBufSize)
	head, err := r.Peek(grepBinaryScan)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return nil, nil
	}
	var (
		hits []grepHit
		line []byte // the current line, at most grepMaxLine bytes
		raw  int    // its length as read, ending included
		n    int
		// chunks counts the buffers read within long lines.
		chunks int
	)
	for {
		chunk, err := r.ReadSlice('\n')
		raw += len(chunk)
		if room := grepMaxLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep reading it, but an endless one must not
			// outlive the context (checked every 16 buffers, 1 MiB).
			if chunks++; chunks%16 == 0 && ctx.Err() != nil {
				return nil, cancelError(ctx)
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if raw > 0 {
			n++
			text := bytes.TrimSuffix(line, []byte("\n"))
			text = bytes.TrimSuffix(text, []byte("\r"))
			if re.Match(text) {
				hits = append(hits, grepHit{path: shown, line: n, match: strings.ToValidUTF8(string(text), "\uFFFD")})
			}
		}
		if err != nil { // io.EOF
			return hits, nil
		}
		line, raw = line[:0], 0
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, cancelError(ctx)
		}
	}
}
