package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/fsgate"
)

// nika:edit (LANGUAGE.md §7.3): a literal find/replace in one file, written atomically.

const (
	codeEditNotFound = spec.CodeBuiltinEditNotFound
	codeEditCount    = spec.CodeBuiltinEditCount
	codeEditFile     = spec.CodeBuiltinEditFile
)

// runEdit replaces the literal text `find` with `replace`. With `count` n ≥ 1 (default 1) the
// file must hold exactly n non-overlapping occurrences, all replaced; with 0 every occurrence is
// replaced and at least one is required. No occurrence at all is EDIT-001 whatever the count; a
// different number is EDIT-002, and the file is then left untouched.
//
// The path needs both fs.read and fs.write (checked in that order). The file is matched and
// rewritten as bytes (no encoding is assumed, a BOM is kept), through the same atomic
// temporary-file-and-rename as nika:write, keeping the file's mode; a symlink is followed and
// its target rewritten. A failure to write the result is NIKA-INVOKE-003: the edit codes name
// the read side only. The read-modify-write is not locked against other writers of the file.
// Output: {path (as given), replacements}.
func runEdit(_ context.Context, in *invocation) (any, error) {
	p, err := in.str("path", "")
	if err != nil {
		return nil, err
	}
	find, err := in.str("find", "")
	if err != nil {
		return nil, err
	}
	replace, err := in.str("replace", "")
	if err != nil {
		return nil, err
	}
	count, err := editCount(in)
	if err != nil {
		return nil, err
	}
	if find == "" || count < 0 {
		// The schema refuses both; kept so a direct caller cannot loop or mis-count.
		return nil, in.badValue("find", find, "a non-empty text with a count ≥ 0")
	}
	details := map[string]any{"path": p}
	abs, err := fsgate.Abs(in.call.RunDir, p)
	if err != nil {
		return nil, spec.NewError(codeEditFile, "cannot edit "+quote(p)+": "+err.Error(), details).Wrap(err)
	}
	if _, err := fsgate.Check(in.call.Permits, in.call.RunDir, fsgate.Read, p, abs); err != nil {
		return nil, err
	}
	target, err := fsgate.Check(in.call.Permits, in.call.RunDir, fsgate.Write, p, abs)
	if err != nil {
		return nil, err
	}
	data, err := readRegular(target)
	if err != nil {
		return nil, spec.NewError(codeEditFile, "cannot edit "+quote(p)+": "+err.Error()+"; check the path (relative paths resolve against the run directory)", details).Wrap(err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil, spec.NewError(codeEditFile, "cannot edit "+quote(p)+": "+describeFSError(err).Error(), details).Wrap(err)
	}
	needle := []byte(find)
	found := bytes.Count(data, needle)
	details["found"] = found
	switch {
	case found == 0:
		return nil, spec.NewError(codeEditNotFound, fmt.Sprintf("the text of `find` does not occur in %s; copy it exactly from the file, whitespace and line breaks included", quote(p)), details)
	case count > 0 && found != count:
		details["expected"] = count
		return nil, spec.NewError(codeEditCount, fmt.Sprintf("%s contains %d occurrences of `find`, expected exactly %d; nothing was replaced — make `find` longer so it is unique, set `count: %d`, or use `count: 0` to replace all", quote(p), found, count, found), details)
	}
	out := bytes.ReplaceAll(data, needle, []byte(replace))
	if err := writeAtomic(target, out, fi.Mode().Perm(), true); err != nil {
		return nil, spec.NewError(codeFailed, "cannot write the edited "+quote(p)+": "+describeFSError(err).Error()+"; the file is unchanged", details).Wrap(err)
	}
	return map[string]any{"path": p, "replacements": found}, nil
}

// editCount returns the `count` argument, 1 when it is absent. The schema admits integral
// floats (2.0) as integers, so those are accepted too.
func editCount(in *invocation) (int, error) {
	const name = "count"
	v, ok := in.args[name]
	if !ok {
		return 1, nil
	}
	switch x := v.(type) {
	case int:
		return x, nil
	case float64:
		if i := int(x); float64(i) == x {
			return i, nil
		}
	}
	return 0, in.typeError(name, "an integer", v)
}
