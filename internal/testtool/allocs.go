package testtool

import (
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"testing"
)

// AllocsPerRequest runs serve n times, three times over, and returns the
// fewest allocations per run of the three. Unlike [testing.AllocsPerRun],
// it does not round down, so an allocation made once in 32 runs shows. It
// runs on one P with the garbage collector off: sync.Pool keeps objects per
// P, and a collection or a move to another P would empty the pools the
// runs reuse; the best round leaves out the one that fills them again.
func AllocsPerRequest(n int, serve func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	allocs := math.Inf(1)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			serve()
		}
		runtime.ReadMemStats(&after)
		allocs = min(allocs, float64(after.Mallocs-before.Mallocs)/float64(n))
	}
	return allocs
}

// SkipUnlessAllocsCount skips a test of allocation counts where they
// cannot be counted: under -race, where sync.Pool drops Puts at random,
// and in -short runs, since counts need warm pools.
func SkipUnlessAllocsCount(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts need warm pools")
	}
}

// AllocWriter is the smallest reusable [http.ResponseWriter], for
// allocation tests: Reset clears its header map between requests, so only
// the handler's allocations count.
type AllocWriter struct {
	H      http.Header
	Status int
	N      int // body bytes written
}

// NewAllocWriter returns an AllocWriter with its header map made.
func NewAllocWriter() *AllocWriter { return &AllocWriter{H: make(http.Header, 8)} }

// Reset clears the writer for the next request.
func (w *AllocWriter) Reset() { clear(w.H); w.Status, w.N = 0, 0 }

// Header returns the header map.
func (w *AllocWriter) Header() http.Header { return w.H }

// WriteHeader records the status.
func (w *AllocWriter) WriteHeader(code int) { w.Status = code }

// Write counts b and drops it.
func (w *AllocWriter) Write(b []byte) (int, error) { w.N += len(b); return len(b), nil }

// WriteString counts s and drops it.
func (w *AllocWriter) WriteString(s string) (int, error) { w.N += len(s); return len(s), nil }
