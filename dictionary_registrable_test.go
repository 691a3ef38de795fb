package squeeze_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// unregistrableCases are caching headers under which Chromium registers
// no dictionary (RFC 9842 section 2.2.1), and some under which it does.
// kept is for the FileServer's files and squeeze's dictionaries, which get
// a day's max-age when their Cache-Control is missing; handlerKept for a
// body remembered from a handler, which gets none.
var unregistrableCases = []struct {
	name              string
	header            map[string]string
	kept, handlerKept bool
}{
	{"max-age", map[string]string{"Cache-Control": "max-age=60"}, true, true},
	{"nothing said", map[string]string{}, true, false},
	{"max-age=0, stale-while-revalidate", map[string]string{"Cache-Control": "max-age=0, stale-while-revalidate=60"}, true, true},
	{"Expires later", map[string]string{"Cache-Control": "public", "Expires": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, true, true},
	{"Expires later, no Cache-Control", map[string]string{"Expires": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, true, true},
	// Chromium's heuristic freshness: a tenth of the time since the
	// Last-Modified of a 200.
	{"Last-Modified a day ago", map[string]string{"Last-Modified": time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}, true, true},
	{"public, Last-Modified a day ago", map[string]string{"Cache-Control": "public", "Last-Modified": time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}, true, true},
	{"no-cache", map[string]string{"Cache-Control": "no-cache, max-age=60"}, false, false},
	{"Pragma no-cache", map[string]string{"Cache-Control": "max-age=60", "Pragma": "no-cache"}, false, false},
	// Chromium keeps a dictionary that must be revalidated while it is
	// fresh, but gives it neither stale-while-revalidate nor a heuristic
	// freshness.
	{"must-revalidate", map[string]string{"Cache-Control": "max-age=60, must-revalidate"}, true, true},
	{"must-revalidate, stale-while-revalidate", map[string]string{"Cache-Control": "max-age=0, must-revalidate, stale-while-revalidate=60"}, false, false},
	{"must-revalidate, Last-Modified", map[string]string{"Cache-Control": "must-revalidate", "Last-Modified": time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}, false, false},
	{"max-age=0", map[string]string{"Cache-Control": "max-age=0"}, false, false},
	{"Age past max-age", map[string]string{"Cache-Control": "max-age=60", "Age": "120"}, false, false},
	{"s-maxage only", map[string]string{"Cache-Control": "public, s-maxage=60"}, false, false},
	{"Expires past", map[string]string{"Cache-Control": "public", "Expires": "Thu, 01 Jan 2015 00:00:00 GMT"}, false, false},
	{"Expires invalid", map[string]string{"Cache-Control": "public", "Expires": "0"}, false, false},
	{"no freshness", map[string]string{"Cache-Control": "public"}, false, false},
	{"Last-Modified later than Date", map[string]string{"Cache-Control": "public", "Last-Modified": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, false, false},
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
			refused := 0
			for _, got := range []struct {
				what string
				h    http.Header
				kept bool
			}{
				{"a remembered body", serveAt(page, "/app/main.js", "br").Header(), tc.handlerKept},
				{"a WithDictionary dictionary", serveAt(front(m.Handler(http.NotFoundHandler())), "/dict/site", "br").Header(), tc.kept},
				{"a FileServer's file", serveAt(front(http.StripPrefix("/app/", fsrv)), "/app/main.js", "br").Header(), tc.kept},
			} {
				if has := got.h.Get("Use-As-Dictionary") != ""; has != got.kept {
					t.Errorf("%s under %v: Use-As-Dictionary %q, want it only where a browser registers it", got.what, tc.header, got.h.Get("Use-As-Dictionary"))
				}
				if !got.kept {
					refused++
				}
			}
			want := fmt.Sprintf(`"unregistrable":%d`, refused)
			if s := counters.String(); !strings.Contains(s, want) {
				t.Errorf("counters lack %s", want)
			}
		})
	}
}

// TestDictionaryAHandlerGaveNoFreshnessGoesWithoutUseAsDictionary: over
// HTTP/1.1 and HTTP/2, a handler's response on a WithDictionaryMatch
// pattern that says nothing of caching (so a browser would not keep it:
// no freshness, RFC 9842 section 2.2.1) goes without Use-As-Dictionary,
// each counted and the first on the pattern logged with its reason; one
// the handler gives a max-age keeps it.
func TestDictionaryAHandlerGaveNoFreshnessGoesWithoutUseAsDictionary(t *testing.T) {
	body := []byte(strings.Repeat("function app() { return 42; }\n", 200))
	for _, p := range testtool.Protocols() {
		t.Run(p.Name, func(t *testing.T) {
			var counters squeeze.Counters
			m := newMiddleware(t, squeeze.WithObserver(counters.Observer()), squeeze.WithDictionaryMatch("/app/*"))
			var mu sync.Mutex
			var logs []string
			squeeze.SetLearnedLog(m, func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, fmt.Sprintf(format, args...))
			})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/javascript")
				if r.URL.Path == "/app/fresh.js" {
					w.Header().Set("Cache-Control", "max-age=60")
				}
				_, _ = w.Write(body)
			}))
			srv, c := testtool.StartServer(t, p.Name, p.Major, h, false)
			for range 3 {
				res, _ := testtool.Fetch(t, c, srv.URL+"/app/main.js?v=1", "br")
				if v := res.Header.Get("Use-As-Dictionary"); v != "" {
					t.Errorf("a response without freshness: Use-As-Dictionary %q, want none", v)
				}
			}
			res, _ := testtool.Fetch(t, c, srv.URL+"/app/fresh.js", "br")
			if v := res.Header.Get("Use-As-Dictionary"); v != `match="/app/*"` {
				t.Errorf("a response with max-age=60: Use-As-Dictionary %q, want match=\"/app/*\"", v)
			}
			if s := counters.String(); !strings.Contains(s, `"unregistrable":3`) {
				t.Errorf("counters lack \"unregistrable\":3: %s", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(logs) != 1 || !strings.Contains(logs[0], `"/app/*"`) || !strings.Contains(logs[0], "no freshness") ||
				!strings.Contains(logs[0], "/app/main.js") || strings.Contains(logs[0], "v=1") {
				t.Errorf("logs %q, want one line naming the pattern, the path without its query and no freshness", logs)
			}
		})
	}
}
