package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// demoPages returns the path pattern of every GET route the demo registers.
func demoPages(t *testing.T) (chi.Routes, []string) {
	t.Helper()
	h, _, err := newRouter(time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("newRouter returned a %T, not a chi router", h)
	}
	var pages []string
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodGet && !slices.Contains(pages, route) {
			pages = append(pages, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return routes, pages
}

// A newcomer finds every page of the demo from its index: following the
// links (href and src) of the HTML pages reachable from / reaches every GET
// route the router registers.
func TestEveryDemoPageIsLinkedFromTheIndex(t *testing.T) {
	routes, pages := demoPages(t)
	h, _, err := newRouter(time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`(?:href|src)="(/[^"]*)"`)
	reached := map[string]string{} // route pattern -> a URL that reached it
	seen := map[string]bool{"/": true}
	queue := []string{"/"}
	for len(queue) > 0 {
		url := queue[0]
		queue = queue[1:]
		rctx := chi.NewRouteContext()
		if routes.Match(rctx, http.MethodGet, strings.SplitN(url, "?", 2)[0]) {
			if _, ok := reached[rctx.RoutePattern()]; !ok {
				reached[rctx.RoutePattern()] = url
			}
		}
		if url == "/events" {
			continue // a stream that does not end
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s, linked from the demo: %d", url, rec.Code)
			continue
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(rec.Body.String(), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				queue = append(queue, m[1])
			}
		}
	}
	for _, page := range pages {
		if _, ok := reached[page]; !ok {
			t.Errorf("no page reachable from / links to %s", page)
		}
	}
}

// The demo's table of routes (example/README.md) names every page the demo
// serves, and it and the root README's section Install say which address
// to open in a browser.
func TestReadmeListsEveryDemoPage(t *testing.T) {
	_, pages := demoPages(t)
	routes, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		if !strings.Contains(string(routes), "`"+page+"`") && !strings.Contains(string(routes), "`"+page+" ") {
			t.Errorf("example/README.md does not name %s", page)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Install\n")
	section, _, _ = strings.Cut(section, "\n## ")
	browser := regexp.MustCompile(`Open <?http://127\.0\.0\.1:8080/>? in a browser`)
	if !browser.MatchString(section) {
		t.Error("README.md's section Install does not say which address to open in a browser")
	}
	if !browser.Match(routes) {
		t.Error("example/README.md does not say which address to open in a browser")
	}
}

// example/hello and the demo can run side by side: they listen on
// different ports by default.
func TestHelloAndTheDemoTakeDifferentPorts(t *testing.T) {
	demoAddr := defaultAddr(t, "main.go", `flag.String("addr", `)
	helloAddr := defaultAddr(t, filepath.Join("hello", "main.go"), "http.ListenAndServe(")
	if demoAddr != readmeAddr {
		t.Errorf("the demo listens on %s by default; the README's commands use %s", demoAddr, readmeAddr)
	}
	if port(demoAddr) == port(helloAddr) {
		t.Errorf("example/hello (%s) and the demo (%s) take the same port", helloAddr, demoAddr)
	}
}

// defaultAddr returns the string literal that follows call in file.
func defaultAddr(t *testing.T, file, call string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if ok && lit.Kind == token.STRING && addr == "" {
			before := string(src[:lit.Pos()-1])
			if strings.HasSuffix(before, call) {
				addr, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	if addr == "" {
		t.Fatalf("%s has no %s with a string literal", file, call)
	}
	return addr
}

func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}
