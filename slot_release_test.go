package squeeze_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// The pooled per-response slot (slot.go) is released whatever happens
// inside the response: panics in finish or in ReadFrom, and headers kept
// after the response.

// abortingWriter is an outer writer that aborts the handler the way
// net/http documents, by panicking with http.ErrAbortHandler, once the
// body starts going out (an outer middleware that finds its client gone).
type abortingWriter struct{ *httptest.ResponseRecorder }

func (w abortingWriter) Write(p []byte) (int, error) { panic(http.ErrAbortHandler) }

// When anything inside finish panics or calls runtime.Goexit (the observer,
// or the underlying writer while the whole body goes out, e.g. with
// http.ErrAbortHandler, which net/http recovers silently), the slot is
// released all the same: a goroutine the handler left behind gets an error
// from its next Write instead of blocking for ever in it (a goroutine, and
// whatever it holds, leaked per such response).
func TestPanicInFinishReleasesTheSlot(t *testing.T) {
	body := textBody(31, 4000)
	cases := []struct {
		name string
		m    *squeeze.Middleware
		w    func() http.ResponseWriter
	}{
		{"observer panics", newMiddleware(t, squeeze.WithObserver(squeeze.Observer{Response: func(squeeze.ResponseInfo) {
			panic("observer failed")
		}})), func() http.ResponseWriter { return httptest.NewRecorder() }},
		{"underlying writer aborts", newMiddleware(t),
			func() http.ResponseWriter { return abortingWriter{httptest.NewRecorder()} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept := make(chan http.ResponseWriter, 1)
			h := c.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = w.Write(body) // held back, sent whole by finish
				kept <- w            // a goroutine the handler started keeps w
			}))
			func() {
				defer func() { _ = recover() }() // net/http's conn.serve recovers too
				h.ServeHTTP(c.w(), request(http.MethodGet, "gzip"))
			}()
			w := <-kept
			done := make(chan error, 1)
			go func() {
				_, err := w.Write([]byte("late"))
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("a write after the handler returned succeeded")
				}
			case <-time.After(3 * time.Second):
				t.Fatal("a write after the handler returned is still blocked after 3 s: the slot's lock was never released")
			}
		})
	}
}

// panicReader is a body source that fails by panicking.
type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic(http.ErrAbortHandler) }

// A body source whose Read panics (or calls runtime.Goexit) inside ReadFrom
// unwinds through the handler with the slot released: the handler's deferred
// close goes on, the request's goroutine returns and the panic reaches
// net/http, which closes the connection.
func TestPanicInReadFromReleasesTheSlot(t *testing.T) {
	m := newMiddleware(t)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, onlyReader{panicReader{}})
	}))
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		serve(h, http.MethodGet, "gzip")
	}()
	select {
	case p := <-done:
		if p != http.ErrAbortHandler {
			t.Errorf("the handler's panic came out as %v, want http.ErrAbortHandler", p)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the request did not end within 3 s of its body source panicking: close waits for the lock ReadFrom left held")
	}
}

// The header values the middleware sets (Content-Encoding, Vary, Content-
// Length) belong to the response, and its slot keeps up to two 32 KiB spare
// buffers: whoever keeps the header map of a finished response (an access log
// queue, a recorder, an in-process response cache that keeps the map) must
// not keep those buffers alive after the pool dropped the slot.
func TestKeptHeaderMapPinsNoSpareBuffers(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	m := newMiddleware(t)
	body := textBody(32, 8000)
	h := m.Handler(writeText("text/plain", body, 0))
	heap := func() int64 {
		runtime.GC()
		runtime.GC() // twice: sync.Pools drop everything
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	// stable waits for the heap to settle: other tests' goroutines may
	// still be ending and freeing what they held.
	stable := func() int64 {
		prev := heap()
		for range 100 {
			time.Sleep(10 * time.Millisecond)
			cur := heap()
			if d := cur - prev; d > -32<<10 && d < 32<<10 {
				return cur
			}
			prev = cur
		}
		t.Skip("the heap does not settle")
		return 0
	}
	const rounds = 16
	kept := make([]http.Header, 0, rounds)
	for range rounds {
		rec := serve(h, http.MethodGet, "gzip")
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("the response was not encoded: %v", rec.Header())
		}
		kept = append(kept, rec.Header())
		runtime.GC()
		runtime.GC() // the next response gets a new slot
	}
	with := stable()
	runtime.KeepAlive(kept)
	without := stable()
	per := (with - without) / rounds
	t.Logf("%d bytes of heap per kept header map", per)
	if per > 16<<10 {
		t.Errorf("each header map kept from a finished response keeps %d bytes alive, want under 16 KiB (no pooled buffers)", per)
	}
}
