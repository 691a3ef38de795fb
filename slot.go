package squeeze

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/pool"
)

// slot is a pooled responseWriter with the lock that serialises the
// handler's calls with finish.
//
// Pooling the state spares allocating it per response (its allocation was
// the largest single part of squeeze's fixed cost per response: see
// docs/internals.md#the-per-response-state). What makes it safe is that a
// handler never holds the slot: it holds a handlerWriter, its own for each
// response (carved from a block), whose pointer to the slot close clears,
// under the lock, when the response finishes. A goroutine the handler left
// running finds the pointer cleared, or, if it was waiting for the lock,
// finds it cleared once it holds the lock, and gets errFinished; it can
// never write into a later client's response, nor into a pooled encoder or
// buffer. A response its handler left untouched is handed back instead
// (handBack): its writer then points to a slot of the response's own,
// which reaches that response's underlying writer and nothing pooled.
type slot struct {
	mu sync.Mutex
	// served counts the responses the slot finished.
	served uint64
	// The last content type matched and the last Accept-Encoding
	// negotiated in this slot, with their answers. Handlers mostly declare
	// the same few types and clients of one kind send the same field, so
	// a repeat costs a string comparison; the answers depend on nothing
	// else but the Middleware's configuration, which is fixed.
	lastType     string
	lastEligible bool
	lastAccept   string
	lastOffer    int

	// digits is the rest of a block of bytes that Content-Length strings
	// are made in, and lengthText the last one made, for lastLength: a
	// string is immutable, so responses of the same length share one,
	// while each gets its own []string.
	digits     []byte
	lengthText string
	lastLength int

	// spare keeps up to two buffers from one response to the next (the
	// body held back and its encoding), sparing the buffer pool two Gets
	// and two Puts per response. A response that goes on as a stream
	// gives its buffer to the pool at once, as before.
	spare [2]*[]byte
	// enc is an encoder of the pool encoders, kept from one whole body
	// to the next (see encoder); nil when the slot keeps none.
	enc      *pool.Encoder
	encoders *pool.Encoders
	// handlerWriters is the rest of a block of handlerWriters (newHandlerWriters), carved
	// one per response.
	handlerWriters []handlerWriter

	// rw comes last, so that the fields above, which every response
	// reads, share the slot's first cache lines.
	rw responseWriter
}

// handlerWriterBlock is how many handlerWriters a block holds: the most
// that fit one of the allocator's size classes with the header such an
// object carries, so that a block wastes nothing
// (TestHandlerWriterBlockFitsTheSizeClass; the arithmetic is in
// docs/internals.md#the-per-response-state).
const handlerWriterBlock = 36

// newHandlerWriters returns handlerWriters for s to carve: one for a slot's first
// response, so that a burst of concurrent responses, each in a new slot,
// holds no blocks it may never use (see
// docs/internals.md#the-per-response-state); otherwise a block of
// handlerWriterBlock.
func (s *slot) newHandlerWriters() []handlerWriter {
	if s.served == 0 {
		return make([]handlerWriter, 1)
	}
	return make([]handlerWriter, handlerWriterBlock)
}

// headerValues holds the backing arrays of the header values the
// middleware sets on one response. They must be the response's own, as
// net/http's header map is: whoever keeps the map (an access logger, an
// outer middleware) may write into a value in place, on any goroutine, and
// that must reach no other response. So they live in the response's
// handlerWriter, which is never reused; a kept header map pins its block
// (2 KiB), never the slot. The strings in it are immutable and shared.
type headerValues struct {
	encoding, vary, length [1]string
}

// digitsBlock is the size of a block of Content-Length digits: a new
// length costs its digits (4-5 bytes for a body held in memory) from it.
const digitsBlock = 512

// lengthString returns n in decimal. The bytes of a string it returns are
// never written again (the block is only ever carved forward), so the
// string is shared by every response of that length, and costs no
// allocation when the length repeats.
func (s *slot) lengthString(n int) string {
	if n == s.lastLength && s.lengthText != "" {
		return s.lengthText
	}
	var buf [20]byte
	d := strconv.AppendInt(buf[:0], int64(n), 10)
	if len(s.digits) < len(d) {
		s.digits = make([]byte, digitsBlock)
	}
	b := s.digits[:len(d):len(d)]
	s.digits = s.digits[len(d):]
	copy(b, d)
	s.lengthText, s.lastLength = unsafe.String(&b[0], len(b)), n
	return s.lengthText
}

// encoder returns an encoder for o writing to w: the one the slot kept,
// when it is of o's pool, or one from the pool. A whole body gives it back
// with keepEncoder, a stream to the pool.
//
// Keeping one encoder in the slot from one whole body to the next, as it
// keeps buffers, spares each the pool's Get and Put and the Reset that Put
// makes (docs/internals.md#the-per-response-state). The encoder stays the slot's alone, as a slot serves one response at a
// time. It is kept only after writing to the slot's own output buffer, so
// it pins nothing of a finished response. A slot never holds an idle
// encoder beside a busy one: a stream takes the kept encoder, or sends it
// back to its pool before taking another.
func (s *slot) encoder(o *offer, w io.Writer) (*pool.Encoder, error) {
	if e := s.enc; e != nil {
		s.enc = nil
		if s.encoders == o.encoders {
			e.Reset(w)
			return e, nil
		}
		s.encoders.Put(e)
	}
	return o.encoders.Get(w)
}

// keepEncoder keeps e, which encoder returned for o and which wrote a whole
// body to the slot's output buffer, for the slot's next response. An
// encoder for a dictionary, which holds the dictionary, goes back to its
// pool instead.
func (s *slot) keepEncoder(o *offer, e *pool.Encoder) {
	if o.dict != nil {
		o.encoders.Put(e)
		return
	}
	s.enc, s.encoders = e, o.encoders
}

// negotiate is [negotiate] for one field line, answered from the memo when
// the line is the one negotiated last.
func (s *slot) negotiate(acceptEncoding []string, offers []offer) int {
	if len(acceptEncoding) != 1 {
		return negotiate(acceptEncoding, offers)
	}
	if v := acceptEncoding[0]; v == s.lastAccept && v != "" {
		return s.lastOffer
	}
	i := negotiate(acceptEncoding, offers)
	s.lastAccept, s.lastOffer = acceptEncoding[0], i
	return i
}

// handlerWriter is the [http.ResponseWriter] a handler is given: one per
// response, never reused, standing for the slot's responseWriter until the
// response finishes. It holds the response's header values too, so that a
// response's own memory is one 56-byte element of a block.
//
// s is cleared when the response finishes: that is what makes the writer
// stale, and it also means that neither a handler that keeps its writer
// nor a header map kept with its values pins the slot, with its buffers
// and the encoder it keeps. It is atomic because a goroutine the handler
// left running may read it as close clears it.
type handlerWriter struct {
	s      atomic.Pointer[slot]
	values headerValues
}

// open takes a slot from the pool and readies it for the response to r,
// whose fields rh holds, on w. The handler is to be given the
// handlerWriter; close ends the response.
func (m *Middleware) open(w http.ResponseWriter, r *http.Request, rh *requestHeader) (*slot, *handlerWriter) {
	s, _ := m.slots.Get().(*slot)
	if s == nil {
		s = new(slot)
	}
	if len(s.handlerWriters) == 0 {
		s.handlerWriters = s.newHandlerWriters()
	}
	hw := &s.handlerWriters[0]
	s.handlerWriters = s.handlerWriters[1:]
	hw.s.Store(s)
	s.rw.start(m, s, w, r, rh)
	s.rw.values = &hw.values
	return s, hw
}

// close finishes the response in s, clears the pointer to the slot of hw,
// the handlerWriter open gave with s, so that the writer goes stale (or,
// for an untouched response, points it to the response's own slot that
// handBack makes), clears the state, and puts the slot back. It is called
// once per open. If finish panics (an observer, or an underlying writer
// aborting with [http.ErrAbortHandler]), the writer still goes stale and
// the lock is still released, but the slot, in a state no one checked, is
// left to the garbage collector.
func (m *Middleware) close(s *slot, hw *handlerWriter, completed bool) {
	s.mu.Lock()
	finished := false
	defer func() {
		s.served++
		if s.rw.untouched {
			hw.s.Store(handBack(&s.rw))
		} else {
			hw.s.Store(nil)
		}
		s.rw = responseWriter{}
		s.mu.Unlock()
		if finished {
			m.slots.Put(s)
		}
	}()
	s.rw.finish(completed)
	finished = true
}

// handBack returns the slot that the handlerWriter of rw, an untouched
// response, stands for once the response has finished: the response's
// own, never pooled, with nothing in it but the underlying writer (and
// the request, for CloseNotify), to which everything then passes. So the
// writes of whoever writes next through the writer the handler was given
// (echo's error handler, behind echo.WrapMiddleware) reach this response,
// as plain, and never a later one that reuses the pooled slot. Once the
// request's context ends (net/http ends it when the outermost handler
// returns, before it finishes the response) the writer goes stale (lock).
// It costs an allocation, on untouched responses only.
func handBack(rw *responseWriter) *slot {
	s := &slot{}
	s.rw.m, s.rw.slot, s.rw.w, s.rw.req = rw.m, s, rw.w, rw.req
	s.rw.state = stateHandedBack
	return s
}

// lock locks the slot and returns its responseWriter if hw is current; if
// the response finished, it returns nil with the slot unlocked.
func (hw *handlerWriter) lock() *responseWriter {
	for {
		s := hw.s.Load()
		if s == nil {
			return nil
		}
		s.mu.Lock()
		if hw.s.Load() == s {
			if s.rw.state == stateHandedBack && s.rw.req.Context().Err() != nil {
				// net/http ends the request's context once the
				// outermost handler returns, before it finishes the
				// response: past that, its writer panics (HTTP/2,
				// Hijack) or writes into a buffer it pooled for other
				// connections (HTTP/1), so the writer goes stale.
				hw.s.Store(nil)
				s.mu.Unlock()
				return nil
			}
			return &s.rw
		}
		// The response finished while this call waited for the lock:
		// the writer went stale, or was handed back (close), once.
		s.mu.Unlock()
	}
}

// unlock unlocks the slot of a current hw, locked by lock.
func (hw *handlerWriter) unlock() { hw.s.Load().mu.Unlock() }

// Header returns the header map of the underlying writer. After the
// response finished, it returns an empty map that goes nowhere.
func (hw *handlerWriter) Header() http.Header {
	rw := hw.lock()
	if rw == nil {
		return http.Header{}
	}
	defer hw.unlock()
	return rw.header()
}

// WriteHeader records the final status and decides what it can: the header
// goes out once the verdict is known. 1xx responses go out at once. Like
// net/http's, it panics on a code that is not three digits, there and then,
// where the handler can see it.
func (hw *handlerWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("squeeze: invalid WriteHeader code %v", code))
	}
	rw := hw.lock()
	if rw == nil {
		return
	}
	defer hw.unlock()
	rw.writeHeader(code)
}

// Write holds p back while the verdict waits, then passes the body on.
func (hw *handlerWriter) Write(p []byte) (int, error) {
	rw := hw.lock()
	if rw == nil {
		return 0, errFinished
	}
	defer hw.unlock()
	return rw.write(p)
}

// WriteString is Write for a string, without copying it: io.WriteString
// calls it.
func (hw *handlerWriter) WriteString(s string) (int, error) {
	rw := hw.lock()
	if rw == nil {
		return 0, errFinished
	}
	defer hw.unlock()
	return rw.writeString(s)
}

// CloseNotify returns a channel that receives true, and is then closed,
// when the request's context ends: the client went away, or the server is
// done with the request. It implements [http.CloseNotifier], deprecated
// but still asserted by frameworks (gin's Context.Stream); new code should
// watch the request's context. Each call costs a channel and a
// [context.AfterFunc], and nothing is spent on responses that never call it.
func (hw *handlerWriter) CloseNotify() <-chan bool {
	ch := make(chan bool, 1)
	notify := func() {
		ch <- true
		close(ch)
	}
	rw := hw.lock()
	if rw == nil {
		notify() // the response is over
		return ch
	}
	ctx := rw.req.Context()
	hw.unlock()
	context.AfterFunc(ctx, notify)
	return ch
}

// Flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (hw *handlerWriter) Flush() { _ = hw.FlushError() }

// FlushError is Flush returning the error, for [http.ResponseController].
func (hw *handlerWriter) FlushError() error {
	rw := hw.lock()
	if rw == nil {
		return errFinished
	}
	defer hw.unlock()
	return rw.flush()
}

// Hijack hands the connection to the handler when the underlying writer
// supports it; when it does not (HTTP/2), nothing changes and the error
// matches [http.ErrNotSupported]. As in net/http, a status the handler
// chose, and the body it wrote, go out first; an encoded stream in progress
// is abandoned.
func (hw *handlerWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rw := hw.lock()
	if rw == nil {
		return nil, nil, errFinished
	}
	defer hw.unlock()
	return rw.hijack()
}

// Unwrap returns the underlying ResponseWriter, for
// [http.ResponseController], or nil once the response finished.
func (hw *handlerWriter) Unwrap() http.ResponseWriter {
	rw := hw.lock()
	if rw == nil {
		return nil
	}
	defer hw.unlock()
	return rw.w
}

// ReadFrom lets io.Copy reach the underlying writer's ReadFrom (sendfile)
// when the response is sent plain. While the verdict waits, it fills the
// buffer as writes would.
func (hw *handlerWriter) ReadFrom(src io.Reader) (int64, error) {
	total, state, direct, w, buffers, err := hw.lockAndHoldFrom(src)
	if err != nil || state == stateWaiting {
		return total, err
	}
	var n int64
	switch rf, ok := w.(io.ReaderFrom); {
	case direct && ok:
		// Unlocked: a long copy must not keep finish waiting. A handler
		// that copies from one goroutine and returns from another is
		// racing net/http too.
		n, err = rf.ReadFrom(src)
		if rw := hw.lock(); rw != nil {
			rw.sent += n
			hw.unlock()
		}
	case state == stateHijacked:
		err = http.ErrHijacked
	default:
		// Through Write, a chunk at a time: each takes the lock, so
		// finish is never kept waiting for a copy.
		n, err = copyThrough(buffers, writeOnly{hw}, src)
	}
	return total + n, err
}

// lockAndHoldFrom is the part of ReadFrom done under the lock: what src
// gives while the verdict waits goes into the buffer. The lock is released
// by a defer, since src is the handler's and may panic. It returns the
// state after, whether the rest may go to w's ReadFrom directly, w, and
// the buffer pool; errFinished if the response had finished.
func (hw *handlerWriter) lockAndHoldFrom(src io.Reader) (total int64, state writerState, direct bool, w http.ResponseWriter, buffers *pool.Buffers, err error) {
	rw := hw.lock()
	if rw == nil {
		return 0, stateFinished, false, nil, nil, errFinished
	}
	defer hw.unlock()
	total, err = rw.holdFrom(src)
	state = rw.state
	direct = state == statePlain && rw.teeing == 0 || state == stateHandedBack
	return total, state, direct, rw.w, rw.m.buffers, err
}

// skipReport has m's Handler leave the response on w unreported when it
// is the one serving it: a FileServer of m that it wraps reports the
// response itself. It looks through whatever wraps w in between, following
// Unwrap as [http.ResponseController] does, other Middlewares' writers
// included.
func (m *Middleware) skipReport(w http.ResponseWriter) {
	if m.observe == nil {
		return
	}
	for w != nil {
		hw, ok := w.(*handlerWriter)
		if !ok {
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				return
			}
			w = u.Unwrap()
			continue
		}
		rw := hw.lock()
		if rw == nil {
			return
		}
		if rw.m == m {
			rw.report.byFileServer = true
		}
		w = rw.w
		hw.unlock()
	}
}

// writeOnly hides every method of a writer but Write, so that io.Copy
// does not call ReadFrom back.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }
