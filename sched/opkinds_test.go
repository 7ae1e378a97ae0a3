package sched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strconv"
	"testing"
)

// TestOpKindsListed: every Kind constant of op.go's const blocks but
// KindInvalid is one of opKind's, and opKind's switch names nothing else: a constant
// added without its entry would silently be a fault kind.
func TestOpKindsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "op.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[Kind]bool{}
	names := map[string]bool{} // the constants' names but KindInvalid's
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
					names[name.Name] = true
					if !opKind(k) || k.IsFault() {
						t.Errorf("op kind constant %s (%q) is not one of opKind's", name.Name, v)
					}
				}
			}
		}
	}
	if len(consts) < 10 {
		t.Fatalf("found %d Kind constants in op.go, want at least 10", len(consts))
	}
	cases := 0
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "opKind" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			c, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range c.List {
				cases++
				if id, ok := e.(*ast.Ident); !ok || !names[id.Name] {
					t.Errorf("opKind's switch names %s, which is no Kind constant of op.go", types.ExprString(e))
				}
			}
			return true
		})
	}
	if cases != len(consts) {
		t.Errorf("opKind's switch names %d kinds, op.go has %d Kind constants", cases, len(consts))
	}
}
