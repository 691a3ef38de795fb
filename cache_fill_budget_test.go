package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// discardResponse is an http.ResponseWriter that keeps nothing of the body,
// so that the heap a test measures is what the middleware holds.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) WriteHeader(int)             {}
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }

// heapAfterGC is the heap in use after four collections: the second frees
// what sync.Pools kept through the first, and go-brrr's best-level
// encoders go back to its pools in stages, which take two more.
func heapAfterGC() int64 {
	var m runtime.MemStats
	for range 4 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// streamsInFlight starts n streams of body, each leading its own miss (a
// query string makes each one new), through a Middleware with c (none if
// nil), and calls during once every handler has written its body and waits
// for its slow client. It returns the heap growth at that point, and ends
// the streams. opts are the Cache's options.
func streamsInFlight(t *testing.T, c *squeeze.Cache, n int, body []byte, during func(), opts ...squeeze.CacheOption) int64 {
	t.Helper()
	mopts := []squeeze.Option{
		squeeze.WithEncodings("gzip"),
		squeeze.WithLevel("gzip", -3), // stateless: no encoder memory to speak of
	}
	if c != nil {
		mopts = append(mopts, squeeze.WithCache(c, opts...))
	}
	var wrote, done sync.WaitGroup
	release := make(chan struct{})
	h := newMiddleware(t, mopts...).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write(body)
		wrote.Done()
		<-release // the client reads slowly: the stream stays in flight
	}))
	before := heapAfterGC()
	wrote.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			r := httptest.NewRequest("GET", "/app.js?v="+strconv.Itoa(i), nil)
			r.Header.Set("Accept-Encoding", "gzip")
			h.ServeHTTP(&discardResponse{h: http.Header{}}, r)
		}()
	}
	wrote.Wait()
	held := heapAfterGC() - before
	during()
	close(release)
	done.Wait()
	return held
}

// Streams leading distinct misses keep their copies within the cache's
// budget, however many are in flight: the heap they hold with a cache
// exceeds what they hold without one by the cache's size at most (twice
// that, as a margin for the collector and the other tests' leftovers), and
// Stats().Bytes never exceeds MaxBytes; whether they are kept by trusted
// ETag or by content, with their plain bytes.
func TestCacheFillsInFlightStayWithinTheBudget(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	const (
		maxBytes = 4 << 20
		streams  = 48
	)
	// Just under the entry limit (an eighth of the cache) once encoded:
	// without a budget, each stream would keep its whole copy.
	body := randomBody(23, 7*(maxBytes/8)/8) // does not compress
	without := streamsInFlight(t, nil, streams, body, func() {})
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			fillsWithinTheBudget(t, mode.opts, maxBytes, streams, body, without)
		})
	}
}

func fillsWithinTheBudget(t *testing.T, opts []squeeze.CacheOption, maxBytes int64, streams int, body []byte, without int64) {
	c := newCache(t, maxBytes)
	with := streamsInFlight(t, c, streams, body, func() {
		if s := c.Stats(); s.Bytes > s.MaxBytes {
			t.Errorf("%d streams in flight: Bytes %d over MaxBytes %d", streams, s.Bytes, s.MaxBytes)
		}
	}, opts...)
	const MiB = 1 << 20
	t.Logf("%d streams of %d KiB in flight: heap +%.1f MiB without a cache, +%.1f MiB with a %d MiB cache",
		streams, len(body)>>10, float64(without)/MiB, float64(with)/MiB, maxBytes/MiB)
	if with-without > 2*maxBytes {
		t.Errorf("fills in flight held %.1f MiB more than the streams without a cache; the budget is %d MiB",
			float64(with-without)/MiB, maxBytes/MiB)
	}
	s := c.Stats()
	if s.Bytes > s.MaxBytes || s.Bytes < 0 {
		t.Errorf("after the streams: %+v", s)
	}
	if s.StoresSkipped == 0 {
		t.Errorf("stats %+v: no fill found the budget full; the test does not test it", s)
	}
}

// failAfter is a client that goes away after n bytes: its writes fail.
type failAfter struct {
	discardResponse
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, http.ErrHandlerTimeout
	}
	f.n -= len(p)
	return len(p), nil
}

// What fills claim of the budget goes back when they end, whether they are
// stored, dropped for want of room, or cut short (a panic, a length that
// does not match, a flush, a client gone): once no stream is in flight and
// no upgrade under way, Stats().Bytes is the weight of the entries stored,
// and it never exceeds MaxBytes on the way.
func TestCacheBytesComeBackToTheEntriesAfterFills(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of fills and upgrades: it runs without -short (.ci/run runs it without -race)")
	}
	// In 1 MiB, fills find the budget full and no upgrade has room; in
	// 16 MiB, upgrades claim and give back their encoders.
	for _, maxBytes := range []int64{1 << 20, 16 << 20} {
		t.Run(strconv.FormatInt(maxBytes>>20, 10)+"MiB", func(t *testing.T) {
			for _, mode := range cacheModes {
				t.Run(mode.name, func(t *testing.T) {
					bytesComeBackToTheEntries(t, newCache(t, maxBytes), mode.opts)
				})
			}
		})
	}
}

func bytesComeBackToTheEntries(t *testing.T, c *squeeze.Cache, opts []squeeze.CacheOption) {
	modes := []string{"whole", "panic", "short", "flush", "gone", "whole", "whole"}
	h := newMiddleware(t, squeeze.WithCache(c, opts...), squeeze.WithEncodings(allCodings...)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, _ := strconv.Atoi(r.URL.Query().Get("i"))
			body := textBody(i, 40<<10+i*997%(100<<10))
			if i%3 == 0 {
				body = randomBody(i, 40<<10+i*997%(100<<10))
			}
			w.Header().Set("Content-Type", "application/javascript")
			w.Header().Set("ETag", `"`+strconv.Itoa(i%20)+`"`) // some repeat: hits and upgrades
			mode := modes[i%len(modes)]
			if mode == "short" {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
			}
			for p := body; len(p) > 0; p = p[min(len(p), 8<<10):] {
				if _, err := w.Write(p[:min(len(p), 8<<10)]); err != nil {
					return
				}
			}
			switch mode {
			case "panic":
				panic(http.ErrAbortHandler)
			case "flush":
				w.(http.Flusher).Flush()
			}
		}))
	var over atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := c.Stats(); s.Bytes > s.MaxBytes || s.Bytes < 0 {
				over.Add(1)
			}
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 30 {
				i := (g*31 + j*7) % 60
				r := httptest.NewRequest("GET", "/app.js?i="+strconv.Itoa(i), nil)
				r.Header.Set("Accept-Encoding", allCodings[(g+j)%len(allCodings)])
				var w http.ResponseWriter = &discardResponse{h: http.Header{}}
				if modes[i%len(modes)] == "gone" {
					w = &failAfter{discardResponse{h: http.Header{}}, 20 << 10}
				}
				func() {
					defer func() { _ = recover() }()
					h.ServeHTTP(flushable{w}, r)
				}()
			}
		}()
	}
	wg.Wait()
	squeeze.WaitUpgrades(c)
	close(stop)
	<-sampled
	s := c.Stats()
	if n := over.Load(); n > 0 {
		t.Errorf("Bytes out of [0, MaxBytes] %d times", n)
	}
	if w := squeeze.CacheEntriesWeight(c); s.Bytes != w {
		t.Errorf("with nothing in flight Bytes is %d, the entries weigh %d: %+v", s.Bytes, w, s)
	}
	if s.Stores == 0 || s.Hits == 0 || s.Upgrades+s.UpgradesDropped == 0 {
		t.Errorf("stats %+v: the workload must store, hit and try upgrades", s)
	}
	t.Logf("%+v", s)
}

// flushable gives a ResponseWriter a Flush that does nothing.
type flushable struct{ http.ResponseWriter }

func (flushable) Flush() {}
