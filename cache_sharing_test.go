package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// The tests in this file pin the cache's invariant: a response never
// carries bytes its own handler did not produce, whatever its ETag, Vary,
// cookies or mount point say.

// cacheModes are the ways a Middleware may use its Cache: by default
// (found by content: whole bodies by their bytes, streams by their
// request, compared with the bytes the last one stored) and trusting its
// handlers' strong ETags for streams.
var cacheModes = []struct {
	name string
	opts []squeeze.CacheOption
}{
	{"default", nil},
	{"trusted ETags", []squeeze.CacheOption{squeeze.CacheTrustedETags()}},
}

// sharingSizes are a body that ends within the buffer and a stream.
var sharingSizes = []struct {
	name string
	n    int
}{
	{"whole", 4 << 10},
	{"stream", 3 * squeeze.DefaultBufferSize},
}

// personal returns n bytes of compressible text that greet who, different
// for every who.
func personal(who string, n int) []byte {
	b := []byte("Hello " + who + "\n")
	return append(b, textBody(len(who), n-len(b))...)
}

// sharingRequest is one request of a sharing case: its path and header
// fields, and whose body its handler writes.
type sharingRequest struct {
	path string
	hdr  []string
	who  string
}

// sharingCase is a handler whose two requests get different bytes under
// one strong ETag (or none at all), as real handlers do.
type sharingCase struct {
	name string
	// serve sets the handler's header for r and returns whose body it
	// writes.
	serve func(h http.Header, r *http.Request) (who string)
	// mount mounts a handler made by the Middleware; nil serves it at
	// the root.
	mount         func(m *squeeze.Middleware, handler func(tenant string) http.Handler) http.Handler
	first, second sharingRequest
	// neverStored is set for responses that must never be stored.
	neverStored bool
}

func cookieUser(r *http.Request) string {
	c, err := r.Cookie("user")
	if err != nil {
		return "nobody"
	}
	return c.Value
}

// handler returns tc's handler mounted with m: it sets the fields tc's
// serve sets, and write writes the body of whoever serve (or the tenant
// the mount names) says.
func (tc sharingCase) handler(m *squeeze.Middleware, write func(w http.ResponseWriter, r *http.Request, who string)) http.Handler {
	handler := func(tenant string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			who := tc.serve(w.Header(), r)
			if tenant != "" {
				who = tenant
			}
			write(w, r, who)
		})
	}
	if tc.mount != nil {
		return tc.mount(m, handler)
	}
	return m.Handler(handler(""))
}

// perUser is a case whose handler greets the user its cookie names at
// /me, alice then bob, under the header fields set sets; neverStored says
// whether such a response must never be stored.
func perUser(name string, neverStored bool, set func(h http.Header, r *http.Request)) sharingCase {
	return sharingCase{
		name: name,
		serve: func(h http.Header, r *http.Request) string {
			set(h, r)
			return cookieUser(r)
		},
		first:       sharingRequest{"/me", []string{"Cookie", "user=alice"}, "alice"},
		second:      sharingRequest{"/me", []string{"Cookie", "user=bob"}, "bob"},
		neverStored: neverStored,
	}
}

var sharingCases = []sharingCase{
	{
		name: "Vary: Cookie",
		serve: func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"articles-v7"`)
			h.Set("Vary", "Cookie")
			return cookieUser(r)
		},
		first:  sharingRequest{"/articles", []string{"Cookie", "user=alice"}, "alice"},
		second: sharingRequest{"/articles", []string{"Cookie", "user=bob"}, "bob"},
	},
	{
		name: "Authorization",
		serve: func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"articles-v7"`)
			return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		},
		first:  sharingRequest{"/token", []string{"Authorization", "Bearer alice-secret"}, "alice-secret"},
		second: sharingRequest{"/token", []string{"Authorization", "Bearer bob-secret"}, "bob-secret"},
	},
	{
		name: "Vary: Accept-Language",
		serve: func(h http.Header, r *http.Request) string {
			lang := r.Header.Get("Accept-Language")
			h.Set("ETag", `"articles-v7"`)
			h.Set("Vary", "Accept-Language")
			h.Set("Content-Language", lang)
			return lang
		},
		first:  sharingRequest{"/", []string{"Accept-Language", "en"}, "en"},
		second: sharingRequest{"/", []string{"Accept-Language", "fr"}, "fr"},
	},
	{
		name: "tenants under StripPrefix",
		serve: func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"1"`)
			return "" // the tenant's handler says who
		},
		mount: func(m *squeeze.Middleware, handler func(string) http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/a/", http.StripPrefix("/a", m.Handler(handler("tenant a"))))
			mux.Handle("/b/", http.StripPrefix("/b", m.Handler(handler("tenant b"))))
			return mux
		},
		first:  sharingRequest{"/a/items", nil, "tenant a"},
		second: sharingRequest{"/b/items", nil, "tenant b"},
	},
	{
		name: "an escaped slash",
		serve: func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"1"`)
			return r.URL.EscapedPath() // URL.Path is /files/x/y for both
		},
		first:  sharingRequest{"/files/x%2Fy", nil, "/files/x%2Fy"},
		second: sharingRequest{"/files/x/y", nil, "/files/x/y"},
	},
	perUser("Cache-Control: private under a lower-case key", true, func(h http.Header, r *http.Request) {
		h["Etag"] = []string{`"v1"`}
		h["cache-control"] = []string{"private"}
	}),
	perUser("Cache-Control: no-store under a lower-case key", true, func(h http.Header, r *http.Request) {
		h["Etag"] = []string{`"v1"`}
		h["cache-control"] = []string{"no-store"}
	}),
	perUser("Cache-Control: private naming a field", true, func(h http.Header, r *http.Request) {
		h.Set("ETag", `"v1"`)
		h.Set("Cache-Control", `private="Set-Cookie", max-age=60`)
	}),
	perUser("Set-Cookie under a lower-case key", true, func(h http.Header, r *http.Request) {
		h["Etag"] = []string{`"v1"`}
		h["set-cookie"] = []string{"session=" + cookieUser(r)}
	}),
	perUser("Vary: Cookie under a lower-case key", false, func(h http.Header, r *http.Request) {
		h["Etag"] = []string{`"v1"`}
		h["vary"] = []string{"Cookie"}
	}),
	{
		name: "Vary: Sec-Fetch-Site",
		serve: func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"v1"`)
			h.Set("Vary", "Sec-Fetch-Site")
			return r.Header.Get("Sec-Fetch-Site")
		},
		first:  sharingRequest{"/widget", []string{"Sec-Fetch-Site", "same-origin"}, "same-origin"},
		second: sharingRequest{"/widget", []string{"Sec-Fetch-Site", "cross-site"}, "cross-site"},
	},
	perUser("Vary: *", true, func(h http.Header, r *http.Request) {
		h.Set("ETag", `"v1"`)
		h.Set("Vary", "*")
	}),
}

// Each case's second request must get its own handler's bytes, with the
// cache on, whether the Middleware trusts ETags or not, for whole bodies
// and streams, over HTTP/1.1 and HTTP/2; and what must never be stored is
// not.
func TestCacheNeverServesAnotherHandlersBytes(t *testing.T) {
	for _, tc := range sharingCases {
		for _, mode := range cacheModes {
			for _, size := range sharingSizes {
				t.Run(tc.name+"/"+mode.name+"/"+size.name, func(t *testing.T) {
					c := newCache(t, 64<<20)
					m := newMiddleware(t, squeeze.WithCache(c, mode.opts...))
					h := tc.handler(m, func(w http.ResponseWriter, _ *http.Request, who string) {
						_, _ = w.Write(personal(who, size.n))
					})
					forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
						for _, req := range []sharingRequest{tc.first, tc.second, tc.first, tc.second} {
							res, raw := fetch(t, cl, srv.URL+req.path, "zstd", req.hdr...)
							if res.StatusCode != http.StatusOK {
								t.Fatalf("GET %s: status %d", req.path, res.StatusCode)
							}
							checkBody(t, res.Header, raw, personal(req.who, size.n))
						}
						if s := c.Stats(); tc.neverStored && s.Stores != 0 {
							t.Errorf("%d stores, want none: %+v", s.Stores, s)
						}
					})
				})
			}
		}
	}
}

// What may be shared still is: a whole body is found by its content for
// any request, and a stream by its request, compared, for any request too;
// with CacheTrustedETags a stream is found by its ETag, for a request with
// Authorization only when the response allows a shared cache to reuse it
// (RFC 9111 §3.5), and one that the ETag may not key is found by content.
// A stream whose request has no RequestURI to key on is not looked up.
func TestCacheSharesOnlyWhatMayBeShared(t *testing.T) {
	const whole, stream = 4 << 10, 3 * squeeze.DefaultBufferSize
	cases := []struct {
		name    string
		trusted bool
		n       int
		// cacheControl and vary are the response's, hdr the requests'.
		cacheControl, vary string
		hdr                [2][]string
		// hit is whether the second request is served from the cache;
		// looked whether it looks an entry up at all.
		hit, looked bool
	}{
		{name: "whole, two users, one body", n: whole, vary: "Cookie",
			hdr: [2][]string{{"Cookie", "user=alice"}, {"Cookie", "user=bob"}}, hit: true, looked: true},
		{name: "whole, Authorization", n: whole,
			hdr: [2][]string{{"Authorization", "Bearer a"}, {"Authorization", "Bearer b"}}, hit: true, looked: true},
		{name: "stream by default", n: stream, hit: true, looked: true},
		{name: "stream, trusted", trusted: true, n: stream, hit: true, looked: true},
		{name: "stream, trusted, Vary: accept-encoding", trusted: true, n: stream, vary: "accept-encoding, Available-Dictionary",
			hit: true, looked: true},
		{name: "stream, trusted, Vary: Cookie", trusted: true, n: stream, vary: "Cookie",
			hdr: [2][]string{{"Cookie", "user=alice"}, {"Cookie", "user=alice"}}, hit: true, looked: true},
		{name: "stream, trusted, Authorization", trusted: true, n: stream,
			hdr: [2][]string{{"Authorization", "Bearer a"}, {"Authorization", "Bearer a"}}, hit: true, looked: true},
		{name: "stream, trusted, Authorization, public", trusted: true, n: stream, cacheControl: "public, max-age=60",
			hdr: [2][]string{{"Authorization", "Bearer a"}, {"Authorization", "Bearer b"}}, hit: true, looked: true},
		{name: "stream, trusted, Authorization, s-maxage", trusted: true, n: stream, cacheControl: "s-maxage=60",
			hdr: [2][]string{{"Authorization", "Bearer a"}, {"Authorization", "Bearer b"}}, hit: true, looked: true},
		{name: "stream, trusted, Authorization, must-revalidate", trusted: true, n: stream, cacheControl: "max-age=0, must-revalidate",
			hdr: [2][]string{{"Authorization", "Bearer a"}, {"Authorization", "Bearer b"}}, hit: true, looked: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, 64<<20)
			var opts []squeeze.CacheOption
			if tc.trusted {
				opts = append(opts, squeeze.CacheTrustedETags())
			}
			body := personal("everyone", tc.n)
			h := newMiddleware(t, squeeze.WithCache(c, opts...)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("ETag", `"v1"`)
				if tc.cacheControl != "" {
					w.Header().Set("Cache-Control", tc.cacheControl)
				}
				if tc.vary != "" {
					w.Header().Set("Vary", tc.vary)
				}
				_, _ = w.Write(body)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
				before := c.Stats()
				for i, hdr := range tc.hdr {
					res, raw := fetch(t, cl, srv.URL+"/page?q=1", "zstd", hdr...)
					checkBody(t, res.Header, raw, body)
					s := c.Stats()
					if i == 1 && (s.Hits > before.Hits) != tc.hit {
						t.Errorf("second response a hit: %v, want %v (%+v)", s.Hits > before.Hits, tc.hit, s)
					}
					if looked := s.Hits+s.Misses > before.Hits+before.Misses; i == 1 && looked != tc.looked {
						t.Errorf("looked up: %v, want %v (%+v)", looked, tc.looked, s)
					}
				}
			})
		})
	}
}

// A request built by hand has no RequestURI, and a handler behind
// http.StripPrefix sees only the stripped path: no stream is stored or
// served by ETag without the target the client sent.
func TestCacheStoresNoStreamWithoutRequestURI(t *testing.T) {
	c := newCache(t, 64<<20)
	m := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()))
	handler := func(tenant string) http.Handler {
		return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("ETag", `"1"`)
			_, _ = w.Write(personal(tenant, 3*squeeze.DefaultBufferSize))
		}))
	}
	mux := http.NewServeMux()
	mux.Handle("/a/", http.StripPrefix("/a", handler("tenant a")))
	mux.Handle("/b/", http.StripPrefix("/b", handler("tenant b")))
	for _, tenant := range []string{"a", "b", "a", "b"} {
		r, err := http.NewRequest(http.MethodGet, "http://example.com/"+tenant+"/items", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Accept-Encoding", "zstd")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		checkBody(t, rec.Header(), rec.Body.Bytes(), personal("tenant "+tenant, 3*squeeze.DefaultBufferSize))
	}
	if s := c.Stats(); s.Stores != 0 || s.Hits+s.Misses != 0 {
		t.Errorf("%+v: want no look-up and no store", s)
	}
}

// Concurrent requests of different users and tenants, for a body that
// everyone shares and for bodies that differ under one ETag, each get
// their own handler's bytes, while flights and hits interleave.
func TestCacheConcurrentUsersGetTheirOwnBytes(t *testing.T) {
	goroutines, rounds := 16, 4
	if testing.Short() {
		// Under -race -short: enough interleaving for the race detector.
		goroutines, rounds = 8, 2
	}
	for _, name := range []string{"Vary: Cookie", "Authorization", "tenants under StripPrefix"} {
		i := slices.IndexFunc(sharingCases, func(tc sharingCase) bool { return tc.name == name })
		tc := sharingCases[i]
		for _, mode := range cacheModes {
			for _, size := range sharingSizes {
				t.Run(tc.name+"/"+mode.name+"/"+size.name, func(t *testing.T) {
					c := newCache(t, 64<<20)
					m := newMiddleware(t, squeeze.WithCache(c, mode.opts...))
					h := tc.handler(m, func(w http.ResponseWriter, r *http.Request, who string) {
						if r.URL.Query().Has("shared") {
							who = "everyone"
						}
						writeChunks(w, personal(who, size.n), 4096)
					})
					forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
						var wg sync.WaitGroup
						for g := range goroutines {
							wg.Go(func() {
								for j := range rounds {
									req, query := tc.first, ""
									if (g+j)%2 == 1 {
										req = tc.second
									}
									who := req.who
									if j%3 == 2 {
										query, who = "?shared", "everyone"
									}
									res, raw := fetch(t, cl, srv.URL+req.path+query, allCodings[g%len(allCodings)], req.hdr...)
									checkBody(t, res.Header, raw, personal(who, size.n))
								}
							})
						}
						wg.Wait()
					})
				})
			}
		}
	}
}
