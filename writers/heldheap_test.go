package writers_test

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// heldHeapPerEncoder returns the heap that each of n encoders holds while
// a response is in flight: after Reset, Write of body and Flush, before
// Close. It is what a server pays per concurrent compressed response.
func heldHeapPerEncoder(tb testing.TB, coding string, level int, body []byte, n int) float64 {
	tb.Helper()
	encs := make([]writers.Encoder, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range encs {
		e := newEncoder(tb, coding, level)
		e.Reset(io.Discard)
		if _, err := e.Write(body); err != nil {
			tb.Fatal(err)
		}
		if err := e.Flush(); err != nil {
			tb.Fatal(err)
		}
		encs[i] = e
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(encs)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// The heap held per in-flight response bounds how many a server can have
// open. The budgets are the measured values at the default levels (see
// docs/perf-history.md) plus about 25%: a codec upgrade or option change that holds
// much more, such as a zstd window back at its 8 MB default or lowmem off,
// fails here.
func TestHeapHeldPerInFlightEncoder(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	html := corpus.HTML(t)
	const MiB = 1 << 20
	tests := []struct {
		coding string
		body   []byte
		budget float64
	}{
		{writers.Gzip, html[:16<<10], 1.4 * MiB},
		{writers.Deflate, html[:16<<10], 1.4 * MiB},
		{writers.Zstd, html[:16<<10], 2.3 * MiB},
		{writers.Brotli, html[:16<<10], 1.6 * MiB},
		// Past the windows (128 KiB zstd, 256 KiB br) the ring buffers
		// are full size.
		{writers.Gzip, html, 1.4 * MiB},
		{writers.Zstd, html, 2.7 * MiB},
		{writers.Brotli, html, 4.0 * MiB},
	}
	for _, tt := range tests {
		level := defaultLevel(t, tt.coding)
		t.Run(fmt.Sprintf("%s/%d/%dKiB", tt.coding, level, len(tt.body)>>10), func(t *testing.T) {
			held := heldHeapPerEncoder(t, tt.coding, level, tt.body, 20)
			t.Logf("%.0f bytes (%.2f MiB) per in-flight encoder", held, held/MiB)
			if held > tt.budget {
				t.Errorf("%.2f MiB held per in-flight encoder; budget %.2f MiB", held/MiB, tt.budget/MiB)
			}
		})
	}
}
