package main

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// deployDir makes a deploy directory: static/app.js, a secret beside
// static/, and in static/ a link to a file inside it and links out of it,
// to the secret and to an absolute path.
func deployDir(t *testing.T) (static, secret string) {
	t.Helper()
	dir := t.TempDir()
	static = filepath.Join(dir, "static")
	js := strings.Repeat("export function squeeze(x) { return x * 2; }\n", 100)
	secret = "the secret beside the deploy directory"
	for _, f := range []struct{ name, body string }{
		{filepath.Join(static, "js", "app.js"), js},
		{filepath.Join(dir, "secret.txt"), secret},
	} {
		if err := os.MkdirAll(filepath.Dir(f.name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.name, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"app.js": "js/app.js", "up.txt": "../secret.txt", "abs.txt": filepath.Join(dir, "secret.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(static, link)); err != nil {
			t.Fatal(err)
		}
	}
	return static, secret
}

// The README's deploy-directory recipe, as the demo runs it (-static DIR):
// files on disk are served encoded, a symbolic link inside the directory
// is followed, and links out of it (relative or absolute) are refused, the
// secret never sent; fs.Sub(os.DirFS(...)), served beside it, follows them
// out, which is why the recipe opens an os.Root.
func TestStaticDirServesTheDeployDirectoryAndNothingOutsideIt(t *testing.T) {
	static, secret := deployDir(t)
	h, _, err := newRouter(time.Hour, static)
	if err != nil {
		t.Fatal(err)
	}
	dirFS, err := fs.Sub(os.DirFS(filepath.Dir(static)), "static")
	if err != nil {
		t.Fatal(err)
	}
	followsOut := http.StripPrefix("/static/", squeeze.MustNew().FileServer(dirFS))
	get := func(h http.Handler, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, path := range []string{"/static/js/app.js", "/static/app.js"} {
		if rec := get(h, path); rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != squeeze.Gzip {
			t.Errorf("GET %s: %d with Content-Encoding %q, want 200 gzip", path, rec.Code, rec.Header().Get("Content-Encoding"))
		}
	}
	for _, path := range []string{"/static/up.txt", "/static/abs.txt"} {
		if rec := get(h, path); rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), secret) {
			t.Errorf("GET %s from the deploy directory: %d, %q; want the link out refused", path, rec.Code, rec.Body.String())
		}
		if rec := get(followsOut, path); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), secret) {
			t.Errorf("GET %s from fs.Sub(os.DirFS): %d; the test expects it to follow the link out", path, rec.Code)
		}
	}
}

// A deploy directory that does not exist fails the router's construction,
// naming the directory.
func TestStaticDirThatDoesNotExistFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, _, err := newRouter(time.Hour, missing); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("newRouter with -static %s: %v, want an error naming it", missing, err)
	}
}
