package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// None is the implementation without a middleware: the handler's own cost,
// the baseline the in-flight memory of the others is read against.
func None(coding string) *Impl {
	return &Impl{Name: "none", Coding: coding, Settings: "no middleware",
		wrap: func(h http.Handler) http.Handler { return h }}
}

// Heap is the heap one in-flight response holds.
type Heap struct {
	// Live is the growth of runtime.MemStats.HeapAlloc (bytes in live
	// objects after a collection) per stream.
	Live float64
	// Inuse is the growth of runtime.MemStats.HeapInuse (bytes in spans
	// holding at least one object) per stream; it includes fragmentation.
	Inuse float64
}

// streamWait bounds how long a stream may take to start, so a middleware
// that never flushes fails the measurement instead of hanging it.
const streamWait = 2 * time.Minute

// MeasureInflight holds n responses through impl open at once, each having
// written chunk and flushed, and returns the heap each one holds: the
// difference between the collected heap with all of them open and the
// collected heap before the first opened, divided by n.
func MeasureInflight(impl *Impl, chunk Body, n int) (Heap, error) {
	if n <= 0 {
		return Heap{}, errors.New("bench: MeasureInflight needs at least one stream")
	}
	started := make(chan struct{}, n)
	release := make(chan struct{})
	h := impl.Stream(chunk, started, release)
	ws := make([]*ResponseWriter, n)
	rs := make([]*http.Request, n)
	for i := range ws {
		ws[i] = NewResponseWriter(false)
		rs[i] = NewRequest(impl.Coding)
	}
	// Goroutine descriptors are never freed, only reused: make sure n of
	// them exist before the baseline so that none is counted as the
	// middleware's.
	warmGoroutines(n)

	var before, after runtime.MemStats
	collect(&before)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(ws[i], rs[i])
		}()
	}
	timeout := time.NewTimer(streamWait)
	defer timeout.Stop()
	var err error
	for range n {
		select {
		case <-started:
		case <-timeout.C:
			err = fmt.Errorf("bench: %s %s: streams did not start within %v", impl.Name, impl.Coding, streamWait)
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		collect(&after)
	}
	close(release)
	wg.Wait()
	if err != nil {
		return Heap{}, err
	}
	if impl.Name != "none" {
		for _, w := range ws {
			if got := w.Header().Get("Content-Encoding"); got != impl.Coding || w.Written() == 0 {
				return Heap{}, fmt.Errorf("bench: %s %s: stream went out with Content-Encoding %q and %d bytes",
					impl.Name, impl.Coding, got, w.Written())
			}
		}
	}
	runtime.KeepAlive(ws)
	runtime.KeepAlive(rs)
	return Heap{
		Live:  (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n),
		Inuse: (float64(after.HeapInuse) - float64(before.HeapInuse)) / float64(n),
	}, nil
}

// collect runs the collector twice, so that sync.Pool's victim caches are
// emptied too, and reads the statistics.
func collect(m *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(m)
}

func warmGoroutines(n int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
		}()
	}
	close(release)
	wg.Wait()
}

// CheckStream opens one stream through impl and checks that what it has
// sent by the time the handler has flushed decodes to chunk, so a client
// sees every event as it is sent, and that the complete body decodes to
// chunk too.
func CheckStream(impl *Impl, chunk Body) error {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h := impl.Stream(chunk, started, release)
	w := NewResponseWriter(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, NewRequest(impl.Coding))
	}()
	select {
	case <-started:
	case <-time.After(streamWait):
		close(release)
		return errors.New("stream did not start")
	}
	// The handler is blocked, so the writer is not being written to.
	ce := w.Header().Get("Content-Encoding")
	prefix := append([]byte(nil), w.Body()...)
	close(release)
	<-done
	if ce != impl.Coding {
		return fmt.Errorf("response Content-Encoding %q after the flush, want %q", ce, impl.Coding)
	}
	got, err := decodePrefix(impl.Coding, prefix)
	if err != nil {
		return fmt.Errorf("decoding the flushed prefix: %w", err)
	}
	if !bytes.Equal(got, chunk.Data) {
		return fmt.Errorf("flushed prefix decodes to %d bytes, want the %d written", len(got), len(chunk.Data))
	}
	full, err := Decode(impl.Coding, w.Body())
	if err != nil {
		return fmt.Errorf("decoding the whole stream: %w", err)
	}
	if !bytes.Equal(full, chunk.Data) {
		return fmt.Errorf("whole stream decodes to %d bytes, want %d", len(full), len(chunk.Data))
	}
	return nil
}

// decodePrefix decodes as much of an unfinished stream as it holds.
func decodePrefix(coding string, data []byte) ([]byte, error) {
	r, done, err := openReader(coding, data)
	if err != nil {
		return nil, err
	}
	defer done()
	var out bytes.Buffer
	_, err = io.Copy(&out, r)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil && out.Len() > 0 {
		// The codec reports the missing end in its own words; the
		// caller compares what was decoded.
		err = nil
	}
	return out.Bytes(), err
}
