package squeeze_test

import (
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
)

// failingFS opens its files as fsys does, but reading any of them fails.
type failingFS struct{ fsys fs.FS }

func (f failingFS) Open(name string) (fs.File, error) {
	file, err := f.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return failingFile{file}, nil
}

type failingFile struct{ fs.File }

func (failingFile) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// An error answer of the FileServer drops the caching headers a handler in
// front of it set for the file it expected, as http.FileServer's do since
// Go 1.23: the README's static recipe sets "public, max-age=31536000,
// immutable" in front of the file server, and a 404 for a version not yet
// deployed must not be kept for a year. Nor does an error carry the
// Use-As-Dictionary or the dictionary freshness squeeze adds to files.
func TestFileServerErrorsDropTheCachingHeadersSetInFront(t *testing.T) {
	js := []byte(strings.Repeat("function f(a, b) { return a + b; }\n", 100))
	files := fstest.MapFS{
		"app.v1.js": {Data: js, ModTime: fsModTime},
		".env":      {Data: []byte("SECRET=1"), ModTime: fsModTime},
	}
	front := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			h.Set("ETag", `"front"`)
			h.Set("Last-Modified", fsModTime.Format(http.TimeFormat))
			next.ServeHTTP(w, r)
		})
	}
	m := newMiddleware(t, squeeze.WithDictionaryMatch("/static/app.*.js"))
	healthy := front(http.StripPrefix("/static/", m.FileServer(files)))
	broken := front(http.StripPrefix("/static/", m.FileServer(failingFS{files})))
	stdlib := front(http.StripPrefix("/static/", http.FileServer(http.FS(files))))

	tests := []struct {
		name, method, path string
		h                  http.Handler
		status             int
		oracle             bool // http.FileServer answers with the same status
	}{
		{"missing version", http.MethodGet, "/static/app.v3.js", healthy, http.StatusNotFound, true},
		{"missing, HEAD", http.MethodHead, "/static/app.v3.js", healthy, http.StatusNotFound, true},
		{"dotfile", http.MethodGet, "/static/.env", healthy, http.StatusNotFound, false},
		{"dot-dot", http.MethodGet, "/static/../app.v1.js", healthy, http.StatusBadRequest, false},
		{"method", http.MethodPost, "/static/app.v1.js", healthy, http.StatusMethodNotAllowed, false},
		{"unreadable file on a dictionary path", http.MethodGet, "/static/app.v1.js", broken, http.StatusInternalServerError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serveMethod(tt.h, tt.method, tt.path, "br, gzip")
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			for _, k := range []string{"Cache-Control", "Etag", "Last-Modified", "Content-Encoding", "Use-As-Dictionary"} {
				if v := rec.Header().Values(k); len(v) > 0 {
					t.Errorf("%s: %q on a %d", k, v, rec.Code)
				}
			}
			if tt.oracle {
				std := serveMethod(stdlib, tt.method, tt.path, "br, gzip")
				if std.Code != tt.status || std.Header().Get("Cache-Control") != "" {
					t.Errorf("http.FileServer: %d with Cache-Control %q; the oracle changed", std.Code, std.Header().Get("Cache-Control"))
				}
			}
		})
	}
	// A file that exists keeps what the handler in front chose.
	rec := serveMethod(healthy, http.MethodGet, "/static/app.v1.js", "br")
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Errorf("existing file: %d with Cache-Control %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
}
