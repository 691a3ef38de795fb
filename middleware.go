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
	"sync"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Middleware compresses responses and decodes request bodies. It is safe for
// concurrent use; build it once with New and share it.
type Middleware struct {
	offers   []offer
	minSize  int
	buffers  *pool.Buffers
	types    []string
	decoding decoding
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
		minSize: c.minSize,
		types:   c.contentTypes,
	}
	for coding := range c.levels {
		if !slices.Contains(c.encodings, coding) {
			return nil, fmt.Errorf("squeeze: WithLevel(%q) names a coding that WithEncodings does not offer", coding)
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
	if m.decoding, err = newDecoding(&c); err != nil {
		return nil, err
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
// client's Accept-Encoding and the response allow.
func (m *Middleware) Handler(next http.Handler) http.Handler {
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
		r = cw.stripETagSuffixes(r)
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
	// stateBuffering holds the body back: nothing has been sent yet.
	stateBuffering writerState = iota
	// statePlain passes everything through unchanged.
	statePlain
	// stateCompressing writes the body through an encoder.
	stateCompressing
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
type responseWriter struct {
	m *Middleware
	w http.ResponseWriter

	// offer is the negotiated coding (an index into m.offers), or -1, as
	// for HEAD and Range requests, whose responses stay identity whatever
	// the content.
	offer int
	// head is set for HEAD requests, whose Content-Length is the handler's
	// to declare: no body is written to measure.
	head bool
	// clientHasCoded records that If-None-Match named the coding-specific
	// ETag, so a 304 must carry that tag too.
	clientHasCoded bool

	state  writerState
	status int
	// streamNow is set when the handler declared a Content-Length of at
	// least the minimum size, so the first write decides without buffering.
	streamNow bool
	// eligible caches a positive eligibleContent: the type is one to
	// compress and Vary has been added.
	eligible bool

	buf *[]byte
	enc *pool.Encoder
	out cappedBuffer

	// Backing arrays for the header values the middleware sets. They live
	// as long as this per-response writer, so setting a header costs no
	// allocation of its own.
	encodingValue, varyValue, lengthValue [1]string
}

func (m *Middleware) newResponseWriter(w http.ResponseWriter, r *http.Request) *responseWriter {
	cw := &responseWriter{m: m, w: w, offer: -1, head: r.Method == http.MethodHead}
	if !cw.head && len(r.Header["Range"]) == 0 {
		cw.offer = negotiate(r.Header["Accept-Encoding"], m.offers)
	}
	return cw
}

// Header returns the header map of the underlying writer.
func (cw *responseWriter) Header() http.Header { return cw.w.Header() }

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (cw *responseWriter) Unwrap() http.ResponseWriter { return cw.w }

// WriteHeader records the final status without sending it, since the
// headers depend on the body still to come; 1xx responses go out at once.
func (cw *responseWriter) WriteHeader(code int) {
	if cw.state != stateBuffering || cw.status != 0 {
		// The first final status wins, as in net/http; 1xx after it are
		// dropped rather than sent in the middle of a body.
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		cw.w.WriteHeader(code)
		return
	}
	cw.status = code
	h := cw.w.Header()
	switch {
	case code == http.StatusNotModified:
		cw.notModified(h)
	case !bodyAllowed(code) || !cw.eligibleHeaders(h):
		cw.startPlain()
	default:
		// eligibleContent adds Vary if due. When the body cannot be
		// compressed whatever it holds, pass it through at once.
		_, hasType := h["Content-Type"]
		if hasType && (!cw.eligibleContent(nil) || cw.offer < 0) {
			cw.startPlain()
			return
		}
		if n, ok := declaredLength(h); ok && n >= int64(cw.m.minSize) {
			// Without a type the first write is sniffed, then streamed.
			cw.streamNow = true
			if hasType {
				cw.startStream(nil)
			}
		}
	}
}

// notModified gives a 304 the Vary and ETag that the 200 it stands for
// carried (RFC 9110 §15.4.5).
func (cw *responseWriter) notModified(h http.Header) {
	ct := h.Get("Content-Type")
	if cw.clientHasCoded || (ct != "" && matchType(cw.m.types, ct)) {
		cw.addVary(h)
	}
	if cw.clientHasCoded {
		suffixETag(h, cw.m.offers[cw.offer].coding)
	}
	cw.startPlain()
}

func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// declaredLength returns the Content-Length the handler set, if any.
func declaredLength(h http.Header) (int64, bool) {
	v := h["Content-Length"]
	if len(v) != 1 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	return n, err == nil && n >= 0
}

// eligibleHeaders reports whether the response headers allow a transform:
// not a partial response, not already encoded, no no-transform directive.
// The content type is checked separately, since it may need sniffing.
func (cw *responseWriter) eligibleHeaders(h http.Header) bool {
	return cw.status != http.StatusPartialContent &&
		len(h["Content-Encoding"]) == 0 &&
		len(h["Content-Range"]) == 0 &&
		!headerHasToken(h["Cache-Control"], "no-transform")
}

// eligibleContent reports whether the content type is one to compress,
// sniffing it from sniff when the handler set none, and adds Vary when it
// is: the response then depends on Accept-Encoding even if this one goes
// out unencoded.
func (cw *responseWriter) eligibleContent(sniff []byte) bool {
	if cw.eligible {
		// Decided at WriteHeader; net/http too ignores later header edits.
		return true
	}
	h := cw.w.Header()
	ct, hasType := h["Content-Type"]
	if !hasType {
		if len(sniff) == 0 {
			return false
		}
		// net/http skips sniffing once Content-Encoding is set, so the
		// plain bytes must be sniffed here, before any encoded byte.
		ct = []string{http.DetectContentType(sniff)}
		h["Content-Type"] = ct
	}
	if len(ct) == 0 || !matchType(cw.m.types, ct[0]) {
		return false
	}
	cw.addVary(h)
	cw.eligible = true
	return true
}

// Write buffers p until the decision can be made, then passes it on.
func (cw *responseWriter) Write(p []byte) (int, error) {
	switch cw.state {
	case statePlain:
		return cw.w.Write(p)
	case stateCompressing:
		return cw.enc.Write(p)
	case stateHijacked:
		return 0, http.ErrHijacked
	case stateFinished:
		return 0, errFinished
	}
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
		if cw.state != stateBuffering {
			return cw.Write(p)
		}
	}
	var buffered []byte
	if cw.buf != nil {
		buffered = *cw.buf
	}
	if !cw.streamNow && len(buffered)+len(p) <= cw.m.buffers.Size() {
		if cw.buf == nil {
			cw.buf = cw.m.buffers.Get()
		}
		*cw.buf = append(*cw.buf, p...)
		return len(p), nil
	}
	// The body is at least a buffer long (never less than the minimum
	// size), or the handler declared that it is: stream it.
	sniff := buffered
	if len(sniff) == 0 {
		sniff = p
	}
	if err := cw.startStream(sniff); err != nil {
		return 0, err
	}
	return cw.Write(p)
}

// startStream decides for a body of unknown or large length, sends the
// headers, and writes out what was buffered.
func (cw *responseWriter) startStream(sniff []byte) error {
	if cw.eligibleContent(sniff) && cw.offer >= 0 {
		cw.startCompressing()
	} else {
		cw.startPlain()
	}
	if cw.buf == nil {
		return nil
	}
	_, err := cw.Write(*cw.buf)
	cw.releaseBuffer()
	return err
}

func (cw *responseWriter) startPlain() {
	cw.state = statePlain
	cw.w.WriteHeader(cw.status)
}

// startCompressing sends the headers of an encoded stream. If no encoder
// can be had the body goes out plain rather than mislabelled.
func (cw *responseWriter) startCompressing() {
	o := cw.m.offers[cw.offer]
	enc, err := o.encoders.Get(cw.w)
	if err != nil {
		cw.startPlain()
		return
	}
	cw.enc = enc
	h := cw.w.Header()
	cw.setEncoded(h, o.coding)
	// delete, not Del: the keys are canonical, and Del would
	// canonicalise them again on every response.
	delete(h, "Content-Length")
	cw.state = stateCompressing
	cw.w.WriteHeader(cw.status)
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

// Flush commits the decision, sends what is buffered, flushes the encoder
// so the client can decode everything written so far, then flushes the
// underlying writer.
func (cw *responseWriter) Flush() { _ = cw.FlushError() }

// FlushError is Flush returning the error, for http.ResponseController.
func (cw *responseWriter) FlushError() error {
	switch cw.state {
	case stateBuffering:
		if cw.status == 0 {
			cw.WriteHeader(http.StatusOK)
		}
		if cw.state == stateBuffering {
			// A flushed stream's length is unknown, so the minimum size no
			// longer applies: compress whatever content is eligible.
			var sniff []byte
			if cw.buf != nil {
				sniff = *cw.buf
			}
			if err := cw.startStream(sniff); err != nil {
				return err
			}
		}
	case stateHijacked:
		return http.ErrHijacked
	case stateFinished:
		return errFinished
	}
	if cw.state == stateCompressing {
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
// supports it. Whatever was buffered or encoded is discarded, as net/http
// discards its own unflushed buffer.
func (cw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if cw.state == stateFinished {
		return nil, nil, errFinished
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
	if cw.state == stateBuffering {
		if cw.status == 0 {
			cw.WriteHeader(http.StatusOK)
		}
		if cw.state == stateBuffering && !cw.streamNow {
			n, full, err := cw.fill(src)
			total += int64(n)
			if err != nil || !full {
				return total, err
			}
		}
		if cw.state == stateBuffering {
			var sniff []byte
			if cw.buf != nil {
				sniff = *cw.buf
			}
			if err := cw.startStream(sniff); err != nil {
				return total, err
			}
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
	case stateCompressing:
		n, err = cw.copyThrough(cw.enc, src)
	case stateHijacked:
		err = http.ErrHijacked
	case stateFinished:
		err = errFinished
	}
	return total + n, err
}

// fill reads from src into the buffer until it is full or src ends. It
// reports whether the buffer filled, in which case more may follow.
func (cw *responseWriter) fill(src io.Reader) (int, bool, error) {
	if cw.buf == nil {
		cw.buf = cw.m.buffers.Get()
	}
	b := *cw.buf
	start := len(b)
	for empty := 0; len(b) < cap(b); {
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				*cw.buf = b
				return len(b) - start, false, io.ErrNoProgress
			}
		}
		if err == io.EOF {
			*cw.buf = b
			return len(b) - start, false, nil
		}
		if err != nil {
			*cw.buf = b
			return len(b) - start, false, err
		}
	}
	*cw.buf = b
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
// runtime.Goexit (completed false) nothing more is sent: an encoded stream
// is left without its end marker, so the client cannot take the truncated
// body for a whole one.
func (cw *responseWriter) finish(completed bool) {
	switch {
	case !completed:
		cw.releaseEncoder()
	case cw.state == stateBuffering:
		cw.finishBuffered()
	case cw.state == stateCompressing:
		// An error here means the client went away; there is no one left
		// to tell.
		_ = cw.enc.Close()
		cw.releaseEncoder()
	}
	cw.releaseBuffer()
	if cw.state != stateHijacked {
		cw.state = stateFinished
	}
}

// finishBuffered sends a body that ended within the buffer: compressed in
// one piece when that pays, otherwise unchanged, with a Content-Length
// either way.
func (cw *responseWriter) finishBuffered() {
	if cw.status == 0 {
		cw.status = http.StatusOK
	}
	var body []byte
	if cw.buf != nil {
		body = *cw.buf
	}
	h := cw.w.Header()
	eligible := cw.eligibleContent(body)
	if eligible && cw.offer >= 0 && len(body) >= cw.m.minSize && len(body) > 0 {
		if cw.sendCompressed(h, body) {
			return
		}
	}
	if _, declared := h["Content-Length"]; !declared && !cw.head && len(body) > 0 {
		cw.setLength(h, len(body))
	}
	cw.startPlain()
	if len(body) > 0 {
		_, _ = cw.w.Write(body)
	}
}

// sendCompressed encodes body into a second pooled buffer no larger than
// body itself, and sends it if it came out smaller. It reports whether it
// sent anything.
func (cw *responseWriter) sendCompressed(h http.Header, body []byte) bool {
	if len(body) < 2 {
		return false
	}
	o := cw.m.offers[cw.offer]
	outBuf := cw.m.buffers.Get()
	defer cw.m.buffers.Put(outBuf)
	// Anything not smaller than the input is no gain: cap the output there
	// and let the encoder fail instead of growing the buffer.
	cw.out = cappedBuffer{b: (*outBuf)[: 0 : len(body)-1]}
	enc, err := o.encoders.Get(&cw.out)
	if err != nil {
		return false
	}
	_, err = enc.Write(body)
	if err == nil {
		err = enc.Close()
	}
	o.encoders.Put(enc)
	out := cw.out.b
	cw.out = cappedBuffer{}
	if err != nil {
		return false
	}
	cw.setEncoded(h, o.coding)
	cw.setLength(h, len(out))
	cw.state = stateCompressing // for the record; nothing more is written
	cw.w.WriteHeader(cw.status)
	_, _ = cw.w.Write(out)
	return true
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
