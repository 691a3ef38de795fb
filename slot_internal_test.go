package squeeze

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"unsafe"
)

// The handlerWriter of a finished response lets go of its slot: a handler
// or goroutine that keeps it, or a header map kept with the values in it,
// pins neither the slot's buffers nor the encoder the slot keeps.
func TestFinishedHandlerWriterLetsGoOfItsSlot(t *testing.T) {
	m := MustNew()
	var kept *handlerWriter
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		kept = w.(*handlerWriter)
		if kept.s.Load() == nil {
			t.Error("the current response's writer has no slot")
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(bytes.Repeat([]byte("squeeze "), 512))
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Accept-Encoding", Gzip)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if kept.s.Load() != nil {
		t.Error("a finished response's writer still points at its slot")
	}
	if _, err := kept.Write([]byte("late")); err != errFinished {
		t.Errorf("late Write: %v, want errFinished", err)
	}
}

// A slot keeps the encoder of a whole body for its next response (slot.go,
// slot.encoder), and a stream takes it rather than hold it idle beside one
// from the pool: while a stream runs, its slot keeps no other encoder.
func TestStreamTakesTheEncoderItsSlotKept(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race: the slot may not come back")
	}
	m := MustNew(WithEncodings(Gzip))
	whole := bytes.Repeat([]byte("whole body "), 400)
	stream := bytes.Repeat([]byte("a stream "), 2<<20/9) // past the buffer
	keptBefore := 0
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := w.(*handlerWriter).s.Load()
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/whole" {
			_, _ = w.Write(whole)
			return
		}
		if s.enc != nil {
			keptBefore++
		}
		_, _ = w.Write(stream)
		if s.rw.state != stateEncoding {
			t.Fatalf("the stream is in state %d, not encoding", s.rw.state)
		}
		if s.enc != nil {
			t.Error("a streaming slot keeps an idle encoder beside the stream's")
		}
	}))
	for range 10 {
		for _, path := range []string{"/whole", "/stream"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Accept-Encoding", Gzip)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Header().Get("Content-Encoding") != Gzip {
				t.Fatalf("%s went out as %q", path, rec.Header().Get("Content-Encoding"))
			}
		}
	}
	if keptBefore == 0 {
		t.Error("no stream found an encoder kept from the whole body before it: slots keep none")
	}
}

// A block of handlerWriters fits the 2,048-byte size class with the 8-byte
// header the runtime gives an object over 512 bytes that holds pointers:
// one more element, or a larger one, and the block would take the
// 2,304-byte class and waste a tenth of itself.
func TestHandlerWriterBlockFitsTheSizeClass(t *testing.T) {
	const class, header = 2048, 8
	size := int(unsafe.Sizeof(handlerWriter{})) * handlerWriterBlock
	if size+header > class {
		t.Errorf("a block of %d handlerWriters takes %d bytes with its header, over the %d-byte size class", handlerWriterBlock, size+header, class)
	}
	if next := size + int(unsafe.Sizeof(handlerWriter{})); next+header <= class {
		t.Errorf("a block of %d handlerWriters would fit the %d-byte size class too (%d bytes): handlerWriterBlock wastes a slot", handlerWriterBlock+1, class, next+header)
	}
}
