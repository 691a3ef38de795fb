package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Responses served from the cache as streams (by a trusted ETag) against what
// the miss sent: events, dictionaries remembered from them, and a mixed
// workload sharing one Cache.

// etagChunks serves body as application/javascript with a strong ETag and
// an hour's freshness,
// written in chunks of 4 KiB (so that the first 32 KiB are held in the
// buffer before the response commits to a stream).
func etagChunks(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(body)))
		w.Header().Set("Cache-Control", "max-age=3600") // fresh, to be kept as a dictionary
		writeChunks(w, body, 4096)
	}
}

// A stream served from the cache by its ETag (the handler's body read and
// discarded) reports Event.In as the plain bytes the handler wrote and
// Event.Out as the bytes sent, as the miss did, so that Counters never show
// an In of 0 with an Out above it.
func TestCacheStreamHitEventCountsHandlerBytes(t *testing.T) {
	body := textBody(11, 100<<10)
	c := newCache(t, 64<<20)
	var mu sync.Mutex
	var evs []squeeze.ResponseInfo
	h := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	}})).Handler(etagChunks(body))
	for range 2 {
		rec := serveAt(h, "/app.js", "gzip")
		checkBody(t, rec.Header(), rec.Body.Bytes(), body)
	}
	if st := c.Stats(); st.Hits != 1 {
		t.Fatalf("Stats %+v: want the second response to be a hit", st)
	}
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	miss, hit := evs[0], evs[1]
	if !hit.Cached || hit.Coding != "gzip" {
		t.Fatalf("hit event %+v: want Cached gzip", hit)
	}
	if hit.In != int64(len(body)) || hit.In != miss.In {
		t.Errorf("stream hit Event.In = %d (miss had %d), want %d: the handler wrote the whole body", hit.In, miss.In, len(body))
	}
	if hit.Out != miss.Out {
		t.Errorf("stream hit Event.Out = %d, miss %d: the same bytes went out", hit.Out, miss.Out)
	}
}

// A dictionary remembered from a response served from the cache as a stream
// hit is the whole body, the bytes held in the buffer before the response
// committed included, stored under the hash of the whole body: the client,
// which hashes the whole body it received, then gets deltas against it. Two
// Middlewares share one Cache, as documented, so that the dictionary
// Middleware's first response is a hit.
func TestDictionaryRememberedFromCacheStreamHitIsWholeBody(t *testing.T) {
	v1, v2 := versions(100 << 10)
	c := newCache(t, 64<<20)
	files := map[string][]byte{"/js/v1.js": v1, "/js/v2.js": v2}
	handler := func(w http.ResponseWriter, r *http.Request) {
		etagChunks(files[r.URL.Path])(w, r)
	}
	plain := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags())).Handler(http.HandlerFunc(handler))
	dict := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(handler))

	rec := serveAt(plain, "/js/v1.js", "gzip")
	checkBody(t, rec.Header(), rec.Body.Bytes(), v1)
	rec = serveAt(dict, "/js/v1.js", "gzip")
	checkBody(t, rec.Header(), rec.Body.Bytes(), v1)
	if rec.Header().Get("Use-As-Dictionary") == "" {
		t.Fatal("no Use-As-Dictionary on /js/v1.js")
	}
	if st := c.Stats(); st.Hits != 1 {
		t.Fatalf("Stats %+v: want the dictionary Middleware's response to be a stream hit", st)
	}
	// The client now holds v1 (it received all of it) and asks for v2.
	rec = serveAt(dict, "/js/v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
	if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ && ce != squeeze.DCB {
		t.Fatalf("Content-Encoding %q, want a delta against v1: the body remembered from the stream hit was not v1", ce)
	}
	decodeDelta(t, rec.Header(), rec.Body.Bytes(), v1, v2)
}

// A mixed workload under -race: whole bodies by content, streams by ETag,
// dictionary deltas, HEAD, Range, and a FileServer, all sharing one Cache
// and observed; every body must decode to what the handler wrote, and
// there must be exactly one event per response.
func TestSharedCacheMixedWorkload(t *testing.T) {
	v1, v2 := versions(60 << 10)
	small := textBody(21, 8<<10)
	js := textBody(22, 20000)
	c := newCache(t, 8<<20)
	var events atomic.Int64
	m := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithDictionaryMatch("/js/*"),
		squeeze.WithObserver(squeeze.Observer{Response: func(squeeze.ResponseInfo) { events.Add(1) }}))
	files := map[string][]byte{"/js/v1.js": v1, "/js/v2.js": v2, "/small": small}
	app := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := files[r.URL.Path]
		w.Header().Set("Content-Type", "application/javascript")
		if r.URL.Path != "/small" {
			w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(b)))
		}
		writeChunks(w, b, 4096)
	}))
	fsrv, _ := fileServer(t, m, fstest.MapFS{"app.js": {Data: js}, "js/v1.js": {Data: v1}, "js/v2.js": {Data: v2}})
	// Prime v1 as a dictionary.
	serveAt(app, "/js/v1.js", "gzip")
	events.Store(0)

	type job struct {
		h      http.Handler
		method string
		path   string
		ae     string
		hdr    []string
		want   []byte
	}
	jobs := []job{
		{app, "GET", "/small", "br", nil, small},
		{app, "GET", "/small", "zstd", nil, small},
		{app, "GET", "/js/v2.js", "gzip", nil, v2},
		{app, "GET", "/js/v2.js", chromeAE, []string{"Available-Dictionary", availableFor(v1)}, v2},
		{app, "GET", "/js/v1.js", "br", nil, v1},
		{app, "HEAD", "/js/v1.js", "br", nil, nil},
		{app, "GET", "/js/v1.js", "br", []string{"Range", "bytes=0-99"}, nil},
		{fsrv, "GET", "/app.js", "br", nil, js},
		{fsrv, "GET", "/app.js", "zstd", nil, js},
		{fsrv, "GET", "/js/v2.js", chromeAE, []string{"Available-Dictionary", availableFor(v1)}, v2},
		{fsrv, "HEAD", "/app.js", "gzip", nil, nil},
	}
	const total = 330
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan string, total)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				j := jobs[i%len(jobs)]
				rec := serveMethod(j.h, j.method, j.path, j.ae, j.hdr...)
				if j.want == nil {
					continue
				}
				ce := rec.Header().Get("Content-Encoding")
				if ce == squeeze.DCZ || ce == squeeze.DCB {
					got, err := testtool.DecodeDictionary(ce, rec.Body.Bytes(), v1)
					if err != nil || !bytes.Equal(got, j.want) {
						errs <- fmt.Sprintf("%s %s %s: delta wrong (%v)", j.method, j.path, ce, err)
					}
					continue
				}
				got, err := testtool.TryDecode(ce, rec.Body.Bytes())
				if err != nil || !bytes.Equal(got, j.want) {
					errs <- fmt.Sprintf("%s %s %q: body wrong (%v)", j.method, j.path, ce, err)
				}
			}
		})
	}
	for i := range total {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := c.Stats(); st.Bytes > st.MaxBytes || st.Bytes < 0 {
		t.Errorf("Stats %+v: Bytes out of bounds", st)
	}
	if got := events.Load(); got != total {
		t.Errorf("%d events for %d responses", got, total)
	}
}
