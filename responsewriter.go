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
// body then goes one way: out of the Cache (cachedWhole, cachedStream, or
// streamByContent once the stream held back ended equal to its entry's:
// stateComparing), through an encoder (sendWhole for a body that ended within the buffer, in
// responsewriter_send.go; a stream, teed by the cache's fill, otherwise),
// or plain (pass). Every byte reaches the client through wire. finish ends
// the response as the handler returns: each hook's ended, told how it
// ended (responseEnd), then the observer's reporter (observe.go).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/pool"
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
	// stateComparing holds a stream back, header and all, while its
	// bytes are those of the Cache's candidate (streamByContent): the
	// candidate's encoding goes out if the handler ends with them, and
	// otherwise unhold encodes the bytes compared so far and goes on as
	// stateEncoding.
	stateComparing
	// stateDiscarding means a stored encoding went out for a stream the
	// cache knew by its ETag, or a HEAD's header for a stream: the
	// handler's body is read and discarded.
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
	// the status (see restoreHeader), or marked a secret (secret.go): the
	// rare states share one pointer, so that the slot, which handBack
	// allocates, stays in its size class.
	after *afterStatus

	buf *[]byte
	enc *pool.Encoder
	out cappedBuffer

	// hooks are the features following the response (see responseHook):
	// the dictionaries, and the cache's fill of a stream it stores; the
	// first nhooks are set.
	hooks [2]responseHook
	// fill is the Cache's fill of a stream found by content, one of the
	// hooks, whose candidate the stream is compared with while the state
	// is stateComparing; nil otherwise.
	fill *cacheFill
	// sent counts the body bytes the underlying writer took (see wire);
	// elapsed is the time spent in the encoder, measured only when an
	// observer is set.
	sent    int64
	elapsed time.Duration

	// slot is the slot rw lives in, which keeps spare buffers and an
	// encoder. values holds the header values the response is given, in
	// its handlerWriter.
	slot   *slot
	values *headerValues
	// hashed is the hash of an encoded stream's plain bytes under
	// WithLengthHiding, which decides its padding at its end, and the
	// stored stream held for it (lengthhiding.go); nil otherwise.
	hashed *streamHash

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
	// encoded is set when the response went out in offer's coding (see
	// encodedAs).
	encoded bool
	// closed is set when an encoded stream ended whole, with its end
	// marker.
	closed bool
	state  writerState
	need   need
	why    Reason
	// unheldWhy is the Reason decide gave, at the commit, for a stream
	// held back as the Cache's candidate should no encoder be had when
	// the comparison is given up (unhold).
	unheldWhy Reason
	nhooks    uint8
	// teeing has bit i set while hooks[i] wants the plain body.
	teeing uint8
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
	// sec is the state of the secrets the handler marked (secret.go).
	sec *secrets
}

// start readies rw, zero in its slot s, for the response to r on w. The
// fields are set one by one: assigning a whole struct would copy it.
func (rw *responseWriter) start(m *Middleware, s *slot, w http.ResponseWriter, r *http.Request, rh *requestHeader) {
	rw.m, rw.slot = m, s
	rw.w, rw.req = w, r
	rw.hdr.declared = -1
	rw.head = r.Method == http.MethodHead
	rw.ranged = len(rh.ranges) > 0
	if !rw.ranged {
		if i := s.negotiate(rh.acceptEncoding, m.offers); i >= 0 {
			rw.offer = &m.offers[i]
		}
	}
	if m.dicts != nil {
		// A dictionary the client holds may replace the offer.
		o, hook := m.dicts.follow(r, rw.ranged)
		if o != nil {
			rw.offer = o
		}
		if hook != nil {
			rw.attach(hook)
		}
	}
}

// A responseHook is a feature that follows one response: the dictionaries
// (dictionary.go), a learned route's sampling, which wraps them
// (learned.go), and the Cache's fill of a stream it stores (cache.go).
// The writer calls it at fixed points with plain values and knows nothing
// else of it; the hook keeps its own state and sees nothing of the
// writer's. The values go by value: a pointer passed through the interface
// would escape, and cost an allocation per response.
type responseHook interface {
	// committed is called as the verdict is carried out, before the
	// header goes out, with the facts the verdict was decided on: the hook
	// may edit h, and reports whether it wants the plain body. A hook
	// attached then (the fill) is not called.
	committed(h http.Header, f facts) (wantsBody bool)
	// plain is given the plain body as it passes on after the verdict,
	// while the hook wants it (a whole body sent from the buffer is not
	// passed: see responseEnd.whole). It reports whether the hook wants more.
	plain(p []byte) (wantsMore bool)
	// flushed is called when the handler flushes.
	flushed()
	// ended is called once, when the response ends. The observer hears
	// after every hook.
	ended(end responseEnd)
}

// responseEnd is how a response ended, as its hooks hear it.
type responseEnd struct {
	// whole is the body when it went out whole from the buffer (wentWhole
	// set), which keeps it until every hook has heard; nil otherwise.
	whole []byte
	// declared is the Content-Length the handler declared, -1 for none.
	declared int64
	// completed is false when the handler panicked or called
	// runtime.Goexit.
	completed bool
	// wentWhole is set when the body went out whole from the buffer.
	wentWhole bool
	// closed is set when an encoded stream ended whole, with its end
	// marker.
	closed bool
	// lengthMismatch is set when the body did not match its declared
	// length (ReasonLength).
	lengthMismatch bool
	// sent is the body bytes the underlying writer took: the encoded
	// bytes of an encoded response.
	sent int64
	// secret is set when the handler marked a secret (secret.go): no hook
	// may keep the body, as a dictionary, a stored encoding or a sample.
	secret bool
	// trailers is set when the response has trailers, those the header
	// declared or prefixed keys the handler set up to its end.
	trailers bool
}

// attach makes k follow the response.
func (rw *responseWriter) attach(k responseHook) {
	rw.hooks[rw.nhooks] = k
	rw.nhooks++
}

// tee gives p, plain body bytes past the verdict, to the hooks that want
// them, and stops giving to each once it wants no more.
func (rw *responseWriter) tee(p []byte) {
	for i, k := range rw.hooks[:rw.nhooks] {
		if bit := uint8(1) << i; rw.teeing&bit != 0 && !k.plain(p) {
			rw.teeing &^= bit
		}
	}
}

// end returns how the response ended, for its hooks: completed is false
// when the handler panicked or called runtime.Goexit.
func (rw *responseWriter) end(completed bool) responseEnd {
	e := responseEnd{
		declared:       rw.hdr.declared,
		completed:      completed,
		wentWhole:      rw.state == stateSent,
		closed:         rw.closed,
		lengthMismatch: rw.why == ReasonLength,
		sent:           rw.sent,
		secret:         rw.marks() != nil,
		trailers:       rw.hdr.trailers,
	}
	if h := rw.w.Header(); !e.wentWhole && !e.trailers && len(h) != rw.hdr.keys {
		// A stream's keys added after the status count only as prefixed
		// trailers (a whole body's were read at its end, by advance).
		e.trailers = hasPrefixedTrailers(h)
	}
	if e.wentWhole {
		e.whole = rw.buffered()
	}
	return e
}

// encodedAs returns the coding the response went out in, "" for none: the
// observer reads it rather than the Content-Encoding value, which the
// header map's owner may rewrite. Every encoded response goes out in the
// offer's coding (setEncoded), a fallback from a delta once it is the
// offer.
func (rw *responseWriter) encodedAs() string {
	if !rw.encoded {
		return ""
	}
	return rw.offer.coding
}

// coding returns the negotiated coding, or "" for identity.
func (rw *responseWriter) coding() string {
	if rw.offer == nil {
		return ""
	}
	return rw.offer.coding
}

// header returns the header map of the underlying writer, and keeps a
// snapshot of it if the status was chosen already (see restoreHeader).
func (rw *responseWriter) header() http.Header {
	h := rw.w.Header()
	if (rw.state == stateWaiting || rw.state == stateComparing) && rw.status != 0 {
		if rw.after == nil {
			rw.after = &afterStatus{}
		}
		if rw.after.snapshot == nil {
			rw.after.snapshot = h.Clone()
		}
	}
	return h
}

// writeHeader records the final status and decides what it can: the
// header goes out once the verdict is known. 1xx responses go out at once.
func (rw *responseWriter) writeHeader(code int) {
	if rw.state == stateHandedBack {
		rw.w.WriteHeader(code)
		return
	}
	if rw.state != stateWaiting || rw.status != 0 {
		// The first final status wins, as in net/http; 1xx after it are
		// dropped rather than sent in the middle of a body.
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		rw.w.WriteHeader(code)
		return
	}
	rw.status = code
	rw.readHeader(rw.w.Header())
	_ = rw.advance(atHeader, nil)
}

// readHeader reads the fields decide needs from h into hdr, and matches
// the content type against the ones to compress.
func (rw *responseWriter) readHeader(h http.Header) {
	rw.hdr = readFields(h)
	rw.hdr.eligible = rw.hdr.typed && rw.matchType(rw.hdr.contentType)
}

// implicitHeader is the implicit WriteHeader(200) of a body written
// without one.
func (rw *responseWriter) implicitHeader() {
	if rw.status == 0 {
		rw.writeHeader(http.StatusOK)
	}
}

// write holds p back while the verdict waits, then passes the body on.
func (rw *responseWriter) write(p []byte) (int, error) {
	if rw.state == stateWaiting {
		rw.held = nil // the buffer holds more than one string now
		held, err := rw.hold(p)
		if err != nil {
			return 0, err
		}
		if held {
			return len(p), nil
		}
	}
	return rw.pass(p)
}

// writeString is write for a string, which it does not copy: the held
// back buffer, the dictionary being collected and the encoders copy or
// only read its bytes, and a plain body goes to the underlying writer's
// own WriteString (io.WriteString), which is given the string itself: a
// body held back whole as one string too (see held and sendHeld).
func (rw *responseWriter) writeString(s string) (int, error) {
	p := unsafe.Slice(unsafe.StringData(s), len(s))
	if rw.state == stateWaiting {
		rw.held = nil
		if len(rw.buffered()) == 0 && len(s) > 0 {
			rw.held = unsafe.StringData(s)
		}
		held, err := rw.hold(p)
		if err != nil {
			return 0, err
		}
		if held {
			return len(s), nil
		}
	}
	switch rw.state {
	case statePlain:
		if rw.teeing != 0 {
			rw.tee(p)
		}
		n, err := io.WriteString(rw.w, s)
		rw.sent += int64(n)
		return n, err
	case stateHandedBack:
		return io.WriteString(rw.w, s)
	}
	return rw.pass(p)
}

// hold is the part of a write made while the verdict waits: it holds p
// back and reports true when p fits in the buffer, and otherwise asks for
// the verdict that p must then go through. On an error, nothing of p was
// taken.
func (rw *responseWriter) hold(p []byte) (bool, error) {
	rw.implicitHeader()
	if rw.state != stateWaiting {
		return false, nil
	}
	held := rw.buffered()
	if rw.hdr.declared >= 0 && int64(len(held)+len(p)) > rw.hdr.declared && !rw.head {
		return false, http.ErrContentLength
	}
	if len(held)+len(p) > rw.m.buffers.Size() {
		return false, rw.advance(atOverflow, p)
	}
	if rw.buf == nil {
		rw.buf = rw.getBuffer()
	}
	*rw.buf = append(*rw.buf, p...)
	if rw.need == needBytes && len(*rw.buf) >= sniffLen {
		if err := rw.advance(atWrite, nil); err != nil {
			return false, err
		}
	}
	return true, nil
}

// pass passes p on through the committed path.
func (rw *responseWriter) pass(p []byte) (int, error) {
	if rw.state == stateComparing {
		if rw.compare(p) {
			if rw.teeing != 0 {
				rw.tee(p)
			}
			rw.written += int64(len(p))
			return len(p), nil
		}
		if err := rw.unhold(); err != nil {
			return 0, err
		}
	}
	if rw.teeing != 0 && (rw.state == statePlain || rw.state == stateEncoding || rw.state == stateDiscarding) {
		rw.tee(p) // a body a hook wants: one to remember as a dictionary
	}
	if rw.hashed != nil && (rw.state == stateEncoding || rw.state == stateDiscarding) {
		_, _ = rw.hashed.h.Write(p) // the stream's padding depends on every byte
	}
	switch rw.state {
	case statePlain:
		return (*wire)(rw).Write(p)
	case stateEncoding:
		if rw.marks() != nil {
			return rw.feedStream(p, nil)
		}
		if rw.hdr.declared >= 0 && rw.written+int64(len(p)) > rw.hdr.declared && !rw.head {
			return 0, http.ErrContentLength
		}
		t0 := rw.clock()
		n, err := rw.enc.Write(p)
		rw.spent(t0)
		rw.written += int64(n)
		return n, err
	case stateDiscarding:
		// The stored encoding went out; the body still counts as the
		// plain bytes sent, and still feeds a dictionary being kept.
		rw.written += int64(len(p))
		return len(p), nil
	case stateHijacked:
		return 0, http.ErrHijacked
	case stateFinished:
		return 0, errFinished
	case stateHandedBack:
		return rw.w.Write(p)
	}
	// stateSent: a whole body goes out only as the handler returns, and
	// finish runs under the slot's lock until the state is stateFinished,
	// so no write from outside sees it; answer as for a finished response.
	return 0, errFinished
}

// sniffLen is how many bytes [http.DetectContentType] considers.
const sniffLen = 512

// buffered returns the bytes held back so far.
func (rw *responseWriter) buffered() []byte {
	if rw.buf == nil {
		return nil
	}
	return *rw.buf
}

// advance asks decide for a verdict at event ev and commits to it unless
// it is to wait. next is the write that did not fit in the buffer, if any:
// it is sniffed when nothing was buffered before it.
func (rw *responseWriter) advance(ev event, next []byte) error {
	h := rw.w.Header()
	if rw.after != nil && rw.after.snapshot != nil {
		rw.restoreHeader(h)
		rw.readHeader(h)
	} else if ev == atEnd && len(h) != rw.hdr.keys {
		// Keys added after the status count only as prefixed trailers.
		rw.hdr.trailers = rw.hdr.trailers || hasPrefixedTrailers(h)
	}
	if o := rw.offer; o != nil && o.dict != nil && !deltaAllowed(rw.req.Header, h, o.dict) {
		// A response that may not be shared is no delta against a
		// remembered dictionary, nor one that the page of another
		// origin of the site that asked may not read: it goes out as
		// the client's Accept-Encoding allows without one
		// (dictionary.go).
		rw.offer = rw.withoutDictionary()
	}
	if rw.marks() != nil {
		// A secret goes out only in a coding that isolates it (secret.go).
		rw.offer = rw.secretOffer()
	}
	f := facts{
		responseFields: rw.hdr, status: rw.status, buffered: len(rw.buffered()), event: ev,
		head: rw.head, ranged: rw.ranged, offered: rw.offer != nil, secret: rw.marks() != nil,
	}
	if !f.typed && ev != atHeader {
		// As net/http, sniff up to 512 bytes: what was held back, then
		// the start of the write that did not fit.
		sniff := rw.buffered()
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
			f.eligible = rw.matchType(f.contentType)
		}
	}
	v, why, need := rw.m.decide(&f)
	if v == wait {
		rw.need = need
		return nil
	}
	return rw.commit(v, why, h, &f)
}

// commit makes the header edits that go with the verdict, sends the header,
// and sends what was held back: the whole body when the handler has
// returned, otherwise the start of a stream that later writes continue.
func (rw *responseWriter) commit(v verdict, why Reason, h http.Header, f *facts) error {
	if f.sniffed {
		h["Content-Type"] = []string{f.contentType}
	}
	for i, k := range rw.hooks[:rw.nhooks] {
		if k.committed(h, *f) { // the dictionaries': Vary, Use-As-Dictionary, Link
			rw.teeing |= 1 << i
		}
	}
	if _, ok := h["Content-Type"]; ok && len(h) == 1 {
		rw.onlyContentType = true
	}
	if rw.m.variesWith(why, f, h) {
		rw.addVary(h)
	}
	if f.status == http.StatusNotModified && rw.offer != nil {
		notModifiedETag(h, rw.offer.coding, rw.req.Header["If-None-Match"], rw.m.types)
	}
	body := rw.buffered()
	whole := f.event == atEnd && !f.trailers
	if v == sendEncoded && whole {
		if rw.sendWhole(h, f, body) {
			return nil
		}
		_, why, _ = rw.m.decide(f) // what the attempt found is a fact: decide names it
	} else if v == sendEncoded && rw.head {
		// A HEAD's stream: the GET's header, which has no length, and no
		// body, not even an encoded empty one (RFC 9110 §9.3.2): what the
		// handler writes is discarded unencoded.
		rw.setEncoded(h, rw.offer.coding)
		delete(h, "Content-Length")
		rw.state = stateDiscarding
		rw.sendHeader(h)
		return rw.sendHeld()
	} else if v == sendEncoded {
		o := rw.offer
		// A stream the cache knows by its strong ETag goes out stored;
		// the handler's body is then discarded (cache.go).
		stored, fill, looked := rw.m.cachedStream(rw.req, o, h, f, (*wire)(rw))
		if stored != nil && rw.m.hiding != nil {
			rw.holdHit(h, stored)
			return rw.sendHeld() // hashed, counted and teed like the rest
		}
		if stored != nil {
			rw.fromCache = true
			rw.sendEncodedBody(h, o.coding, stored, stateDiscarding, -1)
			return rw.sendHeld() // counted and teed like the rest of the body
		}
		if !looked {
			// A stream found by content: held back while its bytes
			// are the candidate's, or stored for the next response.
			if fill = rw.m.streamByContent(rw.req, o, h, f, rw.hdr.declared); fill != nil {
				fill.dst = (*wire)(rw)
				rw.fill = fill
				if fill.cand != nil {
					rw.attach(fill)
					f.noEncoder = true
					_, rw.unheldWhy, _ = rw.m.decide(f)
					rw.state = stateComparing
					return rw.sendHeld()
				}
			}
		}
		var dst io.Writer = (*wire)(rw)
		if fill != nil {
			dst = fill // tees the encoding into the cache
		}
		enc, err := rw.slot.encoder(o, dst)
		if err == nil {
			if rw.m.hiding != nil {
				rw.hashed = rw.m.hiding.startStream()
			}
			if fill != nil {
				rw.attach(fill)
				if fill.byContent && fill.leading {
					rw.teeing |= 1 << (rw.nhooks - 1) // its plain bytes too
				}
			}
			rw.enc = enc
			rw.setEncoded(h, o.coding)
			// delete, not Del: the key is canonical, and Del would
			// canonicalise it again on every response.
			delete(h, "Content-Length")
			rw.state = stateEncoding
			rw.sendHeader(h)
			return rw.sendHeld()
		}
		fill.drop()
		f.noEncoder = true
		_, why, _ = rw.m.decide(f)
	}
	rw.why = why
	if whole && f.declared < 0 && len(body) > 0 && bodyAllowed(f.status) {
		rw.setLength(h, len(body))
	}
	rw.state = statePlain
	rw.sendHeader(h)
	return rw.sendHeld()
}

// sendHeld sends what was held back down the path the verdict chose: it
// calls pass, never write, so that the flow from a write through the
// verdict to the client goes one way and never back into hold.
func (rw *responseWriter) sendHeld() error {
	held := rw.held
	rw.held = nil
	if rw.buf == nil {
		return nil
	}
	var err error
	switch b := *rw.buf; {
	case len(b) > 0 && held != nil && rw.state == statePlain:
		// The one string a WriteString gave, to the underlying
		// writer's WriteString, as without squeeze.
		if rw.teeing != 0 {
			rw.tee(b)
		}
		var n int
		n, err = io.WriteString(rw.w, unsafe.String(held, len(b)))
		rw.sent += int64(n)
	case len(b) > 0:
		_, err = rw.passHeld(b)
	}
	rw.releaseBuffer()
	return err
}

// flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (rw *responseWriter) flush() error {
	if rw.state == stateWaiting {
		rw.implicitHeader()
	}
	switch rw.state {
	case stateWaiting:
		// A flushed stream's length is unknown, so the minimum size no
		// longer applies: compress whatever content is eligible.
		if err := rw.advance(atFlush, nil); err != nil {
			return err
		}
	case stateHijacked:
		return http.ErrHijacked
	case stateFinished:
		return errFinished
	case stateComparing:
		if err := rw.unhold(); err != nil { // a flush sends what came so far
			return err
		}
	}
	for _, k := range rw.hooks[:rw.nhooks] {
		k.flushed() // the fill: a flushed stream is not stored
	}
	if rw.state == stateDiscarding {
		rw.sendHit() // a held stored stream goes out with what came so far
	}
	if rw.state == stateEncoding {
		t0 := rw.clock()
		err := rw.sendCarry(false)
		if err == nil {
			err = rw.enc.Flush()
		}
		rw.spent(t0)
		if err != nil {
			return err
		}
	}
	// The direct cases spare the ResponseController allocation on every
	// flush of a stream; the controller handles Unwrap chains.
	switch f := rw.w.(type) {
	case interface{ FlushError() error }:
		return f.FlushError()
	case http.Flusher:
		f.Flush()
		return nil
	}
	return http.NewResponseController(rw.w).Flush()
}

// hijack hands the connection to the handler when the underlying writer
// supports it; when it does not (HTTP/2), nothing changes and the error
// matches [http.ErrNotSupported]. As in net/http, a status the handler
// chose, and the body it wrote, go out first; an encoded stream in progress
// is abandoned.
func (rw *responseWriter) hijack() (net.Conn, *bufio.ReadWriter, error) {
	if rw.state == stateFinished {
		return nil, nil, errFinished
	}
	hj := hijackerOf(rw.w)
	if hj == nil {
		return nil, nil, fmt.Errorf("squeeze: Hijack: %w", http.ErrNotSupported)
	}
	if rw.state == stateWaiting && rw.status != 0 {
		h := rw.w.Header()
		rw.restoreHeader(h)
		rw.state = statePlain
		rw.sendHeader(h)
		_ = rw.sendHeld()
	}
	if rw.state == stateComparing {
		_ = rw.unhold() // as an encoded stream in progress
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	rw.releaseEncoder()
	rw.releaseBuffer()
	rw.state = stateHijacked
	return conn, brw, nil
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

// holdHit answers a stream under WithLengthHiding with stored, its
// encoding the Cache keeps, as a stream: the header now, without a length,
// and the stored bytes with their padding once the handler's body, which
// decides it, has ended (sendHit); the body is hashed and discarded.
func (rw *responseWriter) holdHit(h http.Header, stored []byte) {
	rw.fromCache = true
	rw.hashed = rw.m.hiding.startStream()
	rw.hashed.hit = stored
	rw.setEncoded(h, rw.offer.coding)
	delete(h, "Content-Length")
	rw.state = stateDiscarding
	rw.sendHeader(h)
}

// sendHit sends the stored stream holdHit held, if any, padded by the
// plain bytes the handler wrote so far.
func (rw *responseWriter) sendHit() {
	s := rw.hashed
	if s == nil || s.hit == nil {
		return
	}
	stored := s.hit
	s.hit = nil
	l := rw.m.hiding
	pad := l.bodyPadding(rw.offer.coding, stored, -1, l.amountOf(s), true)
	rw.sendBody(stored, pad)
}

// wire is the response writer seen as the destination of the body bytes
// sent: encoders and the plain path write through it, and it counts what
// the underlying writer took in sent, for [ResponseInfo].Out. A conversion of the
// per-response writer, it costs neither an allocation nor a field.
type wire responseWriter

// Write sends p to the underlying writer and counts what it took in sent.
// A HEAD's body is dropped: its header says what the GET's would, and
// nothing follows it (RFC 9110 §9.3.2).
func (c *wire) Write(p []byte) (int, error) {
	if c.head {
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.sent += int64(n)
	return n, err
}

// clock returns the time now when an observer wants Elapsed, and the zero
// Time otherwise; spent adds the time since t0 to Elapsed.
func (rw *responseWriter) clock() time.Time {
	if rw.m.observe == nil {
		return time.Time{}
	}
	return time.Now()
}

func (rw *responseWriter) spent(t0 time.Time) {
	if !t0.IsZero() {
		rw.elapsed += time.Since(t0)
	}
}

// matchType reports whether ct is a content type to compress, answered
// from the slot's memo when it is the type matched last; it records the
// answer there.
func (rw *responseWriter) matchType(ct string) bool {
	s := rw.slot
	if ct == s.lastType && ct != "" {
		return s.lastEligible
	}
	ok := matchTypes(rw.m.types, ct)
	s.lastType, s.lastEligible = ct, ok
	return ok
}
