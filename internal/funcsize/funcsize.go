package funcsize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Func is one function's size.
type Func struct {
	// Name is the package's directory relative to the module root, a dot
	// and the function's name, its receiver's type before it for a method
	// ("spec.decoder.spec", "engine.Run"); the root package's have no
	// prefix. A function literal outside any
	// function (in a package-level table) is named by the variable that
	// holds it and its place there ("spec.specFields[3]").
	Name string
	// Pos is the function's file and line, for the reader.
	Pos string
	// Lines counts the lines from the func keyword to the closing brace.
	Lines int
	// Complexity is the cyclomatic complexity (see Complexity).
	Complexity int
}

func (f Func) String() string {
	return fmt.Sprintf("%s (%s): %d lines, cyclomatic %d", f.Name, f.Pos, f.Lines, f.Complexity)
}

// Measure parses every Go file of the module rooted at dir but tests and
// generated files and returns its functions. Directories holding their
// own go.mod (nested modules), testdata, vendor and hidden ones are not
// the module's. Build constraints are ignored: a function for another
// architecture is read as well.
func Measure(dir string) ([]Func, error) {
	var out []Func
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == dir {
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
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		fns, err := measureFile(path, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		out = append(out, fns...)
		return nil
	})
	return out, err
}

// measureFile measures the functions of one file of package pkg (its
// directory relative to the module).
func measureFile(path, pkg string) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	prefix := pkg + "."
	if pkg == "." {
		prefix = "" // the module's root package
	}
	measure := func(name string, n ast.Node) Func {
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		return Func{
			Name:       prefix + name,
			Pos:        fmt.Sprintf("%s:%d", filepath.Join(pkg, filepath.Base(path)), start.Line),
			Lines:      end.Line - start.Line + 1,
			Complexity: Complexity(n),
		}
	}
	var out []Func
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Body == nil {
				continue // implemented in assembly
			}
			out = append(out, measure(funcName(decl, filepath.Base(path)), decl))
		case *ast.GenDecl:
			// Tables of functions: each literal is a function of its own
			// (a literal inside a function counts towards that function).
			for _, spec := range decl.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					var name string
					if i < len(vs.Names) {
						name = vs.Names[i].Name
					}
					for _, lit := range outerLits(v) {
						out = append(out, measure(fmt.Sprintf("%s[%s]", name, lit.where), lit.lit))
					}
				}
			}
		}
	}
	return out, nil
}

// funcName is a declared function's name, its receiver's type first for
// a method. init, which a package may declare many times, is told apart
// by its file.
func funcName(fn *ast.FuncDecl, file string) string {
	name := fn.Name.Name
	if name == "init" && fn.Recv == nil {
		return "init@" + file
	}
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr: // a generic type's parameter
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + name
	}
	return name
}

type placedLit struct {
	lit   *ast.FuncLit
	where string
}

// outerLits are the function literals in a package-level value that no
// other literal holds, each with where it sits: the key of the composite
// literal element it is in (a table's key) or its position in the value.
func outerLits(v ast.Expr) []placedLit {
	var out []placedLit
	var key string
	ast.Inspect(v, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			// A row of a table: name the literal by the row's first
			// element when it is a string (the table's key).
			if len(n.Elts) > 0 {
				if b, ok := n.Elts[0].(*ast.BasicLit); ok && b.Kind == token.STRING {
					key, _ = strconv.Unquote(b.Value)
				}
			}
		case *ast.FuncLit:
			where := key
			if where == "" {
				where = fmt.Sprint(len(out))
			}
			out = append(out, placedLit{n, where})
			return false
		}
		return true
	})
	return out
}

// Complexity is a function's cyclomatic complexity as gocyclo counts it:
// 1, plus one for each if, for and range, each case of a switch or type
// switch and each case of a select but their defaults, and each && and
// ||. Function literals inside count towards it.
func Complexity(n ast.Node) int {
	c := 1
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
