package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/goleak"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// everyFeature is a Middleware with every feature that works in the
// background on, over a store whose calls hang until their context ends
// once hang is set, and the handler of a site that uses them all: a page
// the cache upgrades, static files remembered as dictionaries and shared,
// a learned route, and a FileServer.
type everyFeature struct {
	m     *squeeze.Middleware
	cache *squeeze.Cache
	store *memStore
	h     http.Handler
	// paths are the requests that make every feature work, each asked
	// often enough to start its background work; bodies what each path
	// serves.
	paths  []string
	bodies map[string][]byte
	seen   atomic.Int64 // observer calls
}

func newEveryFeature(t *testing.T) *everyFeature {
	t.Helper()
	f := &everyFeature{store: newMemStore(), bodies: map[string][]byte{}}
	f.cache = newCache(t, 32<<20)
	count := func() { f.seen.Add(1) }
	f.m = newMiddleware(t,
		squeeze.WithCache(f.cache, squeeze.CacheTrustedETags()),
		// The longest timeout: a call left running by Close would outlive
		// the check by far.
		squeeze.WithSharedStore(f.store, squeeze.SharedTimeout(10*time.Second), squeeze.SharedAdmitAfter(1)),
		squeeze.WithDictionaryMatch("/static/*"),
		squeeze.WithDictionary("/dict/site", "/page/*", textBody(40, 8<<10)),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(time.Hour)),
		squeeze.WithLengthHiding(32),
		squeeze.WithObserver(squeeze.Observer{
			Response:    func(squeeze.ResponseInfo) { count() },
			SharedStore: func(squeeze.SharedStoreInfo) { count() },
			Learned:     func(squeeze.LearnedInfo) { count() },
		}),
	)
	squeeze.SetLearnedPollEvery(f.m, time.Hour) // the request path polls once
	files := fstest.MapFS{"app.js": {Data: textBody(41, 96<<10)}}
	f.bodies["/files/app.js"] = files["app.js"].Data
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files", f.m.FileServer(files)))
	site := http.NewServeMux()
	site.HandleFunc("/page/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, _ = w.Write(f.bodies[r.URL.Path])
	})
	site.HandleFunc("/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(f.bodies[r.URL.Path])
	})
	site.HandleFunc("/search/", searchHandler("leak"))
	mux.Handle("/", f.m.Handler(site))
	f.h = mux
	f.bodies["/page/home"] = textBody(42, 12<<10)
	f.bodies["/static/app.js"] = textBody(43, 24<<10)
	for i := range 10 {
		p := fmt.Sprintf("/search/%d", i)
		f.bodies[p] = searchPage("leak", i)
		f.paths = append(f.paths, p)
	}
	for range 5 {
		f.paths = append(f.paths, "/page/home", "/static/app.js", "/files/app.js")
	}
	return f
}

// check fails t unless res carries the body of path; it may be called
// from any goroutine.
func (f *everyFeature) check(t *testing.T, path string, res *http.Response, raw []byte) {
	t.Helper()
	ce := res.Header.Get("Content-Encoding")
	got, err := testtool.TryDecode(ce, raw)
	switch {
	case res.StatusCode != http.StatusOK:
		t.Errorf("GET %s: %s", path, res.Status)
	case err != nil:
		t.Errorf("GET %s: decoding %d bytes of %q: %v", path, len(raw), ce, err)
	case !bytes.Equal(got, f.bodies[path]):
		t.Errorf("GET %s: %d bytes decoded from %q, want the handler's %d", path, len(got), ce, len(f.bodies[path]))
	}
}

// serve serves path through f's handler in process.
func (f *everyFeature) serve(t *testing.T, path string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Accept-Encoding", "zstd, br, gzip")
	f.h.ServeHTTP(rec, req)
	f.check(t, path, rec.Result(), rec.Body.Bytes())
}

// backgroundFrames are functions on the stacks of the background work
// that everyFeature's traffic starts, each of which must be seen hanging
// in the store before Close for the test to mean anything.
var backgroundFrames = []string{
	"squeeze.(*cacheCore).work(",       // the cache's upgrade, reading the fleet's
	"squeeze.(*fileServer).startBest.", // a file's best-level encoding, likewise
	"squeeze.(*learnedRoute).round(",   // a learned round, polling the fleet
	"storeguard.(*Guard).SetAsync.",    // a dictionary written to the fleet
}

func TestMiddlewareCloseLeavesNoGoroutineWithEveryFeatureOn(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	f := newEveryFeature(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, c := startServer(t, p, f.h, false)
			if p.major == 1 {
				// The route's one poll within a request, answered.
				res, raw := fetch(t, c, srv.URL+"/search/0", "zstd, br, gzip")
				f.check(t, "/search/0", res, raw)
				f.store.hang.Store(true)
			}
			for _, path := range f.paths {
				res, raw := fetch(t, c, srv.URL+path, "zstd, br, gzip")
				f.check(t, path, res, raw)
			}
			c.CloseIdleConnections()
			srv.Close()
		})
	}
	// Every kind of background work hangs in the store now.
	deadline := time.Now().Add(20 * time.Second)
	for _, frame := range backgroundFrames {
		for squeeze.GoroutinesIn(frame) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if squeeze.GoroutinesIn(frame) == 0 {
			t.Errorf("no goroutine in %s before Close: the traffic did not start it", frame)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	closed := make(chan error, 2)
	for range 2 { // Close twice at once: both return once all has ended
		go func() { closed <- f.m.Close() }()
	}
	for range 2 {
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	// A closed Middleware serves what it served, and starts nothing.
	seen := f.seen.Load()
	for _, path := range f.paths {
		f.serve(t, path)
	}
	if f.seen.Load() == seen {
		t.Error("the observer saw nothing of the responses served after Close")
	}
	goleak.VerifyNone(t, ignore)
}

func TestMiddlewareCloseIsSafeDuringRequests(t *testing.T) {
	f := newEveryFeature(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for k := range 3 * len(f.paths) {
				f.serve(t, f.paths[(i+k)%len(f.paths)])
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			if err := f.m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := f.m.Close(); err != nil {
		t.Errorf("Close after Close: %v", err)
	}
}

func TestCacheSharedByMiddlewaresUpgradesForTheOneNotClosed(t *testing.T) {
	c := newCache(t, 16<<20)
	body := textBody(44, 20<<10)
	a := newMiddleware(t, squeeze.WithCache(c), squeeze.WithEncodings("br"))
	b := newMiddleware(t, squeeze.WithCache(c), squeeze.WithEncodings("br"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ha := a.Handler(writeText("text/plain", body, 0))
	for range 4 { // the third hit queues the upgrade
		res, raw := record(ha, request("GET", "br"))
		checkBody(t, res.Header, raw, body)
	}
	squeeze.WaitUpgrades(c)
	if s := c.Stats(); s.Upgrades != 0 || s.UpgradesDropped != 1 {
		t.Fatalf("through the closed Middleware: %d upgrades and %d dropped, want 0 and 1", s.Upgrades, s.UpgradesDropped)
	}
	other := textBody(45, 20<<10)
	hb := b.Handler(writeText("text/plain", other, 0))
	for range 4 {
		res, raw := record(hb, request("GET", "br"))
		checkBody(t, res.Header, raw, other)
	}
	squeeze.WaitUpgrades(c)
	if s := c.Stats(); s.Upgrades != 1 {
		t.Errorf("through the open Middleware: %d upgrades, want 1", s.Upgrades)
	}
}
