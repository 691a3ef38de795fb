// Package squeeze is [net/http] middleware that compresses responses with
// zstd, br or gzip, negotiated per RFC 9110, and decodes compressed request
// bodies with hard limits against decompression bombs.
//
// A [Middleware] holds back the first bytes of each response (up to
// [WithBufferSize]) to decide whether compressing is worth it: bodies below
// [WithMinSize], content types outside [WithContentTypes], bodiless statuses,
// ranges, already-encoded bodies and Cache-Control: no-transform go out
// unchanged. Every such reason is a case of one decision, which an [Event]
// reports as its [Reason]. A body
// that may be encoded and that ends within the buffer, or whose declared
// Content-Length fits in it, is sent in one piece with a Content-Length, or
// as it is when encoding would not make it smaller; a longer one, or one the
// handler flushes, is streamed. A body that goes out unchanged whatever its
// length (the client accepts no offered coding, the type is not one to
// compress, ...) is not held back: it passes through as the handler writes
// it, and net/http frames it as it would without squeeze.
// Encoders and buffers come from pools built by [New], one per coding and
// level, and go back, reset, when the response ends.
package squeeze

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Middleware compresses responses and decodes request bodies. It is safe for
// concurrent use; build it once with [New] and share it. The zero Middleware
// behaves as one from New with no options.
type Middleware struct {
	offers   []offer
	minSize  int
	buffers  *pool.Buffers
	types    []typePattern
	decoding decoding
	// dicts is nil unless dictionaries are configured (dictionary.go).
	dicts   *dictStore
	observe func(Event) // WithObserver; nil when unset
	// cache, if any, keeps encoded bodies (cache.go).
	cache *Cache
	// trustETags serves streams from the cache by their ETags
	// (WithTrustedETags).
	trustETags bool
	// slots pools the per-response state (handle.go).
	slots sync.Pool
	// dotfiles is WithFileServerDotfiles (fileserver.go).
	dotfiles bool
	// shared is the store of WithSharedStore, nil without one (shared.go).
	shared *shared
}

// New returns a [Middleware] configured by opts, or an error naming the
// first invalid option.
func New(opts ...Option) (*Middleware, error) {
	c := config{
		encodings:           DefaultEncodings(),
		levels:              map[string]int{},
		minSize:             DefaultMinSize,
		bufferSize:          DefaultBufferSize,
		contentTypes:        DefaultContentTypes(),
		maxDecompressedSize: DefaultMaxDecompressedSize,
		dictCodings:         []string{DCZ, DCB},
		dictStoreSize:       DefaultDictionaryStoreSize,
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("squeeze: New: option %d of %d is nil", i+1, len(opts))
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	m := &Middleware{
		minSize:  c.minSize,
		types:    compileTypesExcept(c.contentTypes, c.exceptTypes),
		observe:  c.observe,
		cache:    c.cache,
		dotfiles: c.dotfiles,
		shared:   newShared(&c, c.observe),
	}
	if c.trustETags {
		if c.cache == nil {
			return nil, errors.New("squeeze: WithTrustedETags needs WithCache: without a Cache there is nothing to serve by ETag")
		}
		m.trustETags = true
	}
	for _, coding := range writers.Codings() { // a fixed order: the same error every time
		if level, ok := c.levels[coding]; ok && !slices.Contains(c.encodings, coding) {
			return nil, notOfferedError(coding, level, c.encodings)
		}
	}
	for _, coding := range c.encodings {
		encoders, err := pool.NewEncoders(coding, levelOf(&c, coding))
		if err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
		m.offers = append(m.offers, offer{coding: coding, encoders: encoders})
	}
	var err error
	if m.dicts, err = newDictStore(&c, levelOf(&c, Zstd), levelOf(&c, Brotli)); err != nil {
		return nil, err
	}
	if m.dicts != nil {
		m.dicts.shared = m.shared
	}
	bufferSize := max(c.bufferSize, c.minSize)
	if m.buffers, err = pool.NewBuffers(bufferSize); err != nil {
		return nil, fmt.Errorf("squeeze: %w", err)
	}
	if m.decoding, err = newDecoding(&c); err != nil {
		return nil, err
	}
	return m, nil
}

// levelOf returns the level configured for coding, or its default.
func levelOf(c *config, coding string) int {
	if level, ok := c.levels[coding]; ok {
		return level
	}
	r, _ := writers.Levels(coding)
	return r.Default
}

// MustNew is like [New] but panics if an option is invalid. It suits
// package-level variables.
func MustNew(opts ...Option) *Middleware {
	m, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return m
}

var defaultMiddleware = sync.OnceValue(func() *Middleware { return MustNew() })

// Handler returns next wrapped by a [Middleware] with the default options.
// It suits chi's r.Use and any func([http.Handler]) [http.Handler] chain.
func Handler(next http.Handler) http.Handler { return defaultMiddleware().Handler(next) }

// Handler returns next wrapped by the middleware: request bodies sent with
// a Content-Encoding are decoded, and responses are compressed as the
// client's Accept-Encoding and the response allow. The zero Middleware is
// usable and behaves as one from New with no options.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if m.buffers == nil {
		m = defaultMiddleware()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := readRequest(r.Header)
		r, release, ok := m.decodeRequest(w, r, q.contentEncoding)
		if !ok {
			return
		}
		if release != nil {
			defer release()
		}
		if isUpgrade(r, &q) {
			next.ServeHTTP(w, r)
			return
		}
		s, hw := m.open(w, r, &q)
		r = withPlainTags(r, q.ifNoneMatch, q.ifMatch, s.cw.coding(), m.offers)
		completed := false
		defer func() { m.close(s, hw, completed) }()
		if sd := m.dicts.standaloneFor(r); sd != nil {
			sd.ServeHTTP(hw, r) // a WithDictionary path: squeeze serves it
		} else {
			next.ServeHTTP(hw, r)
		}
		completed = true
	})
}

// requestFields are the request header fields the middleware reads on
// every request.
type requestFields struct {
	contentEncoding, upgrade, connection, ranges, acceptEncoding, ifNoneMatch, ifMatch []string
}

// smallHeader is the most keys a request header may have for readRequest
// to walk it rather than look its fields up: a Go client's request has
// three or four, a browser's a dozen or more.
const smallHeader = 8

// readRequest reads the fields the middleware needs from a request's
// header: in one pass over a small map, where seven look-ups, each hashing
// its key, would cost more; by look-up otherwise. Keys are canonical, as
// net/http makes them.
func readRequest(h http.Header) requestFields {
	var q requestFields
	if len(h) > smallHeader {
		q.contentEncoding, q.upgrade, q.connection = h["Content-Encoding"], h["Upgrade"], h["Connection"]
		q.ranges, q.acceptEncoding = h["Range"], h["Accept-Encoding"]
		q.ifNoneMatch, q.ifMatch = h["If-None-Match"], h["If-Match"]
		return q
	}
	for k, v := range h {
		switch k {
		case "Content-Encoding":
			q.contentEncoding = v
		case "Upgrade":
			q.upgrade = v
		case "Connection":
			q.connection = v
		case "Range":
			q.ranges = v
		case "Accept-Encoding":
			q.acceptEncoding = v
		case "If-None-Match":
			q.ifNoneMatch = v
		case "If-Match":
			q.ifMatch = v
		}
	}
	return q
}

// isUpgrade reports whether r asks to switch protocols (WebSocket, h2c) or
// to tunnel: the response stream then is not an HTTP body at all.
func isUpgrade(r *http.Request, q *requestFields) bool {
	if r.Method == http.MethodConnect {
		return true
	}
	if len(q.upgrade) == 0 {
		return false
	}
	return headerHasToken(q.connection, "upgrade")
}

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
	// first is where ReadFrom reads a body's first byte before the status
	// is set (a field, so that reading into it does not allocate).
	first [1]byte
	// written counts the body bytes fed to an encoder, so that a stream
	// that falls short of or exceeds hdr.declared can be told apart.
	written int64

	// offer is the negotiated coding (one of m.offers, or a dictionary
	// coding's offer), or nil for identity.
	offer *offer
	// ranged is set for requests with a Range header: the response stays
	// identity, since byte ranges refer to the plain bytes.
	ranged bool
	// head is set for HEAD requests, whose body the handler need not write.
	head bool
	// cached is set when the body went out from the cache; silent when a
	// FileServer behind the writer reports the response itself.
	cached, silent bool
	state          writerState
	need           need
	why            Reason

	// after is set when the handler asked for the header after choosing
	// the status (see restoreHeader).
	after *afterStatus

	buf *[]byte
	enc *pool.Encoder
	out cappedBuffer
	// storing, set while a stream is being stored in the cache, tees the
	// encoder's output (cache.go).
	storing *cacheFill

	// dict is the dictionary state of a response to a path that matches
	// a dictionary pattern (dictionary.go); nil on any other.
	dict *dictResponse
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
	// bare is set when the header held only Content-Type as the response
	// was committed, an API handler's commonest: there is no Vary, ETag
	// or Accept-Ranges to look up.
	bare bool
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
func (cw *responseWriter) start(m *Middleware, s *slot, w http.ResponseWriter, r *http.Request, q *requestFields) {
	cw.m, cw.slot = m, s
	cw.w, cw.req = w, r
	cw.hdr.declared = -1
	cw.head = r.Method == http.MethodHead
	cw.ranged = len(q.ranges) > 0
	if !cw.ranged {
		if i := s.negotiate(q.acceptEncoding, m.offers); i >= 0 {
			cw.offer = &m.offers[i]
		}
	}
	if m.dicts != nil {
		// A dictionary the client holds may replace the offer.
		cw.beginDictionary(r)
	}
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
	cw.hdr = cw.readFields(cw.w.Header())
	_ = cw.advance(atHeader, nil)
}

// begin is the implicit WriteHeader(200) of a body written without one.
func (cw *responseWriter) begin() {
	if cw.status == 0 {
		cw.writeHeader(http.StatusOK)
	}
}

// write holds p back while the verdict waits, then passes the body on.
func (cw *responseWriter) write(p []byte) (int, error) {
	if cw.state == stateWaiting {
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
// own WriteString (io.WriteString), which is given the string itself.
func (cw *responseWriter) writeString(s string) (int, error) {
	p := unsafe.Slice(unsafe.StringData(s), len(s))
	if cw.state == stateWaiting {
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
		if cw.remembering() {
			cw.teeDictionary(p)
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
	cw.begin()
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
	if cw.remembering() && (cw.state == statePlain || cw.state == stateEncoding || cw.state == stateDiscarding) {
		cw.teeDictionary(p) // a body to remember as a dictionary
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
		cw.hdr = cw.readFields(h)
	} else if ev == atEnd && len(h) != cw.hdr.keys {
		// Keys added after the status count only as prefixed trailers.
		cw.hdr.trailers = cw.hdr.trailers || hasPrefixedTrailers(h)
	}
	f := facts{responseFields: cw.hdr, status: cw.status, buffered: len(cw.buffered()), event: ev}
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
	v, why, need := cw.decide(&f)
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
	if cw.m.dicts != nil {
		cw.dictionaryHeaders(h, f) // Vary, Use-As-Dictionary, Link
	} else if _, ok := h["Content-Type"]; ok && len(h) == 1 {
		cw.bare = true
	}
	if cw.variesWith(why, f, h) {
		cw.addVary(h)
	}
	if f.status == http.StatusNotModified && cw.offer != nil {
		cw.notModifiedETag(h)
	}
	body := cw.buffered()
	whole := f.event == atEnd && !f.trailers
	if v == sendEncoded && whole {
		if why = cw.sendWhole(h, f, body); why == ReasonNone {
			return nil
		}
	} else if v == sendEncoded {
		o := cw.offer
		// A stream the cache knows by its strong ETag goes out stored;
		// the handler's body is then discarded (cache.go).
		if stored := cw.cachedStream(h, f); stored != nil {
			cw.cached = true
			cw.sendEncodedBody(h, o.coding, stored, stateDiscarding)
			return cw.writeHeld() // counted and teed like the rest of the body
		}
		enc, err := cw.slot.encoder(o, cw.streamTo())
		if err == nil {
			cw.enc = enc
			cw.setEncoded(h, o.coding)
			// delete, not Del: the key is canonical, and Del would
			// canonicalise it again on every response.
			delete(h, "Content-Length")
			cw.state = stateEncoding
			cw.sendHeader(h)
			return cw.writeHeld()
		}
		cw.storing.drop()
		why = ReasonNoEncoder
	}
	cw.why = why
	if whole && f.declared < 0 && len(body) > 0 && bodyAllowed(f.status) {
		cw.setLength(h, len(body))
	}
	cw.state = statePlain
	cw.sendHeader(h)
	return cw.writeHeld()
}

// writeHeld sends what was held back through the committed path.
func (cw *responseWriter) writeHeld() error {
	if cw.buf == nil {
		return nil
	}
	var err error
	if len(*cw.buf) > 0 {
		_, err = cw.write(*cw.buf)
	}
	cw.releaseBuffer()
	return err
}

// sendWhole encodes a body that ended within the buffer into a second
// pooled buffer no larger than the body, and sends it with its encoded
// Content-Length if it came out smaller. It reports whether it sent it. A
// HEAD handler's declared but unwritten body sends the encoded header
// without a length, which only the body could give (RFC 9110 §9.3.2).
// Unless it sent the body, it returns why not.
func (cw *responseWriter) sendWhole(h http.Header, f *facts, body []byte) Reason {
	o := cw.offer
	if len(body) == 0 && cw.head && cw.hdr.declared >= 2 {
		// The GET's body would have been long enough to encode: fewer
		// than two bytes never come out smaller.
		cw.setEncoded(h, o.coding)
		delete(h, "Content-Length")
		cw.state = stateSent
		cw.sendHeader(h)
		return ReasonNone
	}
	if len(body) < 2 {
		return ReasonNoGain
	}
	// The cache, if any, may hold this body's encoding; on a miss, key
	// says where to store it (cache.go).
	var key cacheKey
	stored, store := cw.cachedWhole(h, f, body, &key)
	if stored != nil {
		cw.cached = true
		cw.written = int64(len(body))
		cw.sendEncodedBody(h, o.coding, stored, stateSent)
		return ReasonNone
	}
	// Anything not smaller than the input is no gain: cap the output there
	// and let the encoder fail instead of growing the buffer. The output
	// goes to a second pooled buffer, not the free tail of the first:
	// measured, input and output 16 KiB apart in one buffer cost br and
	// gzip 3-5% at 16 KiB (loads and stores whose addresses alias, most
	// likely), more than the second buffer's Get and Put.
	outBuf := cw.getBuffer()
	defer cw.keepBuffer(outBuf)
	cw.out = cappedBuffer{b: (*outBuf)[: 0 : len(body)-1]}
	t0 := cw.clock()
	enc, err := cw.slot.encoder(o, &cw.out)
	if err != nil {
		cw.storeWhole(&key, store, body, nil)
		return ReasonNoEncoder
	}
	_, err = enc.Write(body)
	if err == nil {
		err = enc.Close()
	}
	cw.slot.keepEncoder(o, enc)
	cw.spent(t0)
	out := cw.out.b
	cw.out = cappedBuffer{}
	if err != nil {
		cw.storeWhole(&key, store, body, nil)
		return ReasonNoGain
	}
	cw.storeWhole(&key, store, body, out)
	cw.written = int64(len(body))
	cw.sendEncodedBody(h, o.coding, out, stateSent)
	return ReasonNone
}

// sendEncodedBody sends a whole encoded body, freshly encoded or stored,
// with its Content-Length, and moves to state.
func (cw *responseWriter) sendEncodedBody(h http.Header, coding string, out []byte, state writerState) {
	cw.setEncoded(h, coding)
	cw.setLength(h, len(out))
	cw.state = state
	cw.sendHeader(h)
	_, _ = (*wire)(cw).Write(out)
}

// setEncoded sets the headers every encoded response carries.
func (cw *responseWriter) setEncoded(h http.Header, coding string) {
	cw.encodedAs = coding
	cw.values.encoding[0] = coding
	h["Content-Encoding"] = cw.values.encoding[:]
	if cw.bare {
		return
	}
	// Byte ranges would refer to the encoded bytes, which differ from one
	// response to the next; RFC 9110 §14.1.2.
	delete(h, "Accept-Ranges")
	suffixETag(h, coding)
}

// restoreHeader undoes the changes the handler made to the header after it
// chose the status, as net/http ignores them. Trailers are set after the
// body by design: keys with [http.TrailerPrefix] stay, and the values of
// trailers declared in the Trailer field wait in late until sendHeader has
// sent the header without them.
func (cw *responseWriter) restoreHeader(h http.Header) {
	a := cw.after
	if a == nil || a.snapshot == nil {
		return
	}
	declared := a.snapshot["Trailer"]
	for k, v := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		if headerHasToken(declared, k) {
			if a.late == nil {
				a.late = http.Header{}
			}
			a.late[k] = v
		}
		if _, ok := a.snapshot[k]; !ok {
			delete(h, k)
		}
	}
	for k, v := range a.snapshot {
		h[k] = v
	}
	a.snapshot = nil
}

// sendHeader sends the status and the header, then puts back the declared
// trailers that restoreHeader held out, for net/http to send after the
// body.
func (cw *responseWriter) sendHeader(h http.Header) {
	if !cw.untouched {
		cw.w.WriteHeader(cw.status)
	}
	if cw.after != nil {
		for k, v := range cw.after.late {
			h[k] = v
		}
		cw.after.late = nil
	}
}

// flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (cw *responseWriter) flush() error {
	if cw.state == stateWaiting {
		cw.begin()
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
	if cw.state == stateEncoding {
		cw.storing.drop() // a flushed stream is not stored
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
		_ = cw.writeHeld()
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

// readHeld takes what src gives into the buffer while the
// verdict waits. A body that fills the buffer exactly is told from a longer
// one by reading one byte more: only a longer one commits to a stream. As
// with net/http's own ReadFrom, an empty src writes nothing: the status is
// set (200 unless WriteHeader came first) by the first byte, not the call.
func (cw *responseWriter) readHeld(src io.Reader) (int64, error) {
	if cw.state == stateWaiting && cw.status == 0 {
		m, err := readSome(src, cw.first[:])
		if m == 0 {
			if err == io.EOF {
				err = nil
			}
			return 0, err
		}
		cw.begin()
		k, err := cw.write(cw.first[:m])
		if err != nil || cw.state != stateWaiting {
			return int64(k), err
		}
		n, err := cw.readHeld(src)
		return int64(k) + n, err
	}
	if cw.state == stateWaiting {
		cw.begin()
	}
	if cw.state != stateWaiting {
		return 0, nil
	}
	n, full, err := cw.fill(src)
	if err != nil || !full {
		return int64(n), err
	}
	var one [1]byte
	m, err := readSome(src, one[:])
	if m == 0 {
		if err == io.EOF {
			err = nil // the body ended with the buffer full
		}
		return int64(n), err
	}
	if err := cw.advance(atOverflow, one[:m]); err != nil {
		return int64(n), err
	}
	k, err := cw.write(one[:m])
	return int64(n + k), err
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

// fill reads from src into the buffer until it is full or src ends. It
// reports whether the buffer filled, in which case more may follow. A body
// that goes past its declared length is cut there and reported as
// [http.ErrContentLength]. Like io.Copy, it gives up on a reader that
// returns nothing 100 times in a row.
func (cw *responseWriter) fill(src io.Reader) (int, bool, error) {
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
			cw.begin()
		}
		if cw.state == stateWaiting {
			_ = cw.advance(atEnd, nil)
		}
		if cw.state == stateEncoding {
			cw.endStream()
		}
		if cw.remembering() {
			cw.rememberDictionary()
		}
	}
	cw.endFill(completed)
	if cw.buf != nil {
		cw.keepBuffer(cw.buf)
		cw.buf = nil
	}
	if cw.state != stateHijacked {
		if cw.m.observe != nil {
			cw.report()
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
	cw.hdr = cw.readFields(cw.w.Header())
	_ = cw.advance(atEnd, nil)
}

// endStream completes an encoded stream, or, when the body did not match
// its declared length, sends what was written without the stream's end, as
// net/http sends a short body: every decoder then reports it cut. Errors
// here mean the client went away; there is no one left to tell.
func (cw *responseWriter) endStream() {
	t0 := cw.clock()
	if cw.hdr.declared < 0 || cw.written == cw.hdr.declared || cw.head {
		if err := cw.enc.Close(); err == nil && cw.storing != nil {
			cw.storing.closed = true // the stream ended whole: endFill stores it
		}
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

// errNoGain stops an encoder whose output would not be smaller than its
// input.
var errNoGain = errors.New("squeeze: encoded body would not be smaller")

// cappedBuffer collects encoder output up to the capacity of b.
type cappedBuffer struct{ b []byte }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if len(p) > cap(c.b)-len(c.b) {
		return 0, errNoGain
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// setLength sets Content-Length to n.
func (cw *responseWriter) setLength(h http.Header, n int) {
	cw.values.length[0] = cw.slot.lengthString(n)
	h["Content-Length"] = cw.values.length[:]
}

// addVary adds Accept-Encoding to Vary unless it, or "*", is there already.
func (cw *responseWriter) addVary(h http.Header) {
	var v []string
	if !cw.bare {
		v = h["Vary"]
	}
	switch {
	case headerHasToken(v, "accept-encoding") || headerHasToken(v, "*"):
	case len(v) == 0:
		cw.values.vary[0] = "Accept-Encoding"
		h["Vary"] = cw.values.vary[:]
	default:
		// A full slice forces append to copy: the handler may share its
		// header values between responses.
		h["Vary"] = append(v[:len(v):len(v)], "Accept-Encoding")
	}
}
