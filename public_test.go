package squeeze_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
)

// What may be shared beyond its client (public.go): a response that is
// private, or an answer to credentials that does not say public, never
// becomes a dictionary, local or in the fleet's store, and never goes out
// as a delta against a dictionary a response left.

// secret is what a private page holds: it must reach no store.
const secret = "SSN 078-05-1120"

// privatePage is a page on a dictionary path holding secret among text
// that compresses.
var privatePage = append(append(textBody(31, 12<<10), secret...), textBody(32, 4<<10)...)

// privacyCase is one way a response is private (or, for the controls,
// public): the header its handler sets and the header its request sends.
type privacyCase struct {
	name       string
	respHeader []string // pairs
	reqHeader  []string // pairs
	public     bool
}

var privacyCases = []privacyCase{
	{"Cache-Control private", []string{"Cache-Control", "private, max-age=600"}, nil, false},
	{"Cache-Control no-store", []string{"Cache-Control", "no-store"}, nil, false},
	{"Set-Cookie", []string{"Set-Cookie", "session=abc; HttpOnly"}, nil, false},
	{"request with Authorization", []string{"Cache-Control", "max-age=600"}, []string{"Authorization", "Bearer user-7"}, false},
	{"request with Cookie", []string{"Cache-Control", "max-age=600"}, []string{"Cookie", "session=abc"}, false},
	{"request with Cookie, response s-maxage", []string{"Cache-Control", "s-maxage=600"}, []string{"Cookie", "session=abc"}, false},
	// Controls: the same page, shareable, is a dictionary.
	{"public, no credentials", []string{"Cache-Control", "max-age=600"}, nil, true},
	{"request with Cookie, response public", []string{"Cache-Control", "public, max-age=600"}, []string{"Cookie", "session=abc"}, true},
}

// privacyHandler serves privatePage at /app/account with tc's header, and
// public pages (the path's text) at every other path under /app/.
func privacyHandler(tc privacyCase) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path != "/app/account" {
			w.Header().Set("Cache-Control", "max-age=600")
			_, _ = w.Write(append(bytes.Clone(privatePage[:12<<10]), r.URL.Path...))
			return
		}
		for i := 0; i+1 < len(tc.respHeader); i += 2 {
			w.Header().Add(tc.respHeader[i], tc.respHeader[i+1])
		}
		_, _ = w.Write(privatePage)
	})
}

// storeHolds reports whether any value in store contains s.
func storeHolds(store *memStore, s string) bool {
	for _, k := range store.keys() {
		if bytes.Contains(store.value(k), []byte(s)) {
			return true
		}
	}
	return false
}

func TestPrivateResponseNeverBecomesADictionary(t *testing.T) {
	for _, tc := range privacyCases {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			m := newMiddleware(t, squeeze.WithDictionaryMatch("/app/*"), squeeze.WithSharedStore(store))
			forEachProtocol(t, m.Handler(privacyHandler(tc)), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				// Served often enough to earn a write, were it public.
				for range squeeze.SharedAdmitAfterDefault + 1 {
					res, raw := fetch(t, c, srv.URL+"/app/account", chromeAE, tc.reqHeader...)
					checkBody(t, res.Header, raw, privatePage)
					if got := res.Header.Get("Use-As-Dictionary") != ""; got != tc.public {
						t.Fatalf("Use-As-Dictionary %q on a response public=%v", res.Header.Get("Use-As-Dictionary"), tc.public)
					}
				}
				// A public page on the same pattern, to a request naming
				// the private page: a delta would show it was remembered.
				// One path per protocol: sent once each, it earns no write.
				news := "/app/news-h1"
				if srv.EnableHTTP2 {
					news = "/app/news-h2"
				}
				res, raw := fetch(t, c, srv.URL+news, chromeAE, "Available-Dictionary", availableFor(privatePage))
				delta := res.Header.Get("Content-Encoding") == squeeze.DCZ
				if delta != tc.public {
					t.Fatalf("a page naming the account page as its dictionary came as %q; remembered=%v, want %v",
						res.Header.Get("Content-Encoding"), delta, tc.public)
				}
				if delta {
					decodeDelta(t, res.Header, raw, privatePage, append(bytes.Clone(privatePage[:12<<10]), news...))
				}
			})
			squeeze.WaitSharedStore(m)
			if got := storeHolds(store, secret); got != tc.public {
				t.Errorf("the fleet's store holds the page: %v, want %v (keys %q)", got, tc.public, store.keys())
			}
			if n := store.sets.Load() + store.claims.Load(); !tc.public && n != 0 {
				t.Errorf("%d writes to the fleet's store after private responses and a page sent once; want none", n)
			}
		})
	}
}

// A dictionary some client had remembered (here, a public page of
// attacker-chosen text: a guess of the private page) is never the base of
// a delta of a private response: the private page goes out as it would
// without dictionaries, whether the dictionary is held or not, so neither
// its size against the guess nor its coding tells whether the guess was
// right. A dictionary of WithDictionary, which the operator chose, still
// serves private responses.
func TestPrivateResponseIsNoDeltaAgainstARememberedDictionary(t *testing.T) {
	// What /app/guess serves, and the operator's own dictionary.
	guess := append(bytes.Clone(privatePage[:12<<10]), "/app/guess"...)
	trained := textBody(31, 12<<10)
	for _, tc := range privacyCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithDictionaryMatch("/app/*"),
				squeeze.WithDictionary("/dict/app.dict", "/app/*", trained))
			forEachProtocol(t, m.Handler(privacyHandler(tc)), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, _ := fetch(t, c, srv.URL+"/app/guess", chromeAE)
				if res.Header.Get("Use-As-Dictionary") == "" {
					t.Fatal("the public guess page was not made a dictionary")
				}
				for _, held := range []bool{true, false} {
					dict := guess
					if !held {
						dict = []byte("a dictionary nobody holds")
					}
					hdr := append([]string{"Available-Dictionary", availableFor(dict)}, tc.reqHeader...)
					res, raw := fetch(t, c, srv.URL+"/app/account", chromeAE, hdr...)
					ce := res.Header.Get("Content-Encoding")
					wantDelta := held && tc.public
					if got := ce == squeeze.DCZ || ce == squeeze.DCB; got != wantDelta {
						t.Fatalf("dictionary held %v: the account page came as %q; want a delta %v", held, ce, wantDelta)
					}
					if wantDelta {
						decodeDelta(t, res.Header, raw, guess, privatePage)
					} else {
						checkBody(t, res.Header, raw, privatePage)
						if ce != squeeze.Zstd {
							t.Errorf("dictionary held %v: Content-Encoding %q, want zstd as without a dictionary", held, ce)
						}
					}
				}
				// The operator's dictionary serves every response.
				hdr := append([]string{"Available-Dictionary", availableFor(trained)}, tc.reqHeader...)
				res, raw := fetch(t, c, srv.URL+"/app/account", chromeAE, hdr...)
				if ce := res.Header.Get("Content-Encoding"); ce != squeeze.DCZ {
					t.Fatalf("against WithDictionary's dictionary: Content-Encoding %q, want dcz", ce)
				}
				decodeDelta(t, res.Header, raw, trained, privatePage)
			})
		})
	}
}

// A FileServer's file that goes out in a response that is not public is
// neither a dictionary nor a delta against one remembered from a file.
func TestFileServerPrivateResponseIsNoDictionary(t *testing.T) {
	v1, v2 := versions(16 << 10)
	files := fstest.MapFS{"app.v1.js": {Data: v1}, "app.v2.js": {Data: v2}}
	for _, tc := range privacyCases {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			m := newMiddleware(t, squeeze.WithDictionaryMatch("/js/app.*.js"), squeeze.WithSharedStore(store))
			server := m.FileServer(files)
			fs := http.StripPrefix("/js/", server)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tc.respHeader); i += 2 {
					w.Header().Add(tc.respHeader[i], tc.respHeader[i+1])
				}
				fs.ServeHTTP(w, r)
			})
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE, tc.reqHeader...)
				checkBody(t, res.Header, raw, v1)
				if got := res.Header.Get("Use-As-Dictionary") != ""; got != tc.public {
					t.Fatalf("Use-As-Dictionary %q on a response public=%v", res.Header.Get("Use-As-Dictionary"), tc.public)
				}
				hdr := append([]string{"Available-Dictionary", availableFor(v1)}, tc.reqHeader...)
				res, raw = fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, hdr...)
				ce := res.Header.Get("Content-Encoding")
				if got := ce == squeeze.DCZ || ce == squeeze.DCB; got != tc.public {
					t.Fatalf("v2 naming v1 came as %q; want a delta %v", ce, tc.public)
				}
				if !tc.public {
					checkBody(t, res.Header, raw, v2)
				}
			})
			squeeze.WaitFileServer(server)
			squeeze.WaitSharedStore(m)
			written := false
			for _, k := range store.keys() {
				written = written || strings.HasPrefix(k, "dict:")
			}
			if written != tc.public {
				t.Errorf("a dictionary written to the store: %v, want %v (keys %q)", written, tc.public, store.keys())
			}
			// Nor is any encoding of a file sent privately claimed or
			// written.
			if !tc.public && len(store.keys()) > 0 {
				t.Errorf("the store holds %q after private responses only", store.keys())
			}
		})
	}
}

// A Cache entry whose body went out only in responses that are not public
// is upgraded for this replica alone: its best-level encoding is neither
// claimed in nor written to the fleet's store. Once a public response hits
// it, its upgrade is shared as before.
func TestCacheUpgradeOfPrivateResponseIsNotShared(t *testing.T) {
	page := textBody(41, 24<<10)
	for _, tc := range privacyCases {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			c := newCache(t, 64<<20)
			m := newMiddleware(t, squeeze.WithCache(c), squeeze.WithSharedStore(store), squeeze.WithEncodings(squeeze.Zstd))
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				for i := 0; i+1 < len(tc.respHeader); i += 2 {
					w.Header().Add(tc.respHeader[i], tc.respHeader[i+1])
				}
				_, _ = w.Write(page)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
				for range 4 { // a store and three hits queue the upgrade
					res, raw := fetch(t, cl, srv.URL+"/page", squeeze.Zstd, tc.reqHeader...)
					checkBody(t, res.Header, raw, page)
				}
				squeeze.WaitUpgrades(c)
				squeeze.WaitSharedStore(m)
			})
			// The Cache keeps no response marked private, no-store or
			// with Set-Cookie at all; answers to credentials it keeps
			// and upgrades, for this replica alone.
			if got := len(store.keys()) > 0; got != tc.public {
				t.Errorf("the store holds %q; want anything written %v", store.keys(), tc.public)
			}
		})
	}
}
