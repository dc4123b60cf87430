package spec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// constDecls returns the string constants of one Go file: name to the
// expression it is given (a literal or a selector), in source order.
func constDecls(t *testing.T, path string) ([]string, map[string]ast.Expr) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	exprs := map[string]ast.Expr{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					names = append(names, n.Name)
					exprs[n.Name] = vs.Values[i]
				}
			}
		}
	}
	return names, exprs
}

// TestOneConstantPerRow: every registry row has exactly one spec.Code…
// constant and every such constant is a row. Each spec.CodeX is codes.X, and
// the leaf spec/internal/codes declares each ID once, as a literal.
func TestOneConstantPerRow(t *testing.T) {
	leafNames, leafExprs := constDecls(t, filepath.Join("internal", "codes", "codes.go"))
	leaf := map[string]string{} // leaf name → ID
	byID := map[string]string{} // ID → leaf name
	for _, n := range leafNames {
		lit, ok := leafExprs[n].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Errorf("codes.%s is not a string literal", n)
			continue
		}
		id, _ := strconv.Unquote(lit.Value)
		if prev, dup := byID[id]; dup {
			t.Errorf("%s has two constants: codes.%s and codes.%s", id, prev, n)
		}
		leaf[n], byID[id] = id, n
	}

	specNames, specExprs := constDecls(t, "codes.go")
	mirrored := map[string]bool{}
	for _, n := range specNames {
		if !strings.HasPrefix(n, "Code") {
			continue
		}
		sel, ok := specExprs[n].(*ast.SelectorExpr)
		if !ok {
			t.Errorf("%s is not codes.<Name>", n)
			continue
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "codes" {
			t.Errorf("%s is not codes.<Name>", n)
			continue
		}
		if want := "Code" + sel.Sel.Name; n != want {
			t.Errorf("%s = codes.%s: name it %s", n, sel.Sel.Name, want)
		}
		if _, ok := leaf[sel.Sel.Name]; !ok {
			t.Errorf("%s = codes.%s, which the leaf does not declare", n, sel.Sel.Name)
		}
		if mirrored[sel.Sel.Name] {
			t.Errorf("codes.%s is re-exported twice", sel.Sel.Name)
		}
		mirrored[sel.Sel.Name] = true
	}

	rows := map[string]bool{}
	for _, c := range codeTable {
		if rows[c.ID] {
			t.Errorf("%s is two registry rows", c.ID)
		}
		rows[c.ID] = true
		name, ok := byID[c.ID]
		switch {
		case !ok:
			t.Errorf("registry row %s has no constant", c.ID)
		case !mirrored[name]:
			t.Errorf("registry row %s (codes.%s) has no spec.Code%s", c.ID, name, name)
		}
		if !WellFormedCode(c.ID) {
			t.Errorf("registry row %s is not a well-formed code", c.ID)
		}
	}
	var extra []string
	for id, n := range byID {
		if !rows[id] {
			extra = append(extra, "codes."+n+" = "+id)
		}
	}
	sort.Strings(extra)
	for _, e := range extra {
		t.Errorf("%s is not a registry row", e)
	}
	if len(leaf) != len(codeTable) || len(mirrored) != len(codeTable) {
		t.Errorf("%d rows, %d leaf constants, %d spec constants: want one each", len(codeTable), len(leaf), len(mirrored))
	}
}

// TestUnregisteredCodeDegrades pins the run-time side of an unregistered code:
// NewError never panics on one (a code can arrive from a script, a plugin or a
// wire), it becomes an internal_error that keeps the code it was given. The
// module's own code cannot reach this path: TestNoCodeLiterals fails first.
func TestUnregisteredCodeDegrades(t *testing.T) {
	e := NewError("NIKA-NOPE-999", "?", nil)
	if e.Category != "internal_error" || e.Transient || e.Code != "NIKA-NOPE-999" {
		t.Errorf("unregistered code = %+v, want internal_error, not transient, code kept", e)
	}
	if _, ok := LookupCode("NIKA-NOPE-999"); ok {
		t.Error("NIKA-NOPE-999 is registered")
	}
}
