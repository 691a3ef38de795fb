package squeeze_test

import (
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
)

// On a dictionary path a same-origin request gets a delta and a cross-site
// one does not (RFC 9842 §9), so the response names Sec-Fetch-Site in Vary,
// from the Middleware and from the FileServer alike: a shared cache must
// not hand the delta to a cross-site request. A path no pattern matches
// does not vary on it.
func TestDictionaryPathVariesOnSecFetchSite(t *testing.T) {
	v1, v2 := versions(16 << 10)
	files := map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2, "/lib/x.js": v2}
	middleware := func(t *testing.T) http.Handler {
		return newMiddleware(t, squeeze.WithDictionaryMatch("/js/app.*.js")).Handler(scripts(files))
	}
	fileServer := func(t *testing.T) http.Handler {
		fsys := fstest.MapFS{}
		for name, b := range files {
			fsys[name[1:]] = &fstest.MapFile{Data: b}
		}
		h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/app.*.js")).FileServer(fsys)
		t.Cleanup(func() { squeeze.WaitFileServer(h) })
		return h
	}
	for name, build := range map[string]func(*testing.T) http.Handler{"Middleware": middleware, "FileServer": fileServer} {
		t.Run(name, func(t *testing.T) {
			h := build(t)
			serveAt(h, "/js/app.v1.js", chromeAE) // remembered as a dictionary
			avail := availableFor(v1)
			for _, tt := range []struct {
				site  string
				delta bool
			}{{"same-origin", true}, {"cross-site", false}, {"", true}} {
				hdr := []string{"Available-Dictionary", avail}
				if tt.site != "" {
					hdr = append(hdr, "Sec-Fetch-Site", tt.site)
				}
				rec := serveAt(h, "/js/app.v2.js", chromeAE, hdr...)
				if ce := rec.Header().Get("Content-Encoding"); (ce == squeeze.DCZ || ce == squeeze.DCB) != tt.delta {
					t.Fatalf("Sec-Fetch-Site %q: Content-Encoding %q; want a delta: %v", tt.site, ce, tt.delta)
				}
				if n := countFold(varyTokens(rec.Header()), "Sec-Fetch-Site"); n != 1 {
					t.Errorf("Sec-Fetch-Site %q: Vary %q names Sec-Fetch-Site %d times; want once", tt.site, rec.Header().Values("Vary"), n)
				}
			}
			rec := serveAt(h, "/lib/x.js", chromeAE, "Sec-Fetch-Site", "cross-site")
			if n := countFold(varyTokens(rec.Header()), "Sec-Fetch-Site"); n != 0 {
				t.Errorf("a path no pattern matches: Vary %q names Sec-Fetch-Site", rec.Header().Values("Vary"))
			}
		})
	}
}
