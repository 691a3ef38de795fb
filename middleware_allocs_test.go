package squeeze_test

import (
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// allocWriter is the smallest reusable http.ResponseWriter: the test clears
// its header map between runs, so only the middleware's allocations count.
type allocWriter struct {
	h http.Header
	n int
}

func (w *allocWriter) Header() http.Header         { return w.h }
func (w *allocWriter) WriteHeader(int)             {}
func (w *allocWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// WriteString is there because net/http's writers have it: a plain body
// written with io.WriteString reaches it without a copy.
func (w *allocWriter) WriteString(s string) (int, error) { w.n += len(s); return len(s), nil }

// reusedWriter returns an allocWriter and a func that serves req through
// h into it, cleared first, so that repeated responses count only the
// middleware's allocations.
func reusedWriter(h http.Handler, req *http.Request) (*allocWriter, func()) {
	w := &allocWriter{h: make(http.Header, 8)}
	return w, func() {
		clear(w.h)
		w.n = 0
		h.ServeHTTP(w, req)
	}
}

// skipUnlessAllocsCount skips a test of allocation counts where they cannot
// be counted: under -race, where sync.Pool drops Puts at random, and in
// -short runs, since counts need warm pools.
func skipUnlessAllocsCount(t *testing.T) {
	t.Helper()
	if squeeze.RaceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts need warm pools")
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	skipUnlessAllocsCount(t)
	// A compressed 16 KiB response that ends inside the buffer gets three
	// header values from the middleware: Content-Encoding, Vary and
	// Content-Length. Their []string backing arrays are the response's
	// own, in the 56-byte handlerWriter the handler is given, which is
	// never reused (so a goroutine the handler leaves behind can never
	// reach a later response, nor an in-place write into one response's
	// header value another's), carved from blocks of 36: one allocation
	// per 36 responses. The strings are shared. The rest of the
	// per-response state is pooled, as are buffers and encoders (the
	// slot keeps one). Anything above that is a per-response cost that
	// pooling should remove.
	const (
		maxAllocs = 2.0 / 36 // one block per 36 responses, with room for a pool refill
		// 57: a 2,048-byte block per 36 responses (that the block
		// fits its size class is TestHandlerWriterBlockFitsTheSizeClass's).
		maxBytes = 80
	)
	page := textBody(21, 16<<10)
	ct := []string{"text/html; charset=utf-8"}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct // a shared slice: the handler itself allocates nothing
		_, _ = w.Write(page)
	})
	for _, coding := range allCodings {
		// With an observer the response costs no more: the ResponseInfo goes by
		// value, the wire bytes are counted in the per-response writer and
		// the Counters' hooks add atomics.
		var counters squeeze.Counters
		for _, obs := range []struct {
			name string
			opts []squeeze.Option
		}{
			{"no observer", nil},
			{"Counters", []squeeze.Option{squeeze.WithObserver(counters.Observer())}},
		} {
			t.Run(coding+"/"+obs.name, func(t *testing.T) {
				h := newMiddleware(t, append(obs.opts, squeeze.WithEncodings(coding))...).Handler(next)
				w, serve := reusedWriter(h, request("GET", coding))
				serve()
				if ce := w.h.Get("Content-Encoding"); ce != coding || w.n == 0 || w.n >= len(page) {
					t.Fatalf("warm-up response: Content-Encoding %q, %d bytes; want %s and fewer than %d", ce, w.n, coding, len(page))
				}
				allocs, bytes := allocsPerResponse(3200, serve)
				t.Logf("%s, %s: %.3f allocations, %.0f bytes per response", coding, obs.name, allocs, bytes)
				if allocs > maxAllocs || bytes > maxBytes {
					t.Errorf("%s, %s: %.3f allocations and %.0f bytes per response, want at most %.3f and %d", coding, obs.name, allocs, bytes, maxAllocs, maxBytes)
				}
			})
		}
		if want := `"compressed":9601`; !strings.Contains(counters.String(), want) {
			t.Errorf("the observer did not see every response: %s lacks %s", counters.String(), want)
		}
	}
}

// An API's responses differ in length from one to the next, and a slot
// serves browsers and Go clients in turn: a new length costs its digits
// from a 512-byte block, and nothing else changes.
func TestSteadyStateAllocationsVaryingResponses(t *testing.T) {
	skipUnlessAllocsCount(t)
	const (
		maxAllocs = 3.0 / 32 // as TestSteadyStateAllocations, and a block of digits per 100 or so lengths
		maxBytes  = 96       // as TestSteadyStateAllocations, and room for digits
	)
	var pages [][]byte
	for i := range 7 {
		pages = append(pages, textBody(30+i, 4000+97*i))
	}
	ct := []string{"application/json"}
	var next atomic.Int64
	h := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct
		_, _ = w.Write(pages[next.Add(1)%int64(len(pages))])
	}))
	wz, serveZstd := reusedWriter(h, request("GET", squeeze.Zstd))
	wg, serveGzip := reusedWriter(h, request("GET", squeeze.Gzip))
	serve := func() {
		serveZstd()
		serveGzip()
	}
	serve()
	if wz.h.Get("Content-Encoding") != squeeze.Zstd || wg.h.Get("Content-Encoding") != squeeze.Gzip || wz.h.Get("Content-Length") == wg.h.Get("Content-Length") {
		t.Fatalf("warm-up responses: %v and %v; want zstd and gzip, of different lengths", wz.h, wg.h)
	}
	allocs, bytes := allocsPerResponse(1600, serve)
	allocs, bytes = allocs/2, bytes/2
	t.Logf("%.3f allocations, %.0f bytes per response", allocs, bytes)
	if allocs > maxAllocs || bytes > maxBytes {
		t.Errorf("%.3f allocations and %.0f bytes per response, want at most %.3f and %d", allocs, bytes, maxAllocs, maxBytes)
	}
}

// allocsPerResponse runs serve n times, three times over, and returns the
// fewest allocations and bytes allocated per run of the three. Unlike
// [testing.AllocsPerRun], it does not round down, so an allocation made
// once per 32 runs shows. It runs on one P: sync.Pool keeps objects per P,
// so a goroutine that moves to another P finds a pool without the slot and
// encoders it used, and on a loaded machine (CI running other test
// binaries) it moved often enough to build a zstd encoder in every round,
// 402 bytes a response. Changing GOMAXPROCS drops the pools' contents, so
// the first round builds them again; taking the best round leaves it out.
func allocsPerResponse(n int, serve func()) (allocs, bytes float64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no GC may empty the pools half way
	allocs, bytes = math.Inf(1), math.Inf(1)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			serve()
		}
		runtime.ReadMemStats(&after)
		allocs = min(allocs, float64(after.Mallocs-before.Mallocs)/float64(n))
		bytes = min(bytes, float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
	}
	return allocs, bytes
}

// io.WriteString on the middleware's writer costs no more than Write: the
// writer has WriteString, which passes the string on without copying it,
// whether the body is held back and encoded or goes out plain.
func TestWriteStringAllocatesNoMoreThanWrite(t *testing.T) {
	skipUnlessAllocsCount(t)
	chunk := string(textBody(11, 200))
	chunkBytes := []byte(chunk)
	ct := []string{"text/plain; charset=utf-8"}
	handlers := map[string]http.HandlerFunc{
		"Write": func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = ct
			for range 10 {
				_, _ = w.Write(chunkBytes)
			}
		},
		"WriteString": func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = ct
			for range 10 {
				_, _ = io.WriteString(w, chunk)
			}
		},
	}
	for _, ae := range []string{squeeze.Gzip, ""} {
		name := ae
		if name == "" {
			name = "plain"
		}
		t.Run(name, func(t *testing.T) {
			var allocs, bytes [2]float64
			for i, method := range []string{"Write", "WriteString"} {
				h := newMiddleware(t).Handler(handlers[method])
				w, serve := reusedWriter(h, request("GET", ae))
				serve()
				if ce := w.h.Get("Content-Encoding"); ce != ae || w.n == 0 {
					t.Fatalf("%s warm-up: Content-Encoding %q, %d bytes; want %q", method, ce, w.n, ae)
				}
				allocs[i], bytes[i] = allocsPerResponse(3200, serve)
				t.Logf("%s, %s: %.3f allocations, %.0f bytes per response", name, method, allocs[i], bytes[i])
			}
			if allocs[1] > allocs[0]+0.05 || bytes[1] > bytes[0]+16 {
				t.Errorf("%s: io.WriteString costs %.3f allocations and %.0f bytes per response, Write %.3f and %.0f", name, allocs[1], bytes[1], allocs[0], bytes[0])
			}
		})
	}
}

// A response its handler returns from without writing is handed back
// (slot.go, handBack): the writer the handler was given then reaches the
// response's own underlying writer through a slot of its own, never
// pooled. That slot is the one allocation such a response adds.
func TestUntouchedResponseAllocations(t *testing.T) {
	skipUnlessAllocsCount(t)
	const (
		maxAllocs = 1 + 2.0/36 // the handed-back slot, and TestSteadyStateAllocations's share of a block
		maxBytes  = 416 + 80   // the slot's size class, and TestSteadyStateAllocations's bound
	)
	ct := []string{"application/json"}
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
	}))
	w, serve := reusedWriter(h, request("GET", squeeze.Gzip))
	serve()
	if w.n != 0 || w.h.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("warm-up response: %d bytes, Vary %q; want none and Accept-Encoding", w.n, w.h.Get("Vary"))
	}
	allocs, bytes := allocsPerResponse(3200, serve)
	t.Logf("%.3f allocations, %.0f bytes per response", allocs, bytes)
	if allocs > maxAllocs || bytes > maxBytes {
		t.Errorf("%.3f allocations and %.0f bytes per response, want at most %.3f and %d", allocs, bytes, maxAllocs, maxBytes)
	}
}
