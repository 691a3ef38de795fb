package squeeze

// The Life of a Response
//
//	handler -> handlerWriter -> responseWriter -> decide -> cache | encoder | plain -> wire
//
// Middleware.Handler gives the handler a handlerWriter (slot.go) standing
// for a pooled responseWriter until the response ends. WriteHeader, Write
// and ReadFrom reach writeHeader, write and holdFrom; hold keeps the body
// back while decide (decide.go) answers wait. At each moment that may
// settle it (the status, sniffable bytes, a full buffer, a flush, the end)
// advance asks decide for a verdict and a Reason, and commit carries it
// out: the header edits (Vary, ETag, and each responseHook's: the
// dictionaries'), the header, then what was held back, by sendHeld. The
// body then goes one way: out of the Cache (cachedWhole, cachedStream),
// through an encoder (sendWhole for a body that ended within the buffer, in
// responsewriter_send.go; a stream, teed by the cache's fill, otherwise),
// or plain (pass). Every byte reaches the client through wire. finish ends
// the response as the handler returns: each hook's ended, then the
// observer's reporter (observe.go).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/pool"
)

type writerState uint8

const (
	// stateWaiting holds the body back: nothing has been sent yet.
	stateWaiting writerState = iota
	// statePlain passes everything through unchanged.
	statePlain
	// stateEncoding writes the body through an encoder.
	stateEncoding
	// stateSent means a whole body went out in one piece.
	stateSent
	// stateDiscarding means a stored encoding went out for a stream the
	// cache knew by its ETag: the handler's body is read and discarded.
	stateDiscarding
	// stateHijacked means the handler took over the connection.
	stateHijacked
	// stateFinished means the handler returned; later writes fail.
	stateFinished
	// stateHandedBack is the state of the slot a handlerWriter stands
	// for once an untouched response finished (see handBack): everything
	// passes straight to the underlying writer.
	stateHandedBack
)

// errFinished is returned by writes, flushes, copies and hijacks made after
// the handler returned, for example from a goroutine the handler left
// behind.
var errFinished = errors.New("squeeze: the response is finished: its handler has returned")

// responseWriter is the state of one response. It is pooled (see slot):
// handlers never see it, only the [handlerWriter] that stands for it while
// the response lasts. The expensive parts (buffers, encoders) have pools of
// their own.
//
// Its methods feed bytes to the verdict of decide; advance asks for one,
// and commit makes the header edits that go with it and sends the header.
// The slot's lock is held around every call into it.
type responseWriter struct {
	m *Middleware
	w http.ResponseWriter
	// req is the request as it arrived, whose If-None-Match tells which
	// tag a 304 must carry.
	req *http.Request

	// hdr is what the header said when the handler chose the status.
	hdr    responseFields
	status int // the final status the handler chose; 0 until then
	// written counts the body bytes fed to an encoder, so that a stream
	// that falls short of or exceeds hdr.declared can be told apart.
	written int64

	// offer is the negotiated coding (one of m.offers, or a dictionary
	// coding's offer), or nil for identity.
	offer *offer
	// held points to the bytes of the string a WriteString gave while
	// the verdict waited, when the buffer holds that one write and
	// nothing else (see writeString): a plain body then goes on to the
	// underlying writer's WriteString, as if squeeze were not there. Its
	// length is the buffer's.
	held *byte

	// after is set when the handler asked for the header after choosing
	// the status (see restoreHeader).
	after *afterStatus

	buf *[]byte
	enc *pool.Encoder
	out cappedBuffer

	// hooks are the features following the response (see responseHook):
	// the dictionaries, and the cache's fill of a stream it stores; the
	// first nhooks are set.
	hooks [2]responseHook
	// sent counts the body bytes the underlying writer took (see wire);
	// elapsed is the time spent in the encoder, measured only when an
	// observer is set.
	sent    int64
	elapsed time.Duration

	// slot is the slot cw lives in, which keeps spare buffers and an
	// encoder. values holds the header values the response is given, in
	// its handlerWriter. encodedAs is the coding the response was sent
	// in, "" for none: the observer reads it rather than the
	// Content-Encoding value, which the header map's owner may rewrite.
	slot      *slot
	values    *headerValues
	encodedAs string

	// The fields of a byte or less come last, together, so that the
	// struct pads once: a larger one would take the slot, which handBack
	// allocates, to a larger size class.

	// first is where ReadFrom reads a body's first byte before the status
	// is set (a field, so that reading into it does not allocate).
	first [1]byte
	// ranged is set for requests with a Range header: the response stays
	// identity, since byte ranges refer to the plain bytes.
	ranged bool
	// head is set for HEAD requests, whose body the handler need not write.
	head bool
	// fromCache is set when the body went out from the cache.
	fromCache bool
	// closed is set when an encoded stream ended whole, with its end
	// marker.
	closed bool
	state  writerState
	need   need
	why    Reason
	nhooks uint8
	// teeing has bit i set while hooks[i] wants the plain body.
	teeing uint8
	// fallback is the index plus one in m.offers of the offer negotiated
	// without the dictionary when a delta's offer replaced it, 0 when
	// none did or nothing else was acceptable (see fallbackOffer).
	fallback uint8
	// report is the observer's part (observe.go).
	report reporter
	// onlyContentType is set when the header held only Content-Type as
	// the response was committed, an API handler's commonest: there is no
	// Vary, ETag or Accept-Ranges to look up.
	onlyContentType bool
	// untouched is set when the handler returned without choosing a
	// status or writing a byte: finish then makes the header edits but
	// sends nothing, and the response is handed back (see leaveUntouched).
	untouched bool
}

// afterStatus holds the header as it was when the status was chosen, since
// net/http ignores later changes, trailers aside, and the values of declared
// trailers set since, which go out after the body.
type afterStatus struct {
	snapshot, late http.Header
}

// start readies cw, zero in its slot s, for the response to r on w. The
// fields are set one by one: assigning a whole struct would copy it.
func (cw *responseWriter) start(m *Middleware, s *slot, w http.ResponseWriter, r *http.Request, rh *requestHeader) {
	cw.m, cw.slot = m, s
	cw.w, cw.req = w, r
	cw.hdr.declared = -1
	cw.head = r.Method == http.MethodHead
	cw.ranged = len(rh.ranges) > 0
	i := -1
	if !cw.ranged {
		if i = s.negotiate(rh.acceptEncoding, m.offers); i >= 0 {
			cw.offer = &m.offers[i]
		}
	}
	if m.dicts != nil {
		// A dictionary the client holds may replace the offer; the one
		// it replaces stays at hand (fallbackOffer).
		o, hook := m.dicts.follow(r, cw.ranged)
		if o != nil {
			cw.offer, cw.fallback = o, uint8(i+1)
		}
		cw.attach(hook)
	}
}

// fallbackOffer returns the offer negotiated without the dictionary when a
// delta's offer replaced it, or nil.
func (cw *responseWriter) fallbackOffer() *offer {
	if cw.fallback == 0 {
		return nil
	}
	return &cw.m.offers[cw.fallback-1]
}

// dropDelta gives up the delta's offer for the one negotiated without the
// dictionary (nil: identity). A hook calls it at the verdict, when the
// response is not one its client may get as a delta: commit then goes on
// with that offer, or decides again without one.
func (cw *responseWriter) dropDelta() {
	if cw.offer != nil && cw.offer.dict != nil {
		cw.offer, cw.fallback = cw.fallbackOffer(), 0
	}
}

// A responseHook is a feature that follows one response: the dictionaries
// (dictionary.go), and the Cache's fill of a stream it stores (cache.go).
// The writer calls it at fixed points and knows nothing else of it; the
// hook keeps its own state.
type responseHook interface {
	// committed is called as the verdict is carried out, before the
	// header goes out: the hook may edit h, and reports whether it wants
	// the plain body. A hook attached then (the fill) is not called.
	committed(cw *responseWriter, h http.Header, f facts) (wantsBody bool)
	// plain is given the plain body as it passes on after the verdict,
	// while the hook wants it (a whole body sent from the buffer is not
	// passed: see sentWhole). It reports whether the hook wants more.
	plain(p []byte) (wantsMore bool)
	// flushed is called when the handler flushes.
	flushed()
	// ended is called once, when the response ends: completed is false
	// when the handler panicked. The observer hears after every hook.
	ended(cw *responseWriter, completed bool)
}

// attach makes k follow the response.
func (cw *responseWriter) attach(k responseHook) {
	cw.hooks[cw.nhooks] = k
	cw.nhooks++
}

// tee gives p, plain body bytes past the verdict, to the hooks that want
// them, and stops giving to each once it wants no more.
func (cw *responseWriter) tee(p []byte) {
	for i, k := range cw.hooks[:cw.nhooks] {
		if bit := uint8(1) << i; cw.teeing&bit != 0 && !k.plain(p) {
			cw.teeing &^= bit
		}
	}
}

// sentWhole returns the body and true if it went out whole from the
// buffer, where it stays until the response ends.
func (cw *responseWriter) sentWhole() ([]byte, bool) {
	return cw.buffered(), cw.state == stateSent
}

// coding returns the negotiated coding, or "" for identity.
func (cw *responseWriter) coding() string {
	if cw.offer == nil {
		return ""
	}
	return cw.offer.coding
}

// header returns the header map of the underlying writer, and keeps a
// snapshot of it if the status was chosen already (see restoreHeader).
func (cw *responseWriter) header() http.Header {
	h := cw.w.Header()
	if cw.state == stateWaiting && cw.status != 0 {
		if cw.after == nil {
			cw.after = &afterStatus{}
		}
		if cw.after.snapshot == nil {
			cw.after.snapshot = h.Clone()
		}
	}
	return h
}

// writeHeader records the final status and decides what it can: the
// header goes out once the verdict is known. 1xx responses go out at once.
func (cw *responseWriter) writeHeader(code int) {
	if cw.state == stateHandedBack {
		cw.w.WriteHeader(code)
		return
	}
	if cw.state != stateWaiting || cw.status != 0 {
		// The first final status wins, as in net/http; 1xx after it are
		// dropped rather than sent in the middle of a body.
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		cw.w.WriteHeader(code)
		return
	}
	cw.status = code
	cw.readHeader(cw.w.Header())
	_ = cw.advance(atHeader, nil)
}

// readHeader reads the fields decide needs from h into hdr, and matches
// the content type against the ones to compress.
func (cw *responseWriter) readHeader(h http.Header) {
	cw.hdr = readFields(h)
	cw.hdr.eligible = cw.hdr.typed && cw.matchType(cw.hdr.contentType)
}

// implicitHeader is the implicit WriteHeader(200) of a body written
// without one.
func (cw *responseWriter) implicitHeader() {
	if cw.status == 0 {
		cw.writeHeader(http.StatusOK)
	}
}

// write holds p back while the verdict waits, then passes the body on.
func (cw *responseWriter) write(p []byte) (int, error) {
	if cw.state == stateWaiting {
		cw.held = nil // the buffer holds more than one string now
		held, err := cw.hold(p)
		if err != nil {
			return 0, err
		}
		if held {
			return len(p), nil
		}
	}
	return cw.pass(p)
}

// writeString is write for a string, which it does not copy: the held
// back buffer, the dictionary being collected and the encoders copy or
// only read its bytes, and a plain body goes to the underlying writer's
// own WriteString (io.WriteString), which is given the string itself: a
// body held back whole as one string too (see held and sendHeld).
func (cw *responseWriter) writeString(s string) (int, error) {
	p := unsafe.Slice(unsafe.StringData(s), len(s))
	if cw.state == stateWaiting {
		cw.held = nil
		if len(cw.buffered()) == 0 && len(s) > 0 {
			cw.held = unsafe.StringData(s)
		}
		held, err := cw.hold(p)
		if err != nil {
			return 0, err
		}
		if held {
			return len(s), nil
		}
	}
	switch cw.state {
	case statePlain:
		if cw.teeing != 0 {
			cw.tee(p)
		}
		n, err := io.WriteString(cw.w, s)
		cw.sent += int64(n)
		return n, err
	case stateHandedBack:
		return io.WriteString(cw.w, s)
	}
	return cw.pass(p)
}

// hold is the part of a write made while the verdict waits: it holds p
// back and reports true when p fits in the buffer, and otherwise asks for
// the verdict that p must then go through. On an error, nothing of p was
// taken.
func (cw *responseWriter) hold(p []byte) (bool, error) {
	cw.implicitHeader()
	if cw.state != stateWaiting {
		return false, nil
	}
	held := cw.buffered()
	if cw.hdr.declared >= 0 && int64(len(held)+len(p)) > cw.hdr.declared && !cw.head {
		return false, http.ErrContentLength
	}
	if len(held)+len(p) > cw.m.buffers.Size() {
		return false, cw.advance(atOverflow, p)
	}
	if cw.buf == nil {
		cw.buf = cw.getBuffer()
	}
	*cw.buf = append(*cw.buf, p...)
	if cw.need == needBytes && len(*cw.buf) >= sniffLen {
		if err := cw.advance(atWrite, nil); err != nil {
			return false, err
		}
	}
	return true, nil
}

// pass passes p on through the committed path.
func (cw *responseWriter) pass(p []byte) (int, error) {
	if cw.teeing != 0 && (cw.state == statePlain || cw.state == stateEncoding || cw.state == stateDiscarding) {
		cw.tee(p) // a body a hook wants: one to remember as a dictionary
	}
	switch cw.state {
	case statePlain:
		return (*wire)(cw).Write(p)
	case stateEncoding:
		if cw.hdr.declared >= 0 && cw.written+int64(len(p)) > cw.hdr.declared && !cw.head {
			return 0, http.ErrContentLength
		}
		t0 := cw.clock()
		n, err := cw.enc.Write(p)
		cw.spent(t0)
		cw.written += int64(n)
		return n, err
	case stateDiscarding:
		// The stored encoding went out; the body still counts as the
		// plain bytes sent, and still feeds a dictionary being kept.
		cw.written += int64(len(p))
		return len(p), nil
	case stateHijacked:
		return 0, http.ErrHijacked
	case stateFinished:
		return 0, errFinished
	case stateHandedBack:
		return cw.w.Write(p)
	}
	// stateSent: a whole body goes out only as the handler returns, and
	// finish runs under the slot's lock until the state is stateFinished,
	// so no write from outside sees it; answer as for a finished response.
	return 0, errFinished
}

// sniffLen is how many bytes [http.DetectContentType] considers.
const sniffLen = 512

// buffered returns the bytes held back so far.
func (cw *responseWriter) buffered() []byte {
	if cw.buf == nil {
		return nil
	}
	return *cw.buf
}

// advance asks decide for a verdict at event ev and commits to it unless
// it is to wait. next is the write that did not fit in the buffer, if any:
// it is sniffed when nothing was buffered before it.
func (cw *responseWriter) advance(ev event, next []byte) error {
	h := cw.w.Header()
	if cw.after != nil && cw.after.snapshot != nil {
		cw.restoreHeader(h)
		cw.readHeader(h)
	} else if ev == atEnd && len(h) != cw.hdr.keys {
		// Keys added after the status count only as prefixed trailers.
		cw.hdr.trailers = cw.hdr.trailers || hasPrefixedTrailers(h)
	}
	f := facts{
		responseFields: cw.hdr, status: cw.status, buffered: len(cw.buffered()), event: ev,
		head: cw.head, ranged: cw.ranged, offered: cw.offer != nil,
	}
	if !f.typed && ev != atHeader {
		// As net/http, sniff up to 512 bytes: what was held back, then
		// the start of the write that did not fit.
		sniff := cw.buffered()
		var joined [sniffLen]byte
		if len(sniff) < sniffLen && len(next) > 0 {
			n := copy(joined[:], sniff)
			n += copy(joined[n:], next)
			sniff = joined[:n]
		}
		if len(sniff) > 0 {
			// net/http does not sniff once Content-Encoding is set, so
			// the plain bytes are sniffed here, before any encoded byte.
			f.contentType, f.typed, f.sniffed = http.DetectContentType(sniff), true, true
			f.eligible = cw.matchType(f.contentType)
		}
	}
	v, why, need := cw.m.decide(&f)
	if v == wait {
		cw.need = need
		return nil
	}
	return cw.commit(v, why, h, &f)
}

// commit makes the header edits that go with the verdict, sends the header,
// and sends what was held back: the whole body when the handler has
// returned, otherwise the start of a stream that later writes continue.
func (cw *responseWriter) commit(v verdict, why Reason, h http.Header, f *facts) error {
	if f.sniffed {
		h["Content-Type"] = []string{f.contentType}
	}
	for i, k := range cw.hooks[:cw.nhooks] {
		if k.committed(cw, h, *f) { // the dictionaries': Vary, Use-As-Dictionary, Link
			cw.teeing |= 1 << i
		}
	}
	if v == sendEncoded && cw.offer == nil {
		// A hook dropped a delta and nothing else was acceptable.
		f.offered = false
		v, why, _ = cw.m.decide(f)
	}
	if _, ok := h["Content-Type"]; ok && len(h) == 1 {
		cw.onlyContentType = true
	}
	if cw.m.variesWith(why, f, h) {
		cw.addVary(h)
	}
	if f.status == http.StatusNotModified && cw.offer != nil {
		notModifiedETag(h, cw.offer.coding, cw.req.Header["If-None-Match"], cw.m.types)
	}
	body := cw.buffered()
	whole := f.event == atEnd && !f.trailers
	if v == sendEncoded && whole {
		if cw.sendWhole(h, f, body) {
			return nil
		}
		_, why, _ = cw.m.decide(f) // what the attempt found is a fact: decide names it
	} else if v == sendEncoded {
		o := cw.offer
		// A stream the cache knows by its strong ETag goes out stored;
		// the handler's body is then discarded (cache.go).
		stored, fill := cw.m.cachedStream(cw.req, o, h, f, (*wire)(cw))
		if stored != nil {
			cw.fromCache = true
			cw.sendEncodedBody(h, o.coding, stored, stateDiscarding)
			return cw.sendHeld() // counted and teed like the rest of the body
		}
		var dst io.Writer = (*wire)(cw)
		if fill != nil {
			dst = fill // tees the encoding into the cache
		}
		enc, err := cw.slot.encoder(o, dst)
		if err == nil {
			if fill != nil {
				cw.attach(fill)
			}
			cw.enc = enc
			cw.setEncoded(h, o.coding)
			// delete, not Del: the key is canonical, and Del would
			// canonicalise it again on every response.
			delete(h, "Content-Length")
			cw.state = stateEncoding
			cw.sendHeader(h)
			return cw.sendHeld()
		}
		fill.drop()
		f.noEncoder = true
		_, why, _ = cw.m.decide(f)
	}
	cw.why = why
	if whole && f.declared < 0 && len(body) > 0 && bodyAllowed(f.status) {
		cw.setLength(h, len(body))
	}
	cw.state = statePlain
	cw.sendHeader(h)
	return cw.sendHeld()
}

// sendHeld sends what was held back down the path the verdict chose: it
// calls pass, never write, so that the flow from a write through the
// verdict to the client goes one way and never back into hold.
func (cw *responseWriter) sendHeld() error {
	held := cw.held
	cw.held = nil
	if cw.buf == nil {
		return nil
	}
	var err error
	switch b := *cw.buf; {
	case len(b) > 0 && held != nil && cw.state == statePlain:
		// The one string a WriteString gave, to the underlying
		// writer's WriteString, as without squeeze.
		if cw.teeing != 0 {
			cw.tee(b)
		}
		var n int
		n, err = io.WriteString(cw.w, unsafe.String(held, len(b)))
		cw.sent += int64(n)
	case len(b) > 0:
		_, err = cw.pass(b)
	}
	cw.releaseBuffer()
	return err
}

// flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (cw *responseWriter) flush() error {
	if cw.state == stateWaiting {
		cw.implicitHeader()
	}
	switch cw.state {
	case stateWaiting:
		// A flushed stream's length is unknown, so the minimum size no
		// longer applies: compress whatever content is eligible.
		if err := cw.advance(atFlush, nil); err != nil {
			return err
		}
	case stateHijacked:
		return http.ErrHijacked
	case stateFinished:
		return errFinished
	}
	for _, k := range cw.hooks[:cw.nhooks] {
		k.flushed() // the fill: a flushed stream is not stored
	}
	if cw.state == stateEncoding {
		t0 := cw.clock()
		err := cw.enc.Flush()
		cw.spent(t0)
		if err != nil {
			return err
		}
	}
	// The direct cases spare the ResponseController allocation on every
	// flush of a stream; the controller handles Unwrap chains.
	switch f := cw.w.(type) {
	case interface{ FlushError() error }:
		return f.FlushError()
	case http.Flusher:
		f.Flush()
		return nil
	}
	return http.NewResponseController(cw.w).Flush()
}

// hijack hands the connection to the handler when the underlying writer
// supports it; when it does not (HTTP/2), nothing changes and the error
// matches [http.ErrNotSupported]. As in net/http, a status the handler
// chose, and the body it wrote, go out first; an encoded stream in progress
// is abandoned.
func (cw *responseWriter) hijack() (net.Conn, *bufio.ReadWriter, error) {
	if cw.state == stateFinished {
		return nil, nil, errFinished
	}
	hj := hijackerOf(cw.w)
	if hj == nil {
		return nil, nil, fmt.Errorf("squeeze: Hijack: %w", http.ErrNotSupported)
	}
	if cw.state == stateWaiting && cw.status != 0 {
		h := cw.w.Header()
		cw.restoreHeader(h)
		cw.state = statePlain
		cw.sendHeader(h)
		_ = cw.sendHeld()
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	cw.releaseEncoder()
	cw.releaseBuffer()
	cw.state = stateHijacked
	return conn, rw, nil
}

// hijackerOf finds the [http.Hijacker] behind w, following Unwrap as
// [http.ResponseController] does, or returns nil.
func hijackerOf(w http.ResponseWriter) http.Hijacker {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// holdFrom takes what src gives into the buffer while the
// verdict waits. A body that fills the buffer exactly is told from a longer
// one by reading one byte more: only a longer one commits to a stream. As
// with net/http's own ReadFrom, an empty src writes nothing: the status is
// set (200 unless WriteHeader came first) by the first byte, not the call.
func (cw *responseWriter) holdFrom(src io.Reader) (int64, error) {
	cw.held = nil // what src gives joins the buffer
	var total int64
	if cw.state == stateWaiting && cw.status == 0 {
		m, err := readSome(src, cw.first[:])
		if m == 0 {
			if err == io.EOF {
				err = nil
			}
			return 0, err
		}
		cw.implicitHeader()
		k, err := cw.write(cw.first[:m])
		total = int64(k)
		if err != nil || cw.state != stateWaiting {
			return total, err
		}
	}
	if cw.state == stateWaiting {
		cw.implicitHeader()
	}
	if cw.state != stateWaiting {
		return total, nil
	}
	n, full, err := cw.fillBuffer(src)
	total += int64(n)
	if err != nil || !full {
		return total, err
	}
	var one [1]byte
	m, err := readSome(src, one[:])
	if m == 0 {
		if err == io.EOF {
			err = nil // the body ended with the buffer full
		}
		return total, err
	}
	if err := cw.advance(atOverflow, one[:m]); err != nil {
		return total, err
	}
	k, err := cw.write(one[:m])
	return total + int64(k), err
}

// readSome reads into p until it gets a byte or an error, as io.ReadAtLeast
// does for one byte, giving up on a reader that keeps returning nothing.
func readSome(src io.Reader, p []byte) (int, error) {
	for range 100 {
		if n, err := src.Read(p); n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// fillBuffer reads from src into the buffer until it is full or src ends. It
// reports whether the buffer filled, in which case more may follow. A body
// that goes past its declared length is cut there and reported as
// [http.ErrContentLength]. Like io.Copy, it gives up on a reader that
// returns nothing 100 times in a row.
func (cw *responseWriter) fillBuffer(src io.Reader) (int, bool, error) {
	if cw.buf == nil {
		cw.buf = cw.getBuffer()
	}
	b := *cw.buf
	start := len(b)
	defer func() { *cw.buf = b }()
	for empty := 0; len(b) < cap(b); {
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if cw.hdr.declared >= 0 && int64(len(b)) > cw.hdr.declared && !cw.head {
			b = b[:cw.hdr.declared]
			return len(b) - start, false, http.ErrContentLength
		}
		switch {
		case err == io.EOF:
			return len(b) - start, false, nil
		case err != nil:
			return len(b) - start, false, err
		case n > 0:
			empty = 0
		default:
			if empty++; empty == 100 {
				return len(b) - start, false, io.ErrNoProgress
			}
		}
	}
	return len(b) - start, true, nil
}

// copyThrough copies src to dst through a buffer from buffers rather than
// the 32 KiB one io.Copy would allocate.
func copyThrough(buffers *pool.Buffers, dst io.Writer, src io.Reader) (int64, error) {
	buf := buffers.Get()
	defer buffers.Put(buf)
	return io.CopyBuffer(dst, src, (*buf)[:cap(*buf)])
}

// finish completes the response when the handler returns. After a panic or
// runtime.Goexit (completed false) nothing more is sent, and neither is the
// end of a stream whose length differs from the one the handler declared:
// the encoded stream is left without its end marker, so the client cannot
// take the truncated body for a whole one.
func (cw *responseWriter) finish(completed bool) {
	if !completed {
		cw.releaseEncoder()
		cw.untouched = cw.state == stateWaiting && cw.status == 0
	} else {
		if cw.state == stateWaiting && cw.status == 0 {
			cw.leaveUntouched()
		}
		if cw.state == stateWaiting {
			cw.implicitHeader()
		}
		if cw.state == stateWaiting {
			_ = cw.advance(atEnd, nil)
		}
		if cw.state == stateEncoding {
			cw.endStream()
		}
	}
	for _, k := range cw.hooks[:cw.nhooks] {
		k.ended(cw, completed)
	}
	if cw.buf != nil {
		cw.keepBuffer(cw.buf)
		cw.buf = nil
	}
	if cw.state != stateHijacked {
		if cw.m.observe != nil {
			cw.report.send(cw) // last: an observer that panics leaves no hook unended
		}
		cw.state = stateFinished
	}
}

// leaveUntouched makes the header edits of a response whose handler
// returned without choosing a status or writing a byte, decided as the
// empty 200 it would be (Vary, for one), and sends nothing: in net/http the
// implicit 200 is the server's, once the outermost handler has returned.
// Until then the response belongs to whoever writes next: a handler
// around the middleware, or one that writes through the writer the
// handler was given once it returned (echo's error handler, behind
// echo.WrapMiddleware), which close hands back the response for.
func (cw *responseWriter) leaveUntouched() {
	cw.untouched = true
	cw.status = http.StatusOK
	cw.readHeader(cw.w.Header())
	_ = cw.advance(atEnd, nil)
}

// endStream completes an encoded stream, or, when the body did not match
// its declared length, sends what was written without the stream's end, as
// net/http sends a short body: every decoder then reports it cut. Errors
// here mean the client went away; there is no one left to tell.
func (cw *responseWriter) endStream() {
	t0 := cw.clock()
	if cw.hdr.declared < 0 || cw.written == cw.hdr.declared || cw.head {
		cw.closed = cw.enc.Close() == nil
	} else {
		_ = cw.enc.Flush()
	}
	cw.spent(t0)
	cw.releaseEncoder()
}

func (cw *responseWriter) releaseEncoder() {
	if cw.enc != nil {
		cw.offer.encoders.Put(cw.enc)
		cw.enc = nil
	}
}

// releaseBuffer gives the held-back buffer to the pool: the response goes
// on as a stream, or the handler took the connection.
func (cw *responseWriter) releaseBuffer() {
	if cw.buf != nil {
		cw.m.buffers.Put(cw.buf)
		cw.buf = nil
	}
}

// getBuffer returns an empty buffer: one the slot kept, or one from the
// pool.
func (cw *responseWriter) getBuffer() *[]byte {
	for i, b := range cw.slot.spare {
		if b != nil {
			cw.slot.spare[i] = nil
			return b
		}
	}
	return cw.m.buffers.Get()
}

// keepBuffer empties b and keeps it in the slot for the next response, or
// gives it to the pool if the slot has two already.
func (cw *responseWriter) keepBuffer(b *[]byte) {
	for i, spare := range cw.slot.spare {
		if spare == nil {
			*b = (*b)[:0]
			cw.slot.spare[i] = b
			return
		}
	}
	cw.m.buffers.Put(b)
}

// wire is the response writer seen as the destination of the body bytes
// sent: encoders and the plain path write through it, and it counts what
// the underlying writer took in sent, for [Event].Out. A conversion of the
// per-response writer, it costs neither an allocation nor a field.
type wire responseWriter

func (c *wire) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sent += int64(n)
	return n, err
}

// clock returns the time now when an observer wants Elapsed, and the zero
// Time otherwise; spent adds the time since t0 to Elapsed.
func (cw *responseWriter) clock() time.Time {
	if cw.m.observe == nil {
		return time.Time{}
	}
	return time.Now()
}

func (cw *responseWriter) spent(t0 time.Time) {
	if !t0.IsZero() {
		cw.elapsed += time.Since(t0)
	}
}

// matchType reports whether ct is a content type to compress, answered
// from the slot's memo when it is the type matched last; it records the
// answer there.
func (cw *responseWriter) matchType(ct string) bool {
	s := cw.slot
	if ct == s.lastType && ct != "" {
		return s.lastEligible
	}
	ok := matchTypes(cw.m.types, ct)
	s.lastType, s.lastEligible = ct, ok
	return ok
}
