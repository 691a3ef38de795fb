package squeeze

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// ErrInvalidBody is reported by Read on a request body that squeeze decodes
// when the bytes are not a valid stream of their Content-Encoding: corrupt,
// truncated, empty, or asking for more than the decoder grants (a zstd window
// over 8 MB). The error returned also wraps the codec's own error, so
// errors.Is and errors.As find both. A handler would typically answer 400.
var ErrInvalidBody = errors.New("squeeze: request body is not valid for its Content-Encoding")

// maxContentCodings is the most codings a request body may stack, counting
// neither identity nor empty list elements. Real clients apply one; two
// leaves room for a proxy that adds its own. Each layer holds a pooled
// decoder (up to 16 MiB of window for br) and multiplies the work a small
// body can demand, so a deeper stack is refused with 415.
const maxContentCodings = 2

// codecOverhead is the slack, beyond 1/64 of the decoded cap, granted to the
// compressed bytes of each layer: headers, stored-block framing of
// incompressible data, and gzip's optional fields. Legitimate encoders stay
// far below it; a stream that needs more is mostly not payload.
const codecOverhead = 64 << 10

// requestCodings is the Accept-Encoding answered with a 415, listing the
// codings decodeRequest undoes.
const requestCodings = "zstd, br, gzip, deflate"

// compressedLimit returns the most bytes any one layer of a request body may
// feed its decoder when the decoded body is capped at limit.
func compressedLimit(limit int64) int64 {
	margin := limit/64 + codecOverhead
	if limit > math.MaxInt64-margin {
		return math.MaxInt64
	}
	return limit + margin
}

// decodeRequest prepares r for the handler when its body carries a
// Content-Encoding. It returns the request to pass on, a func to run when the
// handler returns (nil when there is nothing to release), and false when it
// has already answered: 415 for a coding it cannot undo or a stack deeper
// than maxContentCodings, 413 for a declared length no body within the cap
// could have.
//
// A request without a body (nil, http.NoBody or ContentLength 0, as servers
// report an empty one) only loses the field, whatever it names.
//
// The decoded request is a shallow copy with a cloned header, without
// Content-Encoding and Content-Length and with ContentLength -1; r itself is
// never modified. Decoders are taken from the pools on the first Read, so a
// handler that answers without reading pays for none and a stream's header is
// read only when the handler asks for the body. w must be the ResponseWriter
// the server gave, so that exceeding a limit makes net/http close the
// connection just as http.MaxBytesReader does.
//
// A request without Content-Encoding is returned as it is, without
// allocating.
func (m *Middleware) decodeRequest(w http.ResponseWriter, r *http.Request) (*http.Request, func(), bool) {
	values := r.Header["Content-Encoding"]
	if len(values) == 0 {
		return r, nil, true
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		// Nothing to decode, whatever the coding claims.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	var codings [maxContentCodings]string
	n := 0
	for _, v := range values {
		for v != "" {
			var token string
			token, v = nextElement(v)
			token = trimOWS(token)
			if token == "" || strings.EqualFold(token, "identity") {
				continue
			}
			coding, ok := writers.Canonical(token)
			if !ok || m.decoders[coding] == nil {
				unsupportedCoding(w, "unsupported Content-Encoding")
				return nil, nil, false
			}
			if n == len(codings) {
				unsupportedCoding(w, "too many Content-Encoding layers")
				return nil, nil, false
			}
			codings[n] = coding
			n++
		}
	}
	if n == 0 {
		// identity only: the body is already what it claims to be.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	inLimit := compressedLimit(m.maxDecompressedSize)
	if r.ContentLength > inLimit {
		// No stream within the cap is this long; refuse before reading.
		// HTTP/1 cannot skip the unread body but by closing; HTTP/2
		// resets the stream, and its server would take Connection: close
		// as a cue to shut down every other stream too.
		if r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close")
		}
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	d := new(decodedRequest)
	b := &d.body
	*b = decodedBody{w: w, raw: r.Body, n: n, limit: m.maxDecompressedSize, left: m.maxDecompressedSize, inLimit: inLimit}
	b.observe = m.observe // observer hook (observe.go)
	for i := range n {
		// Content-Encoding lists codings in the order applied; undo the
		// last one first.
		coding := codings[n-1-i]
		b.layers[i] = layer{coding: coding, decoders: m.decoders[coding], in: input{body: b, left: inLimit}}
	}
	copyWithoutEncoding(&d.req, r, true)
	d.req.Body = b
	return &d.req, b.release, true
}

// decodedRequest puts the request copy and its body in one allocation.
type decodedRequest struct {
	req  http.Request
	body decodedBody
}

// unsupportedCoding answers 415 with the Accept-Encoding that RFC 9110
// §15.5.16 asks for when the problem is the request's content coding.
func unsupportedCoding(w http.ResponseWriter, msg string) {
	w.Header().Set("Accept-Encoding", requestCodings)
	http.Error(w, msg, http.StatusUnsupportedMediaType)
}

// copyWithoutEncoding makes dst a shallow copy of r whose header, cloned,
// has no Content-Encoding. When decoded, the length goes too: the decoded
// body's length is unknown until it has been read.
func copyWithoutEncoding(dst, r *http.Request, decoded bool) {
	*dst = *r
	dst.Header = r.Header.Clone()
	delete(dst.Header, "Content-Encoding")
	if decoded {
		delete(dst.Header, "Content-Length")
		dst.ContentLength = -1
		dst.GetBody = nil
	}
}

// tooLarge returns the error http.MaxBytesReader returns past its limit,
// after doing the one thing only that reader can: tell the server, through
// a hook on the ResponseWriter it gave the handler, to close the connection,
// since the rest of the body will not be read. A throwaway reader limited to
// 0 bytes and offered 1 does exactly that. The limits themselves are
// counted here, so a body that stays within them allocates no reader.
func tooLarge(w http.ResponseWriter, limit int64) error {
	_, _ = http.MaxBytesReader(w, io.NopCloser(strings.NewReader("!")), 0).Read(make([]byte, 1))
	return &http.MaxBytesError{Limit: limit}
}

// decodedBody is the Body of a decoded request. Its layers each undo one
// coding, reading from the one before; layer 0 reads the body that arrived.
//
// The pooled decoders go back exactly once, when the handler closes the body
// or returns. A Read may still be running then (a handler that left a
// goroutine reading): the decoders go back when it ends, never while in
// use, so one request's decoder can never be reading another's bytes.
type decodedBody struct {
	readMu sync.Mutex // serialises Read, which touches the layers

	mu       sync.Mutex // guards the three flags below
	reading  bool       // a Read is using the decoders
	closed   bool       // Close or release has run; no more reads
	released bool       // the decoders are back in their pools

	w       http.ResponseWriter
	raw     io.ReadCloser
	limit   int64 // cap on the decoded bytes
	inLimit int64 // cap on the bytes each layer reads

	// Touched by Read only, under readMu.
	started bool
	top     io.Reader // the last layer
	left    int64     // decoded bytes still allowed
	err     error     // sticky: why starting failed, or the cap
	n       int
	layers  [maxContentCodings]layer

	// Observer hook (observe.go): observe gets one Event when the
	// decoders are released; elapsed is the time spent in read, measured
	// only when observe is set.
	observe func(Event)
	elapsed time.Duration
}

// Read returns decoded bytes. It fails with *http.MaxBytesError beyond the
// decoded cap or when any layer's input exceeds its limit, with an error
// matching ErrInvalidBody when the stream is not valid, with the body's own
// error when reading it fails, and with http.ErrBodyReadAfterClose once the
// body has been closed or the handler has returned.
func (b *decodedBody) Read(p []byte) (int, error) {
	b.readMu.Lock()
	defer b.readMu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	}
	b.reading = true
	b.mu.Unlock()

	var t0 time.Time
	if b.observe != nil {
		t0 = time.Now()
	}
	n, err := b.read(p)
	if b.observe != nil {
		b.elapsed += time.Since(t0)
	}

	// Not deferred: if a codec panicked, its decoder stays marked in use
	// and is dropped rather than pooled in an unknown state.
	b.mu.Lock()
	b.reading = false
	if b.closed {
		b.releaseLocked()
	}
	b.mu.Unlock()
	return n, err
}

func (b *decodedBody) read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.err = b.start()
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// As http.MaxBytesReader: ask for one byte more than allowed, to know
	// whether the body goes on past the cap.
	if int64(len(p))-1 > b.left {
		p = p[:b.left+1]
	}
	n, err := b.top.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = tooLarge(b.w, b.limit)
	return n, b.err
}

// start takes a decoder for each layer. Getting one may read the stream's
// header, so it can fail like a Read.
func (b *decodedBody) start() error {
	var src io.Reader = b.raw
	for i := range b.n {
		l := &b.layers[i]
		l.in.r = src
		d, err := l.decoders.Get(&l.in)
		if err != nil {
			if err == io.EOF {
				// The header itself is missing.
				err = io.ErrUnexpectedEOF
			}
			return l.fail(err)
		}
		l.dec = d
		src = l
	}
	b.top = src
	return nil
}

// Close releases the decoders and closes the body that arrived. Reads after
// Close fail; a second Close does nothing.
func (b *decodedBody) Close() error {
	b.mu.Lock()
	already := b.closed
	b.closed = true
	if !b.reading {
		b.releaseLocked()
	}
	b.mu.Unlock()
	if already {
		return nil
	}
	return b.raw.Close()
}

// release runs when the handler returns. The server closes the body that
// arrived itself.
func (b *decodedBody) release() {
	b.mu.Lock()
	b.closed = true
	if !b.reading {
		b.releaseLocked()
	}
	b.mu.Unlock()
}

func (b *decodedBody) releaseLocked() {
	if b.released {
		return
	}
	b.released = true
	for i := range b.n {
		l := &b.layers[i]
		if l.dec != nil {
			l.decoders.Put(l.dec)
			l.dec = nil
		}
		l.in.r = nil
	}
	if b.observe != nil { // observer hook: one Event per decoded body
		b.report()
	}
}

// layer undoes one coding. Its errors are sticky, so a decoder is never
// asked to go on after it has failed.
type layer struct {
	coding   string
	decoders *pool.Decoders
	dec      *pool.Decoder
	in       input
	err      error
}

func (l *layer) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.dec.Read(p)
	if err != nil {
		err = l.fail(err)
	}
	return n, err
}

// fail turns a decoder's error into the error the handler sees and keeps it.
// A failure of the input (the request body's own error, or a limit) is
// passed on as it is, whatever the codec made of it; so is the end of a
// stream that had bytes. Anything else means the bytes were not valid.
func (l *layer) fail(err error) error {
	switch {
	case l.in.err != nil:
		err = l.in.err
	case err == io.EOF && l.in.left < l.in.body.inLimit:
	case err == io.EOF:
		// An empty input is not a stream in any coding.
		err = &invalidBodyError{coding: l.coding, err: io.ErrUnexpectedEOF}
	default:
		err = &invalidBodyError{coding: l.coding, err: err}
	}
	l.err = err
	return err
}

// input is what a layer's decoder reads: the layer before it, or the body
// that arrived, limited to body.inLimit bytes. It keeps what the decoder
// cannot be relied on to pass on intact: whether any bytes came (left is
// below the limit), and the first error, which is sticky.
type input struct {
	body *decodedBody
	r    io.Reader
	left int64
	err  error
}

func (in *input) Read(p []byte) (int, error) {
	if in.err != nil {
		return 0, in.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p))-1 > in.left {
		p = p[:in.left+1]
	}
	n, err := in.r.Read(p)
	if int64(n) > in.left {
		n = int(in.left)
		in.left = 0
		in.err = tooLarge(in.body.w, in.body.inLimit)
		return n, in.err
	}
	in.left -= int64(n)
	if err != nil && err != io.EOF {
		in.err = err
	}
	return n, err
}

// invalidBodyError matches both ErrInvalidBody and the codec's error.
type invalidBodyError struct {
	coding string
	err    error
}

func (e *invalidBodyError) Error() string {
	return "squeeze: invalid " + e.coding + " request body: " + e.err.Error()
}

func (e *invalidBodyError) Unwrap() []error { return []error{ErrInvalidBody, e.err} }
