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

// AllocatedBy returns the bytes allocated while f runs, as
// [runtime.MemStats] counts them: by every goroutine, f's among them.
func AllocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// LeastWithin returns what measure reports, measuring again, up to three
// times in all, while it is over bound: the least of the runs.
// [runtime.MemStats] counts every goroutine's allocations and heap, and
// other tests' leftovers may add to one measurement and not the next;
// measure builds what it measures anew each time, so that it costs the
// same, and the least is the code's own.
func LeastWithin[T int64 | uint64](bound T, measure func() T) T {
	least := measure()
	for range 2 {
		if least <= bound {
			break
		}
		least = min(least, measure())
	}
	return least
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
