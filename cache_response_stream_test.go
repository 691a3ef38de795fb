package squeeze_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Streams found by content (streamByContent): a body longer than the
// buffer is held back while its bytes are those its request's last
// response stored, and goes out from the Cache only if the handler ends
// with exactly them; any other body is the handler's own, encoded.

// bodyHandler serves what body returns for each request as text/plain in
// chunks of 4 KiB, as a file server would (http.ServeContent, which
// declares the length and copies through ReadFrom) when the request has
// X-File.
func bodyHandler(body func(r *http.Request) []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("X-File") != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
			return
		}
		writeText("text/plain", b, 4096)(w, r)
	}
}

// A stream served twice is a hit the second time, without an encoder run:
// the stored encoding goes out with its Content-Length, and decodes to
// the handler's bytes; for a body of 100 KB and one of 500 KB, written in
// chunks or through ReadFrom with its length declared, in every coding,
// over HTTP/1.1 and HTTP/2.
func TestCacheStreamIsFoundByContent(t *testing.T) {
	for _, n := range []int{100 << 10, 500 << 10} {
		for _, file := range []bool{false, true} {
			t.Run(strconv.Itoa(n>>10)+"KiB/file="+strconv.FormatBool(file), func(t *testing.T) {
				body := textBody(n, n)
				c := newCache(t, 64<<20)
				var hdr []string
				if file {
					hdr = []string{"X-File", "1"}
				}
				h := newMiddleware(t, squeeze.WithCache(c)).Handler(bodyHandler(func(*http.Request) []byte { return body }))
				forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
					for _, coding := range []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip} { // the default offers
						var sizes [2]int
						for i := range 2 {
							before := c.Stats()
							res, raw := fetch(t, cl, srv.URL+"/app.js", coding, hdr...)
							checkBody(t, res.Header, raw, body)
							if ce := res.Header.Get("Content-Encoding"); ce != coding {
								t.Fatalf("%s: Content-Encoding %q", coding, ce)
							}
							sizes[i] = len(raw)
							s := c.Stats()
							if hit := s.Hits > before.Hits; hit != (i == 1) {
								t.Fatalf("%s: response %d a hit: %v (%+v)", coding, i+1, hit, s)
							}
							if i == 1 && res.ContentLength != int64(len(raw)) {
								t.Errorf("%s: hit's Content-Length %d, want %d, the stored encoding's", coding, res.ContentLength, len(raw))
							}
						}
						if sizes[0] != sizes[1] {
							t.Errorf("%s: the hit sent %d bytes, the miss %d: not the stored encoding", coding, sizes[1], sizes[0])
						}
					}
				})
			})
		}
	}
}

// A body that changes between two responses under one request, at its
// first byte, in the middle, at its last, longer or shorter, always
// decodes to the handler's new bytes, with or without a declared length;
// and the next response with the new bytes is a hit.
func TestCacheStreamFoundByContentChangedGetsItsOwnBytes(t *testing.T) {
	const n = 100 << 10
	old := textBody(3, n)
	flip := func(i int) []byte {
		b := bytes.Clone(old)
		b[i] ^= 0x20
		return b
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"first byte", flip(0)},
		{"within the buffer", flip(1000)},
		{"middle", flip(n / 2)},
		{"last byte", flip(n - 1)},
		{"longer by a byte", append(bytes.Clone(old), 'x')},
		{"longer", append(bytes.Clone(old), textBody(4, n)...)},
		{"shorter by a byte", old[:n-1]},
		{"shorter, still a stream", old[:n/2]},
		{"shorter, within the buffer", old[:4<<10]},
	} {
		for _, file := range []bool{false, true} {
			t.Run(tc.name+"/file="+strconv.FormatBool(file), func(t *testing.T) {
				c := newCache(t, 64<<20)
				var mu sync.Mutex
				current := old
				h := newMiddleware(t, squeeze.WithCache(c)).Handler(bodyHandler(func(*http.Request) []byte {
					mu.Lock()
					defer mu.Unlock()
					return current
				}))
				var hdr []string
				if file {
					hdr = []string{"X-File", "1"}
				}
				forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
					mu.Lock()
					current = old
					mu.Unlock()
					res, raw := fetch(t, cl, srv.URL+"/app.js", "gzip", hdr...)
					checkBody(t, res.Header, raw, old)
					mu.Lock()
					current = tc.body
					mu.Unlock()
					for i := range 2 {
						before := c.Stats()
						res, raw = fetch(t, cl, srv.URL+"/app.js", "gzip", hdr...)
						checkBody(t, res.Header, raw, tc.body)
						s := c.Stats()
						// A body within the buffer is found by its bytes
						// alone: over the second protocol, at once.
						whole := len(tc.body) <= squeeze.DefaultBufferSize
						if hit := s.Hits > before.Hits; hit != (i == 1) && !(whole && hit) {
							t.Errorf("response %d with the new bytes a hit: %v (%+v)", i+1, hit, s)
						}
					}
				})
			})
		}
	}
}

// A handler that flushes a stream that its request's last response
// stored sends what it wrote at once: it is not held back for the
// comparison.
func TestCacheStreamFoundByContentFlushesAtOnce(t *testing.T) {
	body := textBody(5, 100<<10)
	c := newCache(t, 64<<20)
	release := make(chan struct{})
	h := newMiddleware(t, squeeze.WithCache(c)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.Header.Get("X-Flush") == "" {
			_, _ = w.Write(body)
			return
		}
		_, _ = w.Write(body[:60<<10])
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write(body[60<<10:])
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
		res, raw := fetch(t, cl, srv.URL+"/feed", "gzip")
		checkBody(t, res.Header, raw, body)
		release = make(chan struct{})
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/feed", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("X-Flush", "1")
		got := make(chan *http.Response, 1)
		go func() {
			res, err := cl.Do(req)
			if err != nil {
				t.Error(err)
				close(got)
				return
			}
			got <- res
		}()
		select {
		case res = <-got:
		case <-time.After(30 * time.Second):
			close(release)
			t.Fatal("no header 30 s after the handler flushed: the stream was held back")
		}
		close(release)
		if res == nil {
			return
		}
		defer res.Body.Close()
		raw, err = io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		checkBody(t, res.Header, raw, body)
	})
}

// Concurrent responses under one request with different bodies each get
// their own bytes, while the Cache stores and replaces the key's entry
// and compares with it.
func TestCacheStreamFoundByContentConcurrentBodiesGetTheirOwnBytes(t *testing.T) {
	goroutines, rounds := 12, 6
	if testing.Short() {
		goroutines, rounds = 6, 3
	}
	bodies := [][]byte{textBody(7, 90<<10), textBody(8, 90<<10), append(textBody(7, 90<<10), 'x'), textBody(7, 60<<10)}
	c := newCache(t, 64<<20)
	h := newMiddleware(t, squeeze.WithCache(c)).Handler(bodyHandler(func(r *http.Request) []byte {
		i, _ := strconv.Atoi(r.Header.Get("X-Body"))
		return bodies[i]
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for j := range rounds {
					i := (g + j) % len(bodies)
					hdr := []string{"X-Body", strconv.Itoa(i)}
					if j%2 == 1 {
						hdr = append(hdr, "X-File", "1")
					}
					res, raw := fetch(t, cl, srv.URL+"/shared", allCodings[g%2], hdr...)
					checkBody(t, res.Header, raw, bodies[i])
				}
			})
		}
		wg.Wait()
	})
	if s := c.Stats(); s.Bytes > s.MaxBytes {
		t.Errorf("%+v: over the budget", s)
	}
}

// A stream that may not be stored (private, no-store, Set-Cookie) is
// neither stored nor served from the Cache, found by content or not.
func TestCacheStreamFoundByContentNeverStoresPrivate(t *testing.T) {
	body := textBody(9, 100<<10)
	for _, tc := range []struct{ name, field, value string }{
		{"private", "Cache-Control", "private, max-age=60"},
		{"no-store", "Cache-Control", "no-store"},
		{"Set-Cookie", "Set-Cookie", "id=1"},
		{"Vary: *", "Vary", "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, 64<<20)
			h := newMiddleware(t, squeeze.WithCache(c)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(tc.field, tc.value)
				writeText("text/plain", body, 4096)(w, r)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
				for range 2 {
					res, raw := fetch(t, cl, srv.URL+"/me", "zstd")
					checkBody(t, res.Header, raw, body)
				}
				if s := c.Stats(); s.Stores != 0 || s.Hits != 0 || s.Entries != 0 {
					t.Errorf("stats %+v, want nothing stored or served", s)
				}
			})
		})
	}
}

// attackHandler serves body, identical for every request, with the
// headers and status the request's X-Variant names: each response's own.
func attackHandler(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("X-Variant")
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Language", "lang-"+v)
		h.Set("Link", "</"+v+">; rel=preload")
		h.Set("X-Own", v)
		status := http.StatusOK
		if v == "404" {
			status = http.StatusNotFound
		}
		w.WriteHeader(status)
		writeChunks(w, body, 4096)
		if strings.HasPrefix(v, "t") {
			h.Set(http.TrailerPrefix+"X-Sum", "sum-"+v) // a trailer set at the end
		}
	}
}

// A stream found by content carries its own handler's header, status and
// trailers, not those of the response that stored the encoding.
func TestCacheStreamFoundByContentCarriesItsOwnHeaderAndTrailers(t *testing.T) {
	body := textBody(11, 100<<10)
	c := newCache(t, 64<<20)
	h := newMiddleware(t, squeeze.WithCache(c)).Handler(attackHandler(body))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
		for _, v := range []string{"a", "b", "404", "c", "t1", "t2", "d"} {
			before := c.Stats().Hits
			res, raw := fetch(t, cl, srv.URL+"/same", "gzip", "X-Variant", v)
			checkBody(t, res.Header, raw, body)
			want := http.StatusOK
			if v == "404" {
				want = http.StatusNotFound
			}
			if res.StatusCode != want {
				t.Errorf("%s: status %d, want %d", v, res.StatusCode, want)
			}
			for _, f := range [][2]string{{"Content-Language", "lang-" + v}, {"Link", "</" + v + ">; rel=preload"}, {"X-Own", v}} {
				if got := res.Header.Get(f[0]); got != f[1] {
					t.Errorf("%s: %s %q, want %q", v, f[0], got, f[1])
				}
			}
			if hit := c.Stats().Hits > before; hit != (v == "b" || v == "c" || v == "d") {
				t.Errorf("%s: a hit: %v", v, hit) // the others are no hit: a 404, a trailer
			}
			if got, want := res.Trailer.Get("X-Sum"), "sum-"+v; strings.HasPrefix(v, "t") && got != want {
				t.Errorf("%s: trailer X-Sum %q, want %q", v, got, want)
			}
		}
	})
}

// Two sites served at one request-target, by Host, with bodies that differ
// only in their last byte, each get their own bytes, and a hit each from
// their own second response on.
func TestCacheStreamFoundByContentHostsGetTheirOwnBytes(t *testing.T) {
	a := textBody(20, 100<<10)
	b := bytes.Clone(a)
	b[len(b)-1] ^= 1
	c := newCache(t, 64<<20)
	h := newMiddleware(t, squeeze.WithCache(c)).Handler(bodyHandler(func(r *http.Request) []byte {
		if strings.HasPrefix(r.Host, "b.") {
			return b
		}
		return a
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
		for i := range 6 {
			host, want := "a.example", a
			if i%2 == 1 {
				host, want = "b.example", b
			}
			if srv.EnableHTTP2 {
				host += ".h2" // sites of their own: the Cache is the first subtest's too
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/app.js", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			req.Header.Set("Accept-Encoding", "gzip")
			before := c.Stats().Hits
			res, raw := testtool.Do(t, cl, req)
			checkBody(t, res.Header, raw, want)
			if hit := c.Stats().Hits > before; hit != (i >= 2) {
				t.Errorf("response %d (%s) a hit: %v", i+1, host, hit)
			}
		}
	})
}

// A stream whose handler sets a trailer at its end (a key with
// [http.TrailerPrefix], after the body) is never stored, as one that
// declares its trailers is not, with or without an ETag to trust: each
// response goes out from its own handler, with its own trailer.
func TestCacheNeverStoresAStreamWithATrailerSetAtItsEnd(t *testing.T) {
	body := textBody(12, 100<<10)
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			c := newCache(t, 64<<20)
			var n atomic.Int64
			h := newMiddleware(t, squeeze.WithCache(c, mode.opts...)).Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("ETag", `"v1"`)
				writeChunks(w, body, 4096)
				w.Header().Set(http.TrailerPrefix+"X-Sum", strconv.FormatInt(n.Add(1), 10))
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
				for range 3 {
					res, raw := fetch(t, cl, srv.URL+"/t", "zstd")
					checkBody(t, res.Header, raw, body)
					if got, want := res.Trailer.Get("X-Sum"), strconv.FormatInt(n.Load(), 10); got != want {
						t.Errorf("trailer X-Sum %q, want %q", got, want)
					}
				}
			})
			if s := c.Stats(); s.Stores != 0 || s.Hits != 0 {
				t.Errorf("%d stores and %d hits, want none: %+v", s.Stores, s.Hits, s)
			}
		})
	}
}
