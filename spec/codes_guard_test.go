package spec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// registryFile is the one file allowed to write a code as a string literal.
const registryFile = "spec/internal/codes/codes.go"

var (
	// A literal that is a code, or a code cut short: the whole value.
	codeLiteral = regexp.MustCompile(`^NIKA-[A-Z][A-Z0-9_-]*$`)
	// A code mentioned anywhere inside a literal (prose, a hint, a list).
	codeMention = regexp.MustCompile(`NIKA-[A-Z][A-Z0-9_]*(?:-[A-Z][A-Z0-9_]*)*-[0-9]+`)
)

// moduleRoot walks up from the test's working directory to the go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// moduleSources lists the module's non-test Go files, relative to root and
// slash-separated, skipping what the go tool skips (testdata, vendor, ".x" and
// "_x" directories) and nested modules.
func moduleSources(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// codeFinding is one offence of a source file against the registry.
type codeFinding struct {
	pos     token.Position
	literal bool // a code literal outside the registry; otherwise an unregistered code
	msg     string
}

// scanCodes reports, for one parsed file: every string literal that is a code
// (allowed only in the registry file), every code mentioned in a literal that
// is not a registry row, and every NewError/Errorf called with a literal code
// that is not one.
func scanCodes(fset *token.FileSet, f *ast.File, rel string) []codeFinding {
	var out []codeFinding
	specName := ""
	if f.Name.Name == "spec" && strings.HasPrefix(rel, "spec/") && !strings.Contains(strings.TrimPrefix(rel, "spec/"), "/") {
		specName = "." // inside package spec: NewError is unqualified
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/nikahq/nika/spec" {
			specName = "spec"
			if imp.Name != nil {
				specName = imp.Name.Name
			}
		}
	}
	isNewError := func(fun ast.Expr) bool {
		var name string
		switch fn := fun.(type) {
		case *ast.Ident:
			if specName != "." {
				return false
			}
			name = fn.Name
		case *ast.SelectorExpr:
			x, ok := fn.X.(*ast.Ident)
			if !ok || specName == "" || x.Name != specName {
				return false
			}
			name = fn.Sel.Name
		default:
			return false
		}
		return name == "NewError" || name == "Errorf"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if !isNewError(n.Fun) || len(n.Args) == 0 {
				return true
			}
			lit, ok := n.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			code, err := strconv.Unquote(lit.Value)
			if err != nil || code == "" || codeLiteral.MatchString(code) {
				return true // "" is the code-less internal error; a NIKA literal is reported below
			}
			out = append(out, codeFinding{fset.Position(lit.Pos()), false, "error built with " + lit.Value + ", which is not a registered code"})
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			if codeLiteral.MatchString(s) && rel != registryFile {
				out = append(out, codeFinding{fset.Position(n.Pos()), true, "code literal " + n.Value + ": use its spec.Code… constant"})
			}
			for _, m := range codeMention.FindAllString(s, -1) {
				if _, ok := LookupCode(m); !ok {
					out = append(out, codeFinding{fset.Position(n.Pos()), false, m + " is not a registry row"})
				}
			}
		}
		return true
	})
	return out
}

// TestNoCodeLiterals is the guard of the code registry: outside the registry
// no non-test Go file of the module writes a code as a string literal, and no
// literal anywhere names, or builds an error with, a code that is not a row.
// Comments are not literals, and test files are not scanned.
func TestNoCodeLiterals(t *testing.T) {
	root := moduleRoot(t)
	files := moduleSources(t, root)
	if len(files) < 50 || !containsString(files, "spec/codes.go") || !containsString(files, registryFile) {
		t.Fatalf("found %d source files under %s, without the registry: the walk is wrong", len(files), root)
	}
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s does not parse: %v", rel, err)
			continue
		}
		for _, fd := range scanCodes(fset, f, rel) {
			t.Errorf("%s:%d: %s", rel, fd.pos.Line, fd.msg)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestGuardFindsOffences feeds the scanner one file holding each offence, so
// a guard that silently stopped matching would fail here.
func TestGuardFindsOffences(t *testing.T) {
	const src = `package p

import sp "github.com/nikahq/nika/spec"

// A comment naming NIKA-NOPE-001 is fine.
const code = "NIKA-CANCEL-001"

var (
	a = sp.NewError("E1", "free-form code", nil)
	b = sp.Errorf("", "code-less internal error: allowed")
	c = "see NIKA-FOO-999 for details"
	d = "see NIKA-EXEC-001 for details"
	e = "NIKA-" + "prefix alone is no code"
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fd := range scanCodes(fset, f, "p/p.go") {
		got = append(got, strconv.Itoa(fd.pos.Line)+" "+strconv.FormatBool(fd.literal)+" "+fd.msg)
	}
	want := []string{
		`6 true code literal "NIKA-CANCEL-001": use its spec.Code… constant`,
		`9 false error built with "E1", which is not a registered code`,
		`11 false NIKA-FOO-999 is not a registry row`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := scanCodes(fset, f, registryFile); len(got) != 2 {
		t.Errorf("in the registry file the literal is allowed: got %d findings, want 2", len(got))
	}
}
