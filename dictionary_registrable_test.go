package squeeze_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
)

// unregistrableCases are caching headers under which Chromium registers
// no dictionary (RFC 9842 section 2.2.1), and some under which it does.
var unregistrableCases = []struct {
	name   string
	header map[string]string
	kept   bool
}{
	{"max-age", map[string]string{"Cache-Control": "max-age=60"}, true},
	// Nothing said: the FileServer and squeeze's dictionaries add a day;
	// a handler's response is the handler's to give a freshness.
	{"nothing said", map[string]string{}, true},
	{"max-age=0, stale-while-revalidate", map[string]string{"Cache-Control": "max-age=0, stale-while-revalidate=60"}, true},
	{"Expires later", map[string]string{"Cache-Control": "public", "Expires": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, true},
	{"no-cache", map[string]string{"Cache-Control": "no-cache, max-age=60"}, false},
	{"must-revalidate", map[string]string{"Cache-Control": "max-age=60, must-revalidate"}, false},
	{"max-age=0", map[string]string{"Cache-Control": "max-age=0"}, false},
	{"s-maxage only", map[string]string{"Cache-Control": "public, s-maxage=60"}, false},
	{"Expires past", map[string]string{"Cache-Control": "public", "Expires": "Thu, 01 Jan 2015 00:00:00 GMT"}, false},
	{"no freshness", map[string]string{"Cache-Control": "public"}, false},
}

// TestDictionaryABrowserWouldNotRegisterGoesWithoutUseAsDictionary: a
// response whose caching headers keep a browser from storing it as a
// dictionary (no-cache, no-store, must-revalidate, no freshness) never
// carries Use-As-Dictionary, whether a body remembered from a handler, a
// FileServer's file or a learned or WithDictionary dictionary behind a
// handler that sets its own Cache-Control; and each is counted.
func TestDictionaryABrowserWouldNotRegisterGoesWithoutUseAsDictionary(t *testing.T) {
	for _, tc := range unregistrableCases {
		t.Run(tc.name, func(t *testing.T) {
			var counters squeeze.Counters
			m := newMiddleware(t, squeeze.WithObserver(counters.Observer()), squeeze.WithDictionaryMatch("/app/*"),
				squeeze.WithDictionary("/dict/site", "/app/*", []byte(strings.Repeat("a dictionary of the site ", 40))))
			set := func(h http.Header) {
				for k, v := range tc.header {
					h.Set(k, v)
				}
			}
			page := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/javascript")
				set(w.Header())
				_, _ = w.Write([]byte(strings.Repeat("function app() { return 42; }\n", 200)))
			}))
			// A handler in front sets the caching headers of the
			// dictionary and of the file.
			front := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					set(w.Header())
					h.ServeHTTP(w, r)
				})
			}
			files := fstest.MapFS{"main.js": {Data: []byte(strings.Repeat("function main() { return 7; }\n", 200))}}
			fsrv, _ := fileServer(t, m, files)
			for _, got := range []struct {
				what string
				h    http.Header
			}{
				{"a remembered body", serveAt(page, "/app/main.js", "br").Header()},
				{"a WithDictionary dictionary", serveAt(front(m.Handler(http.NotFoundHandler())), "/dict/site", "br").Header()},
				{"a FileServer's file", serveAt(front(http.StripPrefix("/app/", fsrv)), "/app/main.js", "br").Header()},
			} {
				if has := got.h.Get("Use-As-Dictionary") != ""; has != tc.kept {
					t.Errorf("%s under %v: Use-As-Dictionary %q, want it only where a browser registers it", got.what, tc.header, got.h.Get("Use-As-Dictionary"))
				}
			}
			want := `"unregistrable":3`
			if tc.kept {
				want = `"unregistrable":0`
			}
			if s := counters.String(); !strings.Contains(s, want) {
				t.Errorf("counters lack %s", want)
			}
		})
	}
}
