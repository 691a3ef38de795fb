package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeImports are the packages the README's Go excerpts use, by the name
// they are used under.
var readmeImports = map[string]string{
	"squeeze":    "github.com/squeezehttp/squeeze",
	"chi":        "github.com/go-chi/chi/v5",
	"http":       "net/http",
	"log":        "log",
	"expvar":     "expvar",
	"fs":         "io/fs",
	"os":         "os",
	"embed":      "embed",
	"json":       "encoding/json",
	"fmt":        "fmt",
	"io":         "io",
	"errors":     "errors",
	"time":       "time",
	"strings":    "strings",
	"redis":      "github.com/redis/go-redis/v9",
	"redisstore": "github.com/squeezehttp/squeeze/redisstore",
}

// readmeContext declares what an excerpt takes from the text around it
// (the program above, "with m from squeeze.New"), when it uses the name
// without declaring it.
var readmeContext = []struct{ name, decl string }{
	{"listItems", "func listItems(w http.ResponseWriter, r *http.Request) {}"},
	{"upload", "func upload(w http.ResponseWriter, r *http.Request) {}"},
	{"trained", "var trained []byte"},
	{"mux", "var mux = http.NewServeMux()"},
	{"m", "var m = squeeze.MustNew()"},
}

// Every Go excerpt of the README compiles and passes go vet as written,
// with only what the text around it gives it: the program above's
// handlers, a Middleware m, a ServeMux mux, a dictionary trained. An
// excerpt of statements becomes the body of main; one that starts with
// declarations ("// in main" then statements) is split there. Excerpts
// that use a package outside this module (a framework) are left to the
// module that has it.
func TestReadmeGoExcerptsCompile(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to vet the excerpts: %v", err)
	}
	dir, err := os.MkdirTemp(".", "_readme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var pkgs []string
	for i, block := range fences(t, "go") {
		if strings.Contains(block, "package main") || strings.HasPrefix(block, "func ") {
			continue // TestReadmeProgramIsHello keeps these
		}
		src, skip := readmeProgram(block)
		if skip != "" {
			t.Logf("excerpt %d uses %s, not in this module: skipped", i+1, skip)
			continue
		}
		pkg := filepath.Join(dir, fmt.Sprintf("excerpt%d", i+1))
		if err := os.MkdirAll(filepath.Join(pkg, "static"), 0o755); err != nil {
			t.Fatal(err)
		}
		// A //go:embed static needs the directory and a file in it.
		if err := os.WriteFile(filepath.Join(pkg, "static", "app.js"), []byte("//"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(pkg))
	}
	if len(pkgs) == 0 {
		t.Fatal("README.md has no Go excerpt besides the program")
	}
	out, err := exec.Command(goTool, append([]string{"vet"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Errorf("go vet of the README's excerpts: %v\n%s", err, out)
		for _, pkg := range pkgs {
			src, _ := os.ReadFile(filepath.Join(pkg, "main.go"))
			t.Logf("%s:\n%s", pkg, src)
		}
	}
	t.Logf("%d excerpts compiled", len(pkgs))
}

// readmeProgram makes a program of the excerpt block, or returns the
// package it needs that this module does not have.
func readmeProgram(block string) (src, skip string) {
	var top, body string
	if before, after, ok := strings.Cut(block, "// in main"); ok {
		top, body = before, after[strings.Index(after, "\n")+1:]
	} else {
		body = block
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b([a-z]+)\.[A-Z]`).FindAllStringSubmatch(block, -1) {
		used[m[1]] = true
	}
	declared := func(name string) bool {
		return regexp.MustCompile(`(?m)(^|\s|,)` + name + `(,\s*\w+)*\s*:=|\bvar ` + name + `\b|\bfunc ` + name + `\(`).MatchString(block)
	}
	var imports []string
	for name := range used {
		path, ok := readmeImports[name]
		switch {
		case declared(name) || slices.ContainsFunc(readmeContext, func(c struct{ name, decl string }) bool { return c.name == name }):
			delete(used, name) // a variable's method, not a package
		case ok:
			imports = append(imports, fmt.Sprintf("\t%q", path))
		case len(name) <= 2:
			delete(used, name) // a parameter's method (w, r)
		default:
			return "", name
		}
	}
	var context []string
	for _, c := range readmeContext {
		if regexp.MustCompile(`\b`+c.name+`\b`).MatchString(block) && !declared(c.name) {
			context = append(context, c.decl)
			if strings.Contains(c.decl, "squeeze.") && !used["squeeze"] {
				used["squeeze"] = true
				imports = append(imports, fmt.Sprintf("\t%q", readmeImports["squeeze"]))
			}
			if strings.Contains(c.decl, "http.") && !used["http"] {
				used["http"] = true
				imports = append(imports, fmt.Sprintf("\t%q", readmeImports["http"]))
			}
		}
	}
	slices.Sort(imports)
	// Every variable the body declares is used, as the rest of a real
	// program would use it.
	var uses []string
	for _, m := range regexp.MustCompile(`(?m)^((?:\w+, )*\w+) :?= `).FindAllStringSubmatch(body, -1) {
		for name := range strings.SplitSeq(m[1], ", ") {
			if name != "_" {
				uses = append(uses, "\t_ = "+name)
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^var (\w+) `).FindAllStringSubmatch(body, -1) {
		uses = append(uses, "\t_ = &"+m[1])
	}
	var b strings.Builder
	b.WriteString("package main\n\n")
	if len(imports) > 0 {
		fmt.Fprintf(&b, "import (\n%s\n)\n\n", strings.Join(imports, "\n"))
	}
	b.WriteString(top)
	b.WriteString("\n")
	for _, c := range context {
		b.WriteString(c + "\n")
	}
	b.WriteString("\nfunc main() {\n")
	for line := range strings.Lines(body) {
		b.WriteString("\t" + line)
	}
	b.WriteString(strings.Join(uses, "\n"))
	b.WriteString("\n}\n")
	return b.String(), ""
}
