package squeeze_test

import (
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Bodies collected to be remembered as dictionaries are counted against the
// dictionary store's budget while they are collected: stalled responses on
// a WithDictionaryMatch path, each just under the largest body remembered
// (a quarter of the budget), grow the heap by at most the budget beyond
// what the same responses on a path outside the pattern cost.
func TestDictionaryCaptureInFlightStaysWithinStoreBudget(t *testing.T) {
	const (
		store = 16 << 20
		n     = 16
	)
	chunk := textBody(3, 64<<10)
	growth := func(path string) int64 {
		release := make(chan struct{})
		var started, done sync.WaitGroup
		m := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*"), squeeze.WithDictionaryStoreSize(store),
			squeeze.WithEncodings(squeeze.Zstd))
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/javascript")
			for written := 0; written+2*len(chunk) < store/4; written += len(chunk) {
				_, _ = w.Write(chunk)
			}
			started.Done()
			<-release // a client that stopped reading
		}))
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := int64(ms.HeapInuse)
		started.Add(n)
		for range n {
			done.Add(1)
			go func() {
				defer done.Done()
				r := request("GET", "zstd")
				r.URL.Path = path
				h.ServeHTTP(&discardWriter{h: http.Header{}}, r)
			}()
		}
		started.Wait()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		close(release)
		done.Wait()
		return int64(ms.HeapInuse) - before
	}
	margin := int64(8 << 20)
	if squeeze.RaceEnabled {
		// sync.Pool drops a quarter of what is put back: encoders the
		// baseline took from the pool are allocated afresh.
		margin = 24 << 20
	}
	growth("/other/app.js") // warms up what the process keeps between middlewares
	base := growth("/other/app.js")
	got := growth("/js/app.js")
	limit := 2*max(base, 0) + store + margin
	t.Logf("%d stalled responses: heap grew by %d MiB outside the pattern, %d MiB on it (limit %d MiB, store budget %d MiB)",
		n, base>>20, got>>20, limit>>20, store>>20)
	if got > limit {
		t.Errorf("stalled responses on the pattern's path grew the heap by %d MiB, want at most %d MiB (twice the %d MiB outside it plus the %d MiB budget and %d MiB)",
			got>>20, limit>>20, base>>20, store>>20, margin>>20)
	}
}
