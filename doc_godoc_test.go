package squeeze_test

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The documentation of every package speaks of what a user can see: no
// file names, no unexported identifiers of the implementation, and doc
// links that resolve.
func TestGodocHasNoInternalsOrBrokenLinks(t *testing.T) {
	// Brackets left in a comment's text after parsing are links that did
	// not resolve; a file name in parentheses points into the source.
	broken := regexp.MustCompile(`\[\*?[A-Za-z][A-Za-z0-9_.]*\]`)
	fileRef := regexp.MustCompile(`\b[a-z_]+\.go\b`)
	for _, dir := range []string{".", "writers", "internal/pool"} {
		fset := token.NewFileSet()
		var files []*ast.File
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		pkg, err := doc.NewFromFiles(fset, files, "github.com/squeezehttp/squeeze/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		// Unexported names that must not appear in exported docs: the
		// package's unexported top-level identifiers that are no English
		// word (reasonCount, handlerWriter), whose one-word kin (slot,
		// decide) cannot be told from prose.
		var unexported []string
		for _, f := range files {
			for name := range f.Scope.Objects {
				if !ast.IsExported(name) && strings.ToLower(name) != name {
					unexported = append(unexported, name)
				}
			}
		}
		p := pkg.Parser()
		check := func(what, text string) {
			if text == "" {
				return
			}
			plain := string(pkg.Printer().Text(p.Parse(text)))
			for _, m := range broken.FindAllString(plain, -1) {
				t.Errorf("%s: %s: doc link %s does not resolve", dir, what, m)
			}
			if m := fileRef.FindString(text); m != "" {
				t.Errorf("%s: %s: mentions the source file %s", dir, what, m)
			}
			for _, name := range unexported {
				if regexp.MustCompile(`\b` + name + `\b`).MatchString(text) {
					t.Errorf("%s: %s: mentions the unexported %s", dir, what, name)
				}
			}
		}
		check("package doc", pkg.Doc)
		fieldDocs := func(owner string, decl *ast.GenDecl) {
			for _, spec := range decl.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					if vs, ok := spec.(*ast.ValueSpec); ok && vs.Doc != nil && vs.Names[0].IsExported() {
						check(vs.Names[0].Name, vs.Doc.Text())
					}
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if field.Doc != nil && len(field.Names) > 0 && field.Names[0].IsExported() {
						check(owner+"."+field.Names[0].Name, field.Doc.Text())
					}
				}
			}
		}
		for _, v := range append(pkg.Consts, pkg.Vars...) {
			check(strings.Join(v.Names, ", "), v.Doc)
			fieldDocs("", v.Decl)
		}
		for _, f := range pkg.Funcs {
			check(f.Name, f.Doc)
		}
		for _, typ := range pkg.Types {
			check(typ.Name, typ.Doc)
			fieldDocs(typ.Name, typ.Decl)
			for _, v := range append(typ.Consts, typ.Vars...) {
				check(strings.Join(v.Names, ", "), v.Doc)
				fieldDocs("", v.Decl)
			}
			for _, f := range append(typ.Funcs, typ.Methods...) {
				check(typ.Name+"."+f.Name, f.Doc)
			}
		}
	}
}

// The root package's exported top-level names (funcs, types, consts and
// vars) stay at most 95, so that its doc reads as a list of features
// (issue 36); a new name replaces one or nests under its feature.
func TestRootPackageExportsAtMost95Names(t *testing.T) {
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(names) > 95 {
		t.Errorf("the root package exports %d top-level names, want at most 95", len(names))
	}
}

// go doc -all of the root package stays at most 950 lines, so that a
// newcomer reads it as a list of features (issue 36); detail goes to
// docs/reference.md, contracts stay in the doc comments.
func TestRootPackageGodocIsAtMost950Lines(t *testing.T) {
	goCmd := testtool.Require(t, "go")
	out, err := exec.Command(goCmd, "doc", "-all", ".").Output()
	if err != nil {
		t.Fatalf("go doc -all .: %v", err)
	}
	if n := bytes.Count(out, []byte("\n")); n > 950 {
		t.Errorf("go doc -all . is %d lines, want at most 950", n)
	}
}
