package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// TestCacheServesTheCodingThatBeatADelta: with a Cache, a whole body whose
// delta lost to the coding without the dictionary (the tiny, repetitive
// body of TestDictionaryDeltaNeverLargerThanTheCodingItReplaces: 64 bytes
// as dcz, 30 as zstd) is encoded once: the repeat of the request, with the
// dictionary or without it, is served from the Cache in that coding, byte
// for byte, and encodes nothing. A client whose coding is no smaller than
// the delta gets the delta. A delta that won is kept and served as before,
// and a private response is stored by neither.
func TestCacheServesTheCodingThatBeatADelta(t *testing.T) {
	dict, tiny := beatenDelta()
	v1, v2 := versions(16 << 10)
	files := map[string][]byte{
		"/js/dict.js": dict, "/js/tiny.js": tiny, "/js/app.v1.js": v1, "/js/app.v2.js": v2,
		"/js/private/tiny.js": tiny, "/js/big.js": bytes.Repeat([]byte("squeeze "), 25000),
	}
	withDict := func(d []byte) []string { return []string{"Available-Dictionary", availableFor(d)} }
	type step struct {
		ae     string
		hdr    []string
		want   string // Content-Encoding
		cached bool   // Event.Cached
	}
	for _, tc := range []struct {
		name  string
		path  string
		dict  []byte // the delta's dictionary, to decode dcz
		steps []step
	}{
		{"delta lost, repeated", "/js/tiny.js", dict, []step{
			{chromeAE, withDict(dict), squeeze.Zstd, false},
			{chromeAE, withDict(dict), squeeze.Zstd, true},
			{chromeAE, withDict(dict), squeeze.Zstd, true},
		}},
		{"delta lost, then without the dictionary", "/js/tiny.js", dict, []step{
			{chromeAE, withDict(dict), squeeze.Zstd, false},
			{squeeze.Zstd, nil, squeeze.Zstd, true},
		}},
		{"without the dictionary, then delta lost", "/js/tiny.js", dict, []step{
			{squeeze.Zstd, nil, squeeze.Zstd, false},
			{chromeAE, withDict(dict), squeeze.Zstd, false}, // the delta must be tried once
			{chromeAE, withDict(dict), squeeze.Zstd, true},
		}},
		{"delta lost, then a client with no other coding", "/js/tiny.js", dict, []step{
			{chromeAE, withDict(dict), squeeze.Zstd, false},
			{"dcz", withDict(dict), squeeze.DCZ, false}, // encoded, not stored: the verdict holds the key
			{chromeAE, withDict(dict), squeeze.Zstd, true},
		}},
		{"delta lost, then a client whose coding in the cache loses to it", "/js/big.js", dict, []step{
			{squeeze.Gzip, nil, squeeze.Gzip, false},          // 370 bytes, stored
			{chromeAE, withDict(dict), squeeze.Zstd, false},   // 44 bytes; the delta, 77, lost
			{"gzip, dcz", withDict(dict), squeeze.DCZ, false}, // gzip found, larger than the delta
			{chromeAE, withDict(dict), squeeze.Zstd, true},
		}},
		{"delta won", "/js/app.v2.js", v1, []step{
			{chromeAE, withDict(v1), squeeze.DCZ, false},
			{chromeAE, withDict(v1), squeeze.DCZ, true},
		}},
		{"private", "/js/private/tiny.js", dict, []step{
			{chromeAE, withDict(dict), squeeze.Zstd, false},
			{chromeAE, withDict(dict), squeeze.Zstd, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range protocols {
				t.Run(p.name, func(t *testing.T) {
					c := newCache(t, 16<<20)
					events := make(chan squeeze.ResponseInfo, 16)
					handler := scripts(files)
					m := newMiddleware(t, squeeze.WithCache(c), squeeze.WithDictionaryMatch("/js/*"), squeeze.WithBufferSize(256<<10),
						squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) { events <- e }}))
					srv, cl := startServer(t, p, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path == "/js/private/tiny.js" {
							w.Header().Set("Cache-Control", "private, max-age=60")
						}
						handler(w, r)
					})), false)
					fetch(t, cl, srv.URL+"/js/dict.js", chromeAE)
					fetch(t, cl, srv.URL+"/js/app.v1.js", chromeAE)
					next(t, events)
					next(t, events)
					var first []byte
					for i, s := range tc.steps {
						before := c.Stats()
						res, raw := fetch(t, cl, srv.URL+tc.path, s.ae, s.hdr...)
						e := next(t, events)
						after := c.Stats()
						ce := res.Header.Get("Content-Encoding")
						t.Logf("step %d (%s): %d bytes as %s, cached %v, %+v", i, s.ae, len(raw), ce, e.Cached, after)
						if ce != s.want {
							t.Fatalf("step %d: Content-Encoding %q, want %q", i, ce, s.want)
						}
						if ce == squeeze.DCZ {
							decodeDelta(t, res.Header, raw, tc.dict, files[tc.path])
						} else {
							checkBody(t, res.Header, raw, files[tc.path])
						}
						wantDictVary(t, res.Header)
						if e.Cached != s.cached {
							t.Errorf("step %d: Event.Cached %v, want %v", i, e.Cached, s.cached)
						}
						// Each response is one hit (served from the Cache) or
						// one miss (encoded), or neither when never looked up.
						hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
						if want := fmt.Sprint(s.cached); s.cached && (hits != 1 || misses != 0) {
							t.Errorf("step %d: %d hits and %d misses, want a hit (cached %s)", i, hits, misses, want)
						} else if !s.cached && hits != 0 {
							t.Errorf("step %d: %d hits for a response encoded afresh", i, hits)
						}
						if s.want == squeeze.Zstd && s.hdr != nil {
							if first == nil {
								first = bytes.Clone(raw)
							} else if !bytes.Equal(raw, first) {
								t.Errorf("step %d: %d bytes, not the %d of the first zstd response", i, len(raw), len(first))
							}
						}
					}
				})
			}
		})
	}
}

// beatenDelta returns a dictionary and a tiny, repetitive body whose delta
// against it (64 bytes as dcz) loses to zstd without it (30 bytes).
func beatenDelta() (dict, tiny []byte) {
	return textBody(5, 4<<10), bytes.Repeat([]byte("squeeze "), 300)
}

// next returns the observer's next event, waiting for it: it comes after
// the handler returns, which may be after the client read the body.
func next(t *testing.T, events <-chan squeeze.ResponseInfo) squeeze.ResponseInfo {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the observer")
		return squeeze.ResponseInfo{}
	}
}

// TestCacheEncodesABeatenDeltaOnceForConcurrentRequests: identical
// concurrent requests whose delta loses to the coding without the
// dictionary wait for the first, which stores that coding and the verdict,
// and are served from the Cache: one encoding in all.
func TestCacheEncodesABeatenDeltaOnceForConcurrentRequests(t *testing.T) {
	dict, tiny := beatenDelta()
	c := newCache(t, 16<<20)
	var encoded atomic.Int64
	h := newMiddleware(t, squeeze.WithCache(c), squeeze.WithDictionaryMatch("/js/*"),
		squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) {
			if e.Coding != "" && !e.Cached {
				encoded.Add(1)
			}
		}}),
	).Handler(scripts(map[string][]byte{"/js/dict.js": dict, "/js/tiny.js": tiny}))
	serveAt(h, "/js/dict.js", chromeAE)
	encoded.Store(0)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			rec := serveAt(h, "/js/tiny.js", chromeAE, "Available-Dictionary", availableFor(dict))
			if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.Zstd {
				t.Errorf("Content-Encoding %q, want zstd", ce)
				return
			}
			got, err := testtool.TryDecode(squeeze.Zstd, rec.Body.Bytes())
			if err != nil || !bytes.Equal(got, tiny) {
				t.Errorf("zstd body decodes to %d bytes (%v), want the %d written", len(got), err, len(tiny))
			}
		})
	}
	wg.Wait()
	if n := encoded.Load(); n != 1 {
		t.Errorf("%d of 16 identical requests encoded, want 1 (%+v)", n, c.Stats())
	}
}

// BenchmarkCacheBeatenDelta repeats, with a Cache, a request whose whole
// delta loses to the coding without the dictionary (the tiny body of
// TestCacheServesTheCodingThatBeatADelta).
func BenchmarkCacheBeatenDelta(b *testing.B) {
	dict, tiny := beatenDelta()
	h := newMiddleware(b, squeeze.WithCache(newCache(b, 16<<20)), squeeze.WithDictionaryMatch("/js/*")).
		Handler(scripts(map[string][]byte{"/js/dict.js": dict, "/js/tiny.js": tiny}))
	serveAt(h, "/js/dict.js", chromeAE)
	benchDelta(b, h, "/js/tiny.js", dict, tiny, squeeze.Zstd)
}
