package decode

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/corpus"
)

// heapUse is what a burst of stalled request bodies did to the heap.
type heapUse struct {
	peak  int64 // most HeapInuse above the base while the bodies were stalled
	gc1   int64 // HeapInuse above the base once they were gone, after one GC
	after int64 // the same after two GCs
	busy  int   // bodies refused with ErrBusy
}

// stalledBurst sends n request bodies at once, each head and then nothing,
// as from clients that stop sending, to h; samples the heap while they are
// stalled; then lets the clients go.
func stalledBurst(t *testing.T, h http.Handler, lines string, head []byte, n int) heapUse {
	t.Helper()
	var base, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	var (
		mu      sync.Mutex
		busy    int
		handled sync.WaitGroup
		settled sync.WaitGroup // each body read or refused
		writers []*io.PipeWriter
	)
	for range n {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		r := httptest.NewRequest(http.MethodPost, "/", pr)
		r.Header.Set("Content-Encoding", lines)
		done := make(chan struct{})
		handled.Add(1)
		settled.Add(1)
		go func() {
			defer handled.Done()
			defer close(done)
			h.ServeHTTP(httptest.NewRecorder(), r.WithContext(t.Context()))
		}()
		go func() {
			defer settled.Done()
			wrote := make(chan struct{})
			go func() { _, _ = pw.Write(head); close(wrote) }()
			select {
			case <-wrote:
			case <-done:
				mu.Lock()
				busy++
				mu.Unlock()
			}
		}()
	}
	settled.Wait()
	var use heapUse
	// The decoders allocate just after the head is read: sample a while.
	for range 10 {
		time.Sleep(20 * time.Millisecond)
		runtime.ReadMemStats(&ms)
		use.peak = max(use.peak, int64(ms.HeapInuse)-int64(base.HeapInuse))
	}
	for _, pw := range writers {
		pw.CloseWithError(errors.New("client gone"))
	}
	handled.Wait()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	use.gc1 = int64(ms.HeapInuse) - int64(base.HeapInuse)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	use.after = int64(ms.HeapInuse) - int64(base.HeapInuse)
	use.busy = busy
	return use
}

// readAllHandler reads the body to the end, as an upload handler would.
var readAllHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
})

// zstdBomb is a zstd frame declaring the 8 MiB window RFC 9659 allows, then
// a raw block of 5 bytes that is not the last.
var zstdBomb = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68, 0x28, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'}

// TestDecodeRequestHeapUnderStalledBombs pins the budget's effect: 50
// clients that each send a 9-byte br header declaring a 16 MiB window and
// then stall would hold some 800 MiB without it. With the default budget
// the heap stays within it (plus slack for what the budget does not count:
// requests, goroutines, the decoders' small tables), and once they are gone
// no window stays pooled.
func TestDecodeRequestHeapUnderStalledBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MiB")
	}
	h := decodeOnly(mustNew(t, 0, 0), readAllHandler)
	use := stalledBurst(t, h, Brotli, brBomb, 50)
	t.Logf("50 stalled br bombs: peak HeapInuse %+d MiB, %d refused as busy; after two GCs %+d MiB",
		use.peak>>20, use.busy, use.after>>20)
	if bound := int64(DefaultMemory + 64<<20); use.peak > bound {
		t.Errorf("peak heap growth %d MiB, want at most %d MiB", use.peak>>20, bound>>20)
	}
	if use.busy == 0 {
		t.Error("no body was refused: the budget did nothing")
	}
	if use.after > 16<<20 {
		t.Errorf("%d MiB still in use after the bodies are gone", use.after>>20)
	}
}

// TestDecoderHeapReport prints the table in docs/perf-history.md ("Memory held by
// request decoding"). Run it with SQUEEZE_HEAP_REPORT=1.
func TestDecoderHeapReport(t *testing.T) {
	if os.Getenv("SQUEEZE_HEAP_REPORT") == "" {
		t.Skip("set SQUEEZE_HEAP_REPORT=1 to measure")
	}
	html := corpus.Prefix(t, corpus.HTML(t), 64<<10)
	// A stalled upload of real data: the first half of a stream from
	// squeeze's own encoder.
	half := func(coding string) []byte {
		b := goEncode(t, coding, html)
		return b[:len(b)/2]
	}
	cases := []struct {
		name  string
		lines string
		head  []byte
		n     int
	}{
		{"50 zstd bombs (8 MiB window)", Zstd, zstdBomb, 50},
		{"50 br bombs (lgwin 24)", Brotli, brBomb, 50},
		{"50 br, br bombs", "br, br", brBomb, 50},
		{"200 stalled gzip uploads", Gzip, half(Gzip), 200},
		{"200 stalled deflate uploads", Deflate, half(Deflate), 200},
		{"200 stalled zstd uploads", Zstd, half(Zstd), 200},
		{"200 stalled br uploads", Brotli, half(Brotli), 200},
		{"200 stalled zstd bombs", Zstd, zstdBomb, 200},
		{"200 stalled br bombs", Brotli, brBomb, 200},
	}
	m := mustNew(t, 0, 0)
	for _, tc := range cases {
		use := stalledBurst(t, decodeOnly(m, readAllHandler), tc.lines, tc.head, tc.n)
		fmt.Printf("| %s | %d B | %d MiB | %d | %d MiB | %d MiB |\n", tc.name, len(tc.head), use.peak>>20, use.busy, use.gc1>>20, use.after>>20)
	}
}
