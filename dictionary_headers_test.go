package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// A file marked as a dictionary goes out with the same RFC 9842 header
// fields whether a FileServer serves it or a handler behind the Middleware
// does: Use-As-Dictionary, Vary with Available-Dictionary and
// Sec-Fetch-Site, the Cache-Control the handler in front set, and on
// text/html the Link to the standalone dictionaries; neither marks a
// response that sets a cookie. Only where no handler says how fresh the
// file is, the FileServer's file and a WithDictionary dictionary get
// dictionaryCacheControl, and a handler's own response keeps none: the
// Middleware cannot tell a versioned asset from a page that must not be
// reused for a day.
func TestDictionaryHeadersAreTheSameFromFileServerAndMiddleware(t *testing.T) {
	files := map[string][]byte{
		"app.v1.js":  textBody(31, 20000),
		"index.html": []byte("<!doctype html><title>t</title>" + strings.Repeat("<p>squeeze</p>", 200)),
	}
	m := newMiddleware(t,
		squeeze.WithDictionaryMatch("/static/app.*.js"),
		squeeze.WithDictionary("/dict/common.dat", "/static/*.css", textBody(32, 4000)))
	fsys := os.DirFS(writeTree(t, t.TempDir(), files))
	fileServer, _ := fileServer(t, m, fsys)
	viaFileServer := http.StripPrefix("/static/", fileServer)
	viaMiddleware := m.Handler(http.StripPrefix("/static/", http.FileServerFS(fsys)))
	// front sets what the handler in front of either sets, from ?front=.
	front := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("front") {
			case "cache-control":
				w.Header().Set("Cache-Control", "max-age=31536000, immutable")
			case "cookie":
				w.Header().Set("Set-Cookie", "session=1")
			}
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("via") == "fileserver" {
			front(viaFileServer).ServeHTTP(w, r)
			return
		}
		front(viaMiddleware).ServeHTTP(w, r)
	}))
	mux.Handle("/dict/", m.Handler(http.NotFoundHandler()))
	forEachProtocol(t, mux, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		for _, tc := range []struct {
			name, path, front   string
			useAs, cacheControl string
			link                bool
			// handlerFresh: the Middleware's response has cacheControl
			// too; else it has none (dictionaryCacheControl is the
			// FileServer's alone).
			handlerFresh bool
		}{
			{"dictionary", "/static/app.v1.js", "", `match="/static/app.*.js"`, squeeze.DictionaryCacheControl, false, false},
			{"dictionary, Cache-Control in front", "/static/app.v1.js", "cache-control", `match="/static/app.*.js"`, "max-age=31536000, immutable", false, true},
			{"dictionary setting a cookie", "/static/app.v1.js", "cookie", "", "", false, true},
			{"html", "/static/index.html", "", "", "", true, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got []http.Header
				for _, via := range []string{"fileserver", "middleware"} {
					res, _ := fetch(t, c, srv.URL+tc.path+"?via="+via+"&front="+tc.front, "gzip")
					if res.StatusCode != http.StatusOK {
						t.Fatalf("via %s: status %d", via, res.StatusCode)
					}
					h := res.Header
					if g := h.Get("Use-As-Dictionary"); g != tc.useAs {
						t.Errorf("via %s: Use-As-Dictionary %q, want %q", via, g, tc.useAs)
					}
					want := tc.cacheControl
					if via == "middleware" && !tc.handlerFresh {
						want = ""
					}
					if g := h.Get("Cache-Control"); g != want {
						t.Errorf("via %s: Cache-Control %q, want %q", via, g, want)
					}
					if g := h.Values("Link"); tc.link != slices.Contains(g, `</dict/common.dat>; rel="compression-dictionary"`) {
						t.Errorf("via %s: Link %q", via, g)
					}
					got = append(got, h)
				}
				names := []string{"Use-As-Dictionary", "Link"}
				if tc.handlerFresh {
					names = append(names, "Cache-Control")
				}
				for _, name := range names {
					if a, b := got[0].Values(name), got[1].Values(name); !slices.Equal(a, b) {
						t.Errorf("%s: %q from the FileServer, %q from the Middleware", name, a, b)
					}
				}
				a, b := varyTokens(got[0]), varyTokens(got[1])
				for _, tok := range []string{"Accept-Encoding", "Available-Dictionary", "Sec-Fetch-Site"} {
					if onPattern := strings.HasPrefix(tc.path, "/static/app."); countFold(a, tok) != countFold(b, tok) || onPattern && countFold(a, tok) != 1 {
						t.Errorf("Vary: %q from the FileServer, %q from the Middleware", a, b)
					}
				}
			})
		}
	})
	// The standalone dictionary carries the same freshness, public: its
	// bytes are the same for every client.
	w := fsGet(mux, "GET", "/dict/common.dat")
	if got, want := w.Header().Get("Cache-Control"), "public, "+squeeze.DictionaryCacheControl; got != want {
		t.Errorf("WithDictionary's dictionary: Cache-Control %q, want %q", got, want)
	}
}

// A range of a file on a dictionary path is no dictionary: a 206 holds
// part of the file, and the Middleware marks no ranged response either.
func TestFileServerMarksNoRangeAsADictionary(t *testing.T) {
	m := newMiddleware(t, squeeze.WithDictionaryMatch("/app.*.js"))
	h, _ := fileServer(t, m, os.DirFS(writeTree(t, t.TempDir(), map[string][]byte{"app.v1.js": textBody(31, 20000)})))
	whole := fsGet(h, "GET", "/app.v1.js", "Accept-Encoding", "gzip")
	if whole.Header().Get("Use-As-Dictionary") == "" {
		t.Fatalf("the whole file: no Use-As-Dictionary (%v)", whole.Header())
	}
	part := fsGet(h, "GET", "/app.v1.js", "Accept-Encoding", "gzip", "Range", "bytes=0-99")
	if part.Code != http.StatusPartialContent {
		t.Fatalf("a range: status %d, want 206", part.Code)
	}
	if got := part.Header().Get("Use-As-Dictionary"); got != "" {
		t.Errorf("a 206 of %d bytes carries Use-As-Dictionary %q", part.Body.Len(), got)
	}
}
