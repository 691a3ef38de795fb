package squeeze_test

import (
	"net/http"
	"strings"
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

func TestSteadyStateAllocations(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts need warm pools")
	}
	// A compressed 16 KiB response that ends inside the buffer gets three
	// header values from the middleware: Content-Encoding, Vary and
	// Content-Length. Their []string backing arrays live in the one
	// per-response writer (1 allocation, kept per response so a goroutine
	// the handler leaves behind can never write into a later response), and
	// the Content-Length digits are a new string (1 allocation). Buffers and
	// encoders come from pools. Anything above two is a per-response cost
	// that pooling or backing arrays should remove.
	const maxAllocs = 2
	page := textBody(21, 16<<10)
	ct := []string{"text/html; charset=utf-8"}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct // a shared slice: the handler itself allocates nothing
		_, _ = w.Write(page)
	})
	for _, coding := range allCodings {
		// With an observer the response costs no more: the Event goes by
		// value, the wire bytes are counted in the per-response writer and
		// Counters.Observe adds atomics.
		var counters squeeze.Counters
		for _, obs := range []struct {
			name string
			opts []squeeze.Option
		}{
			{"no observer", nil},
			{"Counters", []squeeze.Option{squeeze.WithObserver(counters.Observe)}},
		} {
			t.Run(coding+"/"+obs.name, func(t *testing.T) {
				h := newMiddleware(t, append(obs.opts, squeeze.WithEncodings(coding))...).Handler(next)
				req := request("GET", coding)
				w := &allocWriter{h: make(http.Header, 8)}
				serve := func() {
					clear(w.h)
					w.n = 0
					h.ServeHTTP(w, req)
				}
				serve()
				if ce := w.h.Get("Content-Encoding"); ce != coding || w.n == 0 || w.n >= len(page) {
					t.Fatalf("warm-up response: Content-Encoding %q, %d bytes; want %s and fewer than %d", ce, w.n, coding, len(page))
				}
				allocs := testing.AllocsPerRun(200, serve)
				t.Logf("%s, %s: %.1f allocations per response", coding, obs.name, allocs)
				if allocs > maxAllocs {
					t.Errorf("%s, %s: %.1f allocations per response, want at most %d", coding, obs.name, allocs, maxAllocs)
				}
			})
		}
		if want := `"compressed":202`; !strings.Contains(counters.String(), want) {
			t.Errorf("the observer did not see every response: %s lacks %s", counters.String(), want)
		}
	}
}
