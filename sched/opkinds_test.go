package sched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestOpKindsListed: every Kind constant of op.go's const blocks but
// KindInvalid is in opKinds, and opKinds holds nothing else: a constant
// added without its entry would silently be a fault kind.
func TestOpKindsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "op.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[Kind]bool{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("Kind constant %s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				if k := Kind(v); k != KindInvalid {
					consts[k] = true
					if !opKind(k) || k.IsFault() {
						t.Errorf("op kind constant %s (%q) is not in opKinds", name.Name, v)
					}
				}
			}
		}
	}
	if len(consts) < 10 {
		t.Fatalf("found %d Kind constants in op.go, want at least 10", len(consts))
	}
	for k := range opKinds {
		if !consts[k] {
			t.Errorf("opKinds holds %q, which is no Kind constant of op.go", k)
		}
	}
}
