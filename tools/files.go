package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools/fsgate"
)

// File builtins (LANGUAGE.md §7.3): read, write. Paths resolve against the run directory; under
// permits the resolved subject is checked against permits.fs (tools/fsgate).

const (
	codeReadFile     = spec.CodeBuiltinReadFile
	codeReadEncoding = spec.CodeBuiltinReadEncoding
	codeWriteExists  = spec.CodeBuiltinWriteExists
	codeWriteParent  = spec.CodeBuiltinWriteParent
	codeWriteIO      = spec.CodeBuiltinWriteIO
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// runRead returns the text of a file with any UTF-8 BOM stripped (decoded as UTF-8 or Latin-1),
// or its bytes verbatim when binary is true (encoding is then ignored).
func runRead(_ context.Context, in *invocation) (any, error) {
	p, err := in.str("path", "")
	if err != nil {
		return nil, err
	}
	encoding, err := in.str("encoding", "utf-8")
	if err != nil {
		return nil, err
	}
	binary, err := in.boolean("binary", false)
	if err != nil {
		return nil, err
	}
	details := map[string]any{"path": p}
	abs, err := fsgate.Abs(in.call.RunDir, p)
	if err != nil {
		return nil, spec.NewError(codeReadFile, "cannot read "+quote(p)+": "+err.Error(), details).Wrap(err)
	}
	target, err := fsgate.Check(in.call.Permits, in.call.RunDir, fsgate.Read, p, abs)
	if err != nil {
		return nil, err
	}
	data, err := readRegular(target)
	if err != nil {
		return nil, spec.NewError(codeReadFile, "cannot read "+quote(p)+": "+err.Error(), details).Wrap(err)
	}
	if binary {
		return data, nil
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if encoding == "latin1" {
		var b strings.Builder
		b.Grow(len(data))
		for _, c := range data {
			b.WriteRune(rune(c))
		}
		return b.String(), nil
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		details["offset"] = off
		return nil, spec.NewError(codeReadEncoding, quote(p)+" is not valid UTF-8 (first invalid byte at offset "+strconv.Itoa(off)+"); read it with `encoding: latin1` or `binary: true`", details)
	}
	return string(data), nil
}

var errNotRegular = errors.New("not a regular file")

// readRegular reads a regular file; a directory, device or pipe is refused before it is opened
// (opening a named pipe would block), and checked again on the open file.
func readRegular(p string) ([]byte, error) {
	if fi, err := os.Stat(p); err != nil {
		return nil, describeFSError(err)
	} else if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, describeFSError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, describeFSError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if fi.Size() > maxFileBytes {
		return nil, errTooLarge
	}
	data, err := readAll(f, fi.Size())
	if err != nil {
		return nil, describeFSError(err)
	}
	return data, nil
}

// maxFileBytes bounds what read and edit load into memory: a bigger (or sparse) file would
// otherwise take the whole engine down with it.
const maxFileBytes = 256 << 20

var errTooLarge = fmt.Errorf("the file is larger than the %d MiB a builtin reads whole; use nika:grep, or exec a tool that streams it", maxFileBytes>>20)

// readAll reads at most maxFileBytes (the file may grow after its size was taken).
func readAll(f *os.File, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(f, maxFileBytes+1))
	if err == nil && n > maxFileBytes {
		return nil, errTooLarge
	}
	return buf.Bytes(), err
}

// describeFSError strips the path from an os error: messages name the path as the user gave it.
func describeFSError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fs.ErrNotExist
		case errors.Is(err, fs.ErrPermission):
			return fs.ErrPermission
		}
		return pe.Err
	}
	return err
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// runWrite writes content atomically: a temporary file in the target's directory, synced, then
// renamed over the target (linked into place when overwrite is false, so an existing file is
// never replaced). A string or bytes are written verbatim, any other value as canonical JSON.
// Symlinks are followed: the file written is the resolved target. A new file gets mode 0644, an
// overwritten one keeps its mode. Output: {path (as given), bytes}.
func runWrite(_ context.Context, in *invocation) (any, error) {
	p, err := in.str("path", "")
	if err != nil {
		return nil, err
	}
	createDirs, err := in.boolean("create_dirs", false)
	if err != nil {
		return nil, err
	}
	overwrite, err := in.boolean("overwrite", true)
	if err != nil {
		return nil, err
	}
	var data []byte
	switch c := in.args["content"].(type) {
	case string:
		data = []byte(c)
	case []byte:
		data = c
	default:
		if data, err = canon.Marshal(c); err != nil {
			return nil, in.typeError("content", "a string, bytes or a JSON value", c)
		}
	}
	details := map[string]any{"path": p}
	ioErr := func(err error) error {
		return spec.NewError(codeWriteIO, "cannot write "+quote(p)+": "+describeFSError(err).Error(), details).Wrap(err)
	}
	abs, err := fsgate.Abs(in.call.RunDir, p)
	if err != nil {
		return nil, ioErr(err)
	}
	target, err := fsgate.Check(in.call.Permits, in.call.RunDir, fsgate.Write, p, abs)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(target)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist) && createDirs:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, ioErr(err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil, spec.NewError(codeWriteParent, "the parent directory of "+quote(p)+" does not exist; set `create_dirs: true` to create it", details)
	case err != nil:
		return nil, ioErr(err)
	case !fi.IsDir():
		return nil, ioErr(errors.New("the parent is not a directory"))
	}
	mode := fs.FileMode(0o644)
	switch fi, err := os.Stat(target); {
	case err == nil && !overwrite:
		return nil, existsError(p, details)
	case err == nil && !fi.Mode().IsRegular():
		return nil, ioErr(errNotRegular)
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, ioErr(err)
	}
	if err := writeAtomic(target, data, mode, overwrite); err != nil {
		if errors.Is(err, fs.ErrExist) && !overwrite {
			return nil, existsError(p, details)
		}
		return nil, ioErr(err)
	}
	return map[string]any{"path": p, "bytes": len(data)}, nil
}

func existsError(p string, details map[string]any) error {
	return spec.NewError(codeWriteExists, quote(p)+" exists and `overwrite` is false", details)
}

// writeAtomic writes data to a temporary file beside target and moves it into place.
func writeAtomic(target string, data []byte, mode fs.FileMode, overwrite bool) (err error) {
	dir, base := filepath.Split(target)
	tmp, err := os.CreateTemp(dir, "."+base+".nika-*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			os.Remove(name)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if overwrite {
		return os.Rename(name, target)
	}
	// Link fails if target exists, so a file created since the check is never replaced.
	if err = os.Link(name, target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		// No hard links here (some file systems): fall back to a checked rename.
		if _, serr := os.Lstat(target); serr == nil {
			return fs.ErrExist
		}
		return os.Rename(name, target)
	}
	os.Remove(name)
	return nil
}

func quote(s string) string { return "`" + s + "`" }
