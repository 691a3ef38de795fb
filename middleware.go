// Package squeeze is net/http middleware that compresses responses with
// zstd, br or gzip, negotiated per RFC 9110, and decodes compressed request
// bodies with hard limits against decompression bombs.
//
// A Middleware holds back the first bytes of each response (up to
// WithBufferSize) to decide whether compressing is worth it: bodies below
// WithMinSize, content types outside WithContentTypes, bodiless statuses,
// ranges, already-encoded bodies and Cache-Control: no-transform go out
// unchanged. A body that ends within the buffer is sent in one piece with a
// Content-Length; a longer one, or one the handler flushes, is streamed.
// Encoders and buffers come from pools built by New, one per coding and
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
	"strconv"
	"strings"
	"sync"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Middleware compresses responses and decodes request bodies. It is safe for
// concurrent use; build it once with New and share it.
type Middleware struct {
	offers              []offer
	minSize             int
	buffers             *pool.Buffers
	types               []string
	maxDecompressedSize int64
	decoders            map[string]*pool.Decoders
	// cache, if any, keeps encoded bodies (cache.go).
	cache *Cache
}

// New returns a Middleware configured by opts, or an error naming the first
// invalid option.
func New(opts ...Option) (*Middleware, error) {
	c := config{
		encodings:           DefaultEncodings(),
		levels:              map[string]int{},
		minSize:             DefaultMinSize,
		bufferSize:          DefaultBufferSize,
		contentTypes:        DefaultContentTypes(),
		maxDecompressedSize: DefaultMaxDecompressedSize,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("squeeze: nil Option")
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	m := &Middleware{
		minSize:             c.minSize,
		types:               c.contentTypes,
		maxDecompressedSize: c.maxDecompressedSize,
		decoders:            map[string]*pool.Decoders{},
		cache:               c.cache,
	}
	for coding := range c.levels {
		if !slices.Contains(c.encodings, coding) {
			return nil, notOfferedError(coding, c.levels[coding], c.encodings)
		}
	}
	for _, coding := range c.encodings {
		level, ok := c.levels[coding]
		if !ok {
			r, err := writers.Levels(coding)
			if err != nil {
				return nil, err
			}
			level = r.Default
		}
		encoders, err := pool.NewEncoders(coding, level)
		if err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
		m.offers = append(m.offers, offer{coding: coding, encoders: encoders})
	}
	bufferSize := max(c.bufferSize, c.minSize)
	var err error
	if m.buffers, err = pool.NewBuffers(bufferSize); err != nil {
		return nil, fmt.Errorf("squeeze: %w", err)
	}
	for _, coding := range writers.Codings() {
		if m.decoders[coding], err = pool.NewDecoders(coding); err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
	}
	return m, nil
}

// MustNew is like New but panics if an option is invalid. It suits
// package-level variables.
func MustNew(opts ...Option) *Middleware {
	m, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return m
}

var defaultMiddleware = sync.OnceValue(func() *Middleware { return MustNew() })

// Handler returns next wrapped by a Middleware with the default options. It
// suits chi's r.Use and any func(http.Handler) http.Handler chain.
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
		r, release, ok := m.decodeRequest(w, r)
		if !ok {
			return
		}
		if release != nil {
			defer release()
		}
		if isUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		cw := m.newResponseWriter(w, r)
		r = withPlainTags(r, cw.coding(), m.offers)
		completed := false
		defer func() { cw.finish(completed) }()
		next.ServeHTTP(cw, r)
		completed = true
	})
}

// isUpgrade reports whether r asks to switch protocols (WebSocket, h2c) or
// to tunnel: the response stream then is not an HTTP body at all.
func isUpgrade(r *http.Request) bool {
	if r.Method == http.MethodConnect {
		return true
	}
	if len(r.Header["Upgrade"]) == 0 {
		return false
	}
	return headerHasToken(r.Header["Connection"], "upgrade")
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
)

// errFinished is returned by writes made after the handler returned, for
// example from a goroutine the handler left behind.
var errFinished = errors.New("squeeze: write after the handler returned")

// responseWriter is allocated per response rather than pooled: a handler
// goroutine that outlives ServeHTTP must never be able to write into a later
// client's response. The expensive parts (buffers, encoders) are pooled.
//
// Its methods feed bytes to the verdict of decide; advance asks for one,
// and commit makes the header edits that go with it and sends the header.
type responseWriter struct {
	m *Middleware
	w http.ResponseWriter
	// req is the request as it arrived, whose If-None-Match tells which
	// tag a 304 must carry.
	req *http.Request

	// hdr is what the header said when the handler chose the status.
	hdr    fields
	status int // the final status the handler chose; 0 until then
	// written counts the body bytes fed to an encoder, so that a stream
	// that falls short of or exceeds hdr.declared can be told apart.
	written int64

	// offer is the negotiated coding (an index into m.offers), or -1.
	offer int16
	// ranged is set for requests with a Range header: the response stays
	// identity, since byte ranges refer to the plain bytes.
	ranged bool
	// head is set for HEAD requests, whose body the handler need not write.
	head  bool
	state writerState
	need  need
	why   reason

	// after is set when the handler asked for the header after choosing
	// the status (see restoreHeader).
	after *afterStatus

	buf *[]byte
	enc *pool.Encoder
	out cappedBuffer
	// storing, set while a stream is being stored in the cache, tees the
	// encoder's output (cache.go).
	storing *cacheFill

	// Backing arrays for the header values the middleware sets. They live
	// as long as this per-response writer, so setting a header costs no
	// allocation of its own.
	encodingValue, varyValue, lengthValue [1]string
}

// afterStatus holds the header as it was when the status was chosen, since
// net/http ignores later changes, trailers aside, and the values of declared
// trailers set since, which go out after the body.
type afterStatus struct {
	snapshot, late http.Header
}

func (m *Middleware) newResponseWriter(w http.ResponseWriter, r *http.Request) *responseWriter {
	cw := &responseWriter{
		m: m, w: w, offer: -1, hdr: fields{declared: -1},
		head:   r.Method == http.MethodHead,
		ranged: len(r.Header["Range"]) > 0,
		req:    r,
	}
	if !cw.ranged {
		cw.offer = int16(negotiate(r.Header["Accept-Encoding"], m.offers))
	}
	return cw
}

// coding returns the negotiated coding, or "" for identity.
func (cw *responseWriter) coding() string {
	if cw.offer < 0 {
		return ""
	}
	return cw.m.offers[cw.offer].coding
}

// Header returns the header map of the underlying writer.
func (cw *responseWriter) Header() http.Header {
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

// Unwrap returns the underlying ResponseWriter, for [http.ResponseController].
func (cw *responseWriter) Unwrap() http.ResponseWriter { return cw.w }

// WriteHeader records the final status and decides what it can: the header
// goes out once the verdict is known. 1xx responses go out at once.
func (cw *responseWriter) WriteHeader(code int) {
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
	cw.hdr = cw.m.readFields(cw.w.Header())
	_ = cw.advance(atHeader, nil)
}

// begin is the implicit WriteHeader(200) of a body written without one.
func (cw *responseWriter) begin() {
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
	}
}

// Write holds p back while the verdict waits, then passes the body on.
func (cw *responseWriter) Write(p []byte) (int, error) {
	if cw.state == stateWaiting {
		cw.begin()
	}
	if cw.state == stateWaiting {
		held := cw.buffered()
		if cw.hdr.declared >= 0 && int64(len(held)+len(p)) > cw.hdr.declared && !cw.head {
			return 0, http.ErrContentLength
		}
		if len(held)+len(p) > cw.m.buffers.Size() {
			if err := cw.advance(atOverflow, p); err != nil {
				return 0, err
			}
		} else {
			if cw.buf == nil {
				cw.buf = cw.m.buffers.Get()
			}
			*cw.buf = append(*cw.buf, p...)
			if cw.need == needBytes {
				if err := cw.advance(atWrite, nil); err != nil {
					return 0, err
				}
			}
			return len(p), nil
		}
	}
	switch cw.state {
	case statePlain:
		return cw.w.Write(p)
	case stateEncoding:
		if cw.hdr.declared >= 0 && cw.written+int64(len(p)) > cw.hdr.declared && !cw.head {
			return 0, http.ErrContentLength
		}
		n, err := cw.enc.Write(p)
		cw.written += int64(n)
		return n, err
	case stateDiscarding:
		return len(p), nil
	case stateHijacked:
		return 0, http.ErrHijacked
	case stateFinished:
		return 0, errFinished
	}
	// stateSent: a body declared empty, or a HEAD body, has no room left.
	return 0, http.ErrContentLength
}

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
		cw.hdr = cw.m.readFields(h)
	} else if ev == atEnd && len(h) != cw.hdr.keys {
		// Keys added after the status count only as prefixed trailers.
		cw.hdr.trailers = cw.hdr.trailers || hasPrefixedTrailers(h)
	}
	f := facts{fields: cw.hdr, status: cw.status, buffered: len(cw.buffered()), event: ev}
	if !f.typed && ev != atHeader {
		sniff := cw.buffered()
		if len(sniff) == 0 {
			sniff = next
		}
		if len(sniff) > 0 {
			// net/http does not sniff once Content-Encoding is set, so
			// the plain bytes are sniffed here, before any encoded byte.
			f.contentType, f.typed, f.sniffed = http.DetectContentType(sniff), true, true
			f.eligible = matchType(cw.m.types, f.contentType)
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
func (cw *responseWriter) commit(v verdict, why reason, h http.Header, f *facts) error {
	if f.sniffed {
		h["Content-Type"] = []string{f.contentType}
	}
	if why.varies() || f.status == http.StatusNotModified && cw.notModifiedVaries(h) {
		cw.addVary(h)
	}
	if f.status == http.StatusNotModified && cw.offer >= 0 {
		cw.notModifiedETag(h)
	}
	body := cw.buffered()
	whole := f.event == atEnd && !f.trailers
	if v == sendEncoded && whole {
		if why = cw.sendWhole(h, f, body); why == reasonNone {
			return nil
		}
	} else if v == sendEncoded {
		o := cw.m.offers[cw.offer]
		// A stream the cache knows by its strong ETag goes out stored;
		// the handler's body is then discarded (cache.go).
		if stored := cw.cachedStream(h, f); stored != nil {
			cw.releaseBuffer()
			cw.sendEncodedBody(h, o.coding, stored, stateDiscarding)
			return nil
		}
		enc, err := o.encoders.Get(cw.streamTo())
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
		why = reasonNoEncoder
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
		_, err = cw.Write(*cw.buf)
	}
	cw.releaseBuffer()
	return err
}

// sendWhole encodes a body that ended within the buffer into a second
// pooled buffer no larger than the body, and sends it with its encoded
// Content-Length if it came out smaller. It reports whether it sent it. A
// HEAD handler's declared but unwritten body sends the encoded header
// without a length, which only the body could give (RFC 9110 §9.3.2).
// Unless it sent the body, it returns why not. With a cache, a hit sends
// the stored encoding instead, and a miss stores what it encoded: the body
// is whole, so a client that goes away cannot cut the entry short.
func (cw *responseWriter) sendWhole(h http.Header, f *facts, body []byte) reason {
	o := cw.m.offers[cw.offer]
	if len(body) == 0 && cw.head {
		cw.setEncoded(h, o.coding)
		delete(h, "Content-Length")
		cw.state = stateSent
		cw.sendHeader(h)
		return reasonNone
	}
	if len(body) < 2 {
		return reasonNoGain
	}
	// The cache, if any, may hold this body's encoding; on a miss, key
	// says where to store it (cache.go).
	stored, key, store := cw.cachedWhole(h, f, body)
	if stored != nil {
		cw.sendEncodedBody(h, o.coding, stored, stateSent)
		return reasonNone
	}
	// Anything not smaller than the input is no gain: cap the output there
	// and let the encoder fail instead of growing the buffer. The output
	// goes after the body in the same buffer when there is room for it
	// there, as there is for every body up to half the buffer.
	held := *cw.buf
	if cap(held)-len(held) >= len(body)-1 {
		cw.out = cappedBuffer{b: held[len(held) : len(held) : len(held)+len(body)-1]}
	} else {
		outBuf := cw.m.buffers.Get()
		defer cw.m.buffers.Put(outBuf)
		cw.out = cappedBuffer{b: (*outBuf)[: 0 : len(body)-1]}
	}
	enc, err := o.encoders.Get(&cw.out)
	if err != nil {
		cw.storeWhole(&key, store, body, nil)
		return reasonNoEncoder
	}
	_, err = enc.Write(body)
	if err == nil {
		err = enc.Close()
	}
	o.encoders.Put(enc)
	out := cw.out.b
	cw.out = cappedBuffer{}
	if err != nil {
		cw.storeWhole(&key, store, body, nil)
		return reasonNoGain
	}
	cw.storeWhole(&key, store, body, out)
	cw.sendEncodedBody(h, o.coding, out, stateSent)
	return reasonNone
}

// sendEncodedBody sends a whole encoded body, freshly encoded or stored,
// with its Content-Length, and moves to state.
func (cw *responseWriter) sendEncodedBody(h http.Header, coding string, out []byte, state writerState) {
	cw.setEncoded(h, coding)
	cw.setLength(h, len(out))
	cw.state = state
	cw.sendHeader(h)
	_, _ = cw.w.Write(out)
}

// setEncoded sets the headers every encoded response carries.
func (cw *responseWriter) setEncoded(h http.Header, coding string) {
	cw.encodingValue[0] = coding
	h["Content-Encoding"] = cw.encodingValue[:]
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
	cw.w.WriteHeader(cw.status)
	if cw.after != nil {
		for k, v := range cw.after.late {
			h[k] = v
		}
		cw.after.late = nil
	}
}

// Flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (cw *responseWriter) Flush() { _ = cw.FlushError() }

// FlushError is Flush returning the error, for [http.ResponseController].
func (cw *responseWriter) FlushError() error {
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
		if err := cw.enc.Flush(); err != nil {
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

// Hijack hands the connection to the handler when the underlying writer
// supports it. A status the handler chose goes out first, as net/http
// sends a header written before Hijack; a body held back or encoded is
// discarded, as net/http discards its own unflushed buffer.
func (cw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if cw.state == stateFinished {
		return nil, nil, errFinished
	}
	if cw.state == stateWaiting && cw.status != 0 {
		h := cw.w.Header()
		cw.restoreHeader(h)
		cw.state = statePlain
		cw.sendHeader(h)
	}
	conn, rw, err := http.NewResponseController(cw.w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	cw.releaseEncoder()
	cw.releaseBuffer()
	cw.state = stateHijacked
	return conn, rw, nil
}

// ReadFrom lets io.Copy reach the underlying writer's ReadFrom (sendfile)
// when the response is not compressed.
func (cw *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	var total int64
	if cw.state == stateWaiting {
		cw.begin()
	}
	if cw.state == stateWaiting {
		n, full, err := cw.fill(src)
		total += int64(n)
		if err != nil || !full {
			return total, err
		}
		if err := cw.advance(atOverflow, nil); err != nil {
			return total, err
		}
	}
	var n int64
	var err error
	switch cw.state {
	case statePlain:
		if rf, ok := cw.w.(io.ReaderFrom); ok {
			n, err = rf.ReadFrom(src)
		} else {
			n, err = cw.copyThrough(cw.w, src)
		}
	case stateEncoding:
		n, err = cw.copyThrough(writeOnly{cw}, src)
	case stateHijacked:
		err = http.ErrHijacked
	case stateFinished:
		err = errFinished
	default:
		n, err = cw.copyThrough(writeOnly{cw}, src)
	}
	return total + n, err
}

// writeOnly hides every method of a writer but Write, so that io.Copy
// does not call ReadFrom back.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// fill reads from src into the buffer until it is full or src ends. It
// reports whether the buffer filled, in which case more may follow. A body
// that goes past its declared length is cut there and reported as
// [http.ErrContentLength].
func (cw *responseWriter) fill(src io.Reader) (int, bool, error) {
	if cw.buf == nil {
		cw.buf = cw.m.buffers.Get()
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
		case n == 0:
			if empty++; empty == 100 {
				return len(b) - start, false, io.ErrNoProgress
			}
		}
	}
	return len(b) - start, true, nil
}

// copyThrough copies src to dst through a pooled buffer rather than the
// 32 KiB one io.Copy would allocate.
func (cw *responseWriter) copyThrough(dst io.Writer, src io.Reader) (int64, error) {
	buf := cw.m.buffers.Get()
	defer cw.m.buffers.Put(buf)
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
	} else {
		if cw.state == stateWaiting {
			cw.begin()
		}
		if cw.state == stateWaiting {
			_ = cw.advance(atEnd, nil)
		}
		if cw.state == stateEncoding {
			cw.endStream()
		}
	}
	cw.endFill(completed)
	cw.releaseBuffer()
	if cw.state != stateHijacked {
		cw.state = stateFinished
	}
}

// endStream completes an encoded stream, or, when the body did not match
// its declared length, sends what was written without the stream's end, as
// net/http sends a short body: every decoder then reports it cut. Errors
// here mean the client went away; there is no one left to tell.
func (cw *responseWriter) endStream() {
	if cw.hdr.declared < 0 || cw.written == cw.hdr.declared || cw.head {
		if err := cw.enc.Close(); err == nil && cw.storing != nil {
			cw.storing.closed = true // the stream ended whole: endFill stores it
		}
	} else {
		_ = cw.enc.Flush()
	}
	cw.releaseEncoder()
}

func (cw *responseWriter) releaseEncoder() {
	if cw.enc != nil {
		cw.m.offers[cw.offer].encoders.Put(cw.enc)
		cw.enc = nil
	}
}

func (cw *responseWriter) releaseBuffer() {
	if cw.buf != nil {
		cw.m.buffers.Put(cw.buf)
		cw.buf = nil
	}
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

func (cw *responseWriter) setLength(h http.Header, n int) {
	cw.lengthValue[0] = strconv.Itoa(n)
	h["Content-Length"] = cw.lengthValue[:]
}

// addVary adds Accept-Encoding to Vary unless it, or "*", is there already.
func (cw *responseWriter) addVary(h http.Header) {
	v := h["Vary"]
	switch {
	case headerHasToken(v, "accept-encoding") || headerHasToken(v, "*"):
	case len(v) == 0:
		cw.varyValue[0] = "Accept-Encoding"
		h["Vary"] = cw.varyValue[:]
	default:
		// A full slice forces append to copy: the handler may share its
		// header values between responses.
		h["Vary"] = append(v[:len(v):len(v)], "Accept-Encoding")
	}
}
