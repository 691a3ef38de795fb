package squeeze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// ErrInvalidBody is reported by Read on a request body that squeeze decodes,
// or a response body that a [Transport] decodes, when the bytes are not a
// valid stream of their Content-Encoding: corrupt, truncated, empty, or
// asking for more than the decoder grants (a zstd window over 8 MB), or, for
// dcz and dcb, compressed with another dictionary than the one offered. The
// error returned also wraps the codec's own error, so errors.Is and errors.As
// find both; its message says which body it was, request or response. A
// handler would typically answer 400.
var ErrInvalidBody = errors.New("squeeze: body is not valid for its Content-Encoding")

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

// innerSlack is what an inner layer (one that decodes another layer's
// output) may read beyond 1/64 more than it has produced: room for the read
// ahead of its decoder (a whole zstd block of up to 128 KiB before any
// output, brotli's and bufio's buffers) and its headers. Real compressed
// data, even incompressible data stored as raw blocks, never needs more; a
// stream that does is mostly not payload, such as megabytes of empty
// meta-blocks or frames that cost CPU and produce nothing.
const innerSlack = 256 << 10

// requestCodings is the Accept-Encoding answered with a 415, listing the
// codings decodeRequest undoes.
const requestCodings = "zstd, br, gzip, deflate"

// ErrDecoderBusy is reported by Read on a request body that squeeze decodes
// when the memory budget for decoders ([WithDecoderMemory]) stays spent for
// the short wait allowed, or the request's context ends during that wait. A
// [Transport] reports it the same way on a response body, against its own
// budget ([Transport.DecoderMemory]).
// Nothing is wrong with the body: the server is busy decoding others. A
// handler should answer 503 Service Unavailable with a Retry-After header.
var ErrDecoderBusy = errors.New("squeeze: too many request bodies being decoded; retry later")

// DefaultDecoderMemory is the default of [WithDecoderMemory]: room for seven
// br streams with the largest window (16 MiB, charged 32 MiB), thirty zstd
// ones at 8 MB, or four thousand gzip ones or zstd and br ones at the
// windows squeeze's own encoders use (128 and 256 KiB) at once. With
// stalled bombs the heap stays at or under this much above its base instead
// of growing with the number of clients (the measurement is in
// docs/internals.md#request-and-response-decoding).
const DefaultDecoderMemory = 256 << 20

// decoderWait bounds how long a Read waits for room in the budget.
const decoderWait = 200 * time.Millisecond

// Budget charges per layer; see WithDecoderMemory for the reasons.
const (
	flateCharge  = 64 << 10
	zstdTables   = 256 << 10
	brotliTables = 128 << 10
)

// charge returns what a decoder for coding can hold with window, the
// largest it has met (see writers.Decoder's Window; for br, the window of
// the stream about to be read).
func charge(coding string, window int64) int64 {
	switch coding {
	case writers.Zstd:
		// The history ring: the window and two blocks of working space.
		return window + 2*min(window, 128<<10) + zstdTables
	case writers.Brotli:
		// The ring buffer grows by doubling up to the window.
		return 2*window + brotliTables
	}
	return flateCharge
}

// decoding is the request-body side of a Middleware, set up by New, and the
// response-body side of a Transport.
type decoding struct {
	enabled  bool
	limit    int64 // WithMaxDecompressedSize: cap on the decoded bytes
	decoders map[string]*pool.Decoders
	memory   int64               // WithDecoderMemory
	budget   *semaphore.Weighted // of memory bytes
}

// newDecoding builds the decoder pools c asks for; none when request
// decoding is off.
func newDecoding(c *config) (decoding, error) {
	d := decoding{enabled: !c.noRequestDecoding, limit: c.maxDecompressedSize, memory: c.decoderMemory}
	if !d.enabled {
		return d, nil
	}
	if d.memory == 0 {
		d.memory = DefaultDecoderMemory
	}
	d.budget = semaphore.NewWeighted(d.memory)
	d.decoders = map[string]*pool.Decoders{}
	for _, coding := range writers.Codings() {
		p, err := pool.NewDecoders(coding)
		if err != nil {
			return decoding{}, fmt.Errorf("squeeze: %w", err)
		}
		d.decoders[coding] = p
	}
	return d, nil
}

// acquire takes n bytes of the budget (all of it when n is more), waiting
// up to decoderWait within ctx. It reports how much it took.
func (d *decoding) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, d.memory)
	if d.budget.TryAcquire(n) {
		return n, nil
	}
	ctx, cancel := context.WithTimeout(ctx, decoderWait)
	defer cancel()
	if err := d.budget.Acquire(ctx, n); err != nil {
		return 0, ErrDecoderBusy
	}
	return n, nil
}

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
// Content-Encoding, whose field lines are values. It returns the request to
// pass on, a func to run when the handler returns (nil when there is nothing
// to release), and false when it has already answered: 415 for a coding it
// cannot undo or a stack deeper than maxContentCodings, 413 for a declared
// length no body within the cap could have.
//
// A request without a Body, or whose codings are all identity, only loses
// the field. An empty body (http.NoBody or ContentLength 0, as servers
// report one) with any other coding, even one squeeze cannot undo, reaches
// the handler with a Body whose Read fails with an error matching
// ErrInvalidBody: no stream of any coding is empty, and failing on Read
// rather than up front leaves a handler that does not read unaffected.
//
// The decoded request is a shallow copy with a cloned header, without
// Content-Encoding and Content-Length and with ContentLength -1; r itself is
// never modified. Decoders are taken from the pools on the first Read, so a
// handler that answers without reading pays for none and a stream's header is
// read only when the handler asks for the body. Exceeding a limit has the
// connection closed on HTTP/1.x (see decodedBody.tooLarge); w is best the
// ResponseWriter the server gave, which closes it even after the header
// has gone out.
//
// A request without Content-Encoding, or any request when request decoding
// is off (WithRequestDecoding), is returned as it is, without allocating.
func (m *Middleware) decodeRequest(w http.ResponseWriter, r *http.Request, values []string) (*http.Request, func(), bool) {
	if len(values) == 0 || !m.decoding.enabled {
		return r, nil, true
	}
	if r.Body == nil {
		// Nothing a handler could read.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	var codings [maxContentCodings]string
	n := 0
	last := ""    // the last coding named: the first to undo
	refusal := "" // why the codings cannot be undone
	for token := range contentCodings(values) {
		last = token
		coding, ok := writers.Canonical(token)
		if !ok || m.decoding.decoders[coding] == nil {
			refusal = "unsupported Content-Encoding"
			break
		}
		if n == len(codings) {
			refusal = "too many Content-Encoding layers"
			break
		}
		codings[n] = coding
		last = coding
		n++
	}
	if last == "" {
		// identity only: the body is already what it claims to be.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	if r.Body == http.NoBody || r.ContentLength == 0 {
		// An empty body, as servers report one: not a stream in any
		// coding. Reading it fails; nothing is refused up front, so a
		// handler that does not read is unaffected.
		e := new(emptyRequest)
		e.body.coding = last
		copyWithoutEncoding(&e.req, r, true)
		e.req.Body = &e.body
		return &e.req, nil, true
	}
	if refusal != "" {
		unsupportedCoding(w, refusal)
		return nil, nil, false
	}
	inLimit := compressedLimit(m.decoding.limit)
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
	*b = decodedBody{w: w, http1: r.ProtoMajor == 1, ctx: r.Context(), dec: &m.decoding, raw: r.Body, n: n, limit: m.decoding.limit, left: m.decoding.limit, inLimit: inLimit}
	b.observe = m.observe // observer hook (observe.go)
	for i := range n {
		// Content-Encoding lists codings in the order applied; undo the
		// last one first.
		coding := codings[n-1-i]
		b.initLayer(i, coding, coding, m.decoding.decoders[coding], nil)
	}
	copyWithoutEncoding(&d.req, r, true)
	d.req.Body = b
	return &d.req, b.release, true
}

// emptyRequest is the request copy with an empty encoded body, in one
// allocation.
type emptyRequest struct {
	req  http.Request
	body emptyBody
}

// emptyBody is an empty body that claims a coding other than identity.
type emptyBody struct{ coding string }

// Read fails with an error matching ErrInvalidBody and io.ErrUnexpectedEOF,
// as a body that ended before its stream began.
func (b *emptyBody) Read([]byte) (int, error) {
	return 0, &invalidBodyError{coding: b.coding, err: io.ErrUnexpectedEOF}
}

// Close does nothing: the server closes the body that arrived.
func (b *emptyBody) Close() error { return nil }

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

// initLayer sets up layer i of b to undo coding with a decoder of kind (the
// codec: coding itself, or zstd for dcz and br for dcb), taken from decoders
// or, for a dictionary coding, built for dict.
func (b *decodedBody) initLayer(i int, coding, kind string, decoders *pool.Decoders, dict *clientDict) {
	l := &b.layers[i]
	*l = layer{coding: coding, kind: kind, decoders: decoders, dict: dict, in: input{body: b, layer: l, left: b.inLimit, inner: i > 0}}
}

// tooLarge returns the error http.MaxBytesReader returns past its limit. On
// a server's request body (w is set) it first tells the server to close the
// connection, since the rest of the body will not be read. Two ways, since
// either alone can miss:
//
//   - a throwaway http.MaxBytesReader limited to 0 bytes and offered 1 calls
//     the hook only the server's own ResponseWriter has, which closes the
//     connection even after the header has gone out; behind a middleware
//     that wraps the ResponseWriter the hook is out of reach;
//   - on HTTP/1.x, Connection: close in the response header, which works
//     through any wrapper as long as the header has not been sent (setting
//     it later changes nothing). Never on HTTP/2, whose server takes it as
//     an order to shut down every stream of the connection: a stream whose
//     body is not read is reset on its own.
//
// The header is set from the goroutine calling Read: a handler that reads
// the body in one goroutine while writing the header in another must
// synchronise the two, as for any use of its ResponseWriter.
//
// The limits themselves are counted here, so a body that stays within them
// allocates no reader.
func (b *decodedBody) tooLarge(limit int64) error {
	if b.w == nil {
		// A client's response body: closing it drops the connection.
		return &responseTooLargeError{err: &http.MaxBytesError{Limit: limit}}
	}
	_, _ = http.MaxBytesReader(b.w, io.NopCloser(strings.NewReader("!")), 0).Read(make([]byte, 1))
	if b.http1 {
		b.w.Header().Set("Connection", "close")
	}
	return &http.MaxBytesError{Limit: limit}
}

// decodedBody is the Body of a decoded request, or, inside a Transport's
// response body, of a decoded response. Its layers each undo one coding,
// reading from the one before; layer 0 reads the body that arrived.
//
// The work a body can cause is bounded across layers: layer 0 reads at most
// compressedLimit(limit) bytes, an inner layer at most 1/64 more than it
// produces plus innerSlack, and the handler gets at most limit. So the bytes
// all layers produce together stay under about twice the cap plus 256 KiB,
// and each layer reads no more than the one after it is allowed to turn
// into output: a small body cannot make an inner layer chew through
// megabytes of blocks that decode to nothing.
//
// The pooled decoders go back exactly once: when the body has been read to
// its end, or when it is closed or the handler returns, whichever comes
// first. A Read may still be running then (a handler that left a goroutine
// reading): the decoders go back when it ends, never while in use, so one
// request's decoder can never be reading another's bytes.
type decodedBody struct {
	readMu sync.Mutex // serialises Read, which touches the layers

	mu       sync.Mutex // guards the three flags below
	reading  bool       // a Read is using the decoders
	closed   bool       // Close or release has run; no more reads
	released bool       // the decoders are back in their pools

	// The server's side only: nil and false in a Transport.
	w     http.ResponseWriter
	http1 bool // the request came over HTTP/1.x

	response bool // a Transport's response body: errors say so
	ctx      context.Context
	dec      *decoding
	raw      io.ReadCloser
	limit    int64 // cap on the decoded bytes
	inLimit  int64 // cap on the bytes each layer reads

	// Touched by Read only, under readMu.
	started bool
	eof     bool      // the decoded body ended; the decoders can go
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

// Read returns decoded bytes. It fails with ErrDecoderBusy when the decoder
// budget stays spent, with *http.MaxBytesError beyond the
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
	if b.closed || b.eof {
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
		if err == io.EOF {
			// Every layer has ended and checked its input's end: the
			// decoders are done, and later reads see io.EOF again.
			b.eof = true
			b.err = io.EOF
		}
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = b.tooLarge(b.limit)
	return n, b.err
}

// start takes a decoder for each layer, after charging the budget for it.
// A br layer's charge depends on its window, so the first byte of its
// stream is read first and handed to the decoder after. Getting a decoder
// may read the stream's header, so it can fail like a Read. A dictionary
// coding's header (its magic number and the dictionary's hash) is read and
// checked before anything else.
func (b *decodedBody) start() error {
	var src io.Reader = b.raw
	for i := range b.n {
		l := &b.layers[i]
		l.in.r = src
		if l.dict != nil {
			if err := l.dict.checkHeader(l.coding, &l.in); err != nil {
				return l.fail(err)
			}
		}
		var window int64
		if l.kind == writers.Brotli {
			// Into the input itself: a local buffer would escape.
			if _, err := io.ReadFull(&l.in, l.in.pending[:]); err != nil {
				return l.fail(err)
			}
			l.in.hasPending = true
			window = writers.BrotliWindow(l.in.pending[0])
		}
		if l.dict != nil && l.kind == writers.Zstd {
			// dcz: charged at once for the largest window allowed.
			window = l.dict.zstdWindow()
		}
		charged, err := b.dec.acquire(b.ctx, charge(l.kind, window))
		if err != nil {
			return err
		}
		l.charge = charged
		if l.dict != nil {
			d, err := l.dict.newDecoder(l.kind, &l.in)
			if err != nil {
				return l.fail(err)
			}
			l.dec = d
			src = l
			continue
		}
		d, err := l.decoders.Get(&l.in)
		if err != nil {
			if err == io.EOF {
				// The header itself is missing.
				err = io.ErrUnexpectedEOF
			}
			return l.fail(err)
		}
		l.dec = d
		if err := l.topUp(); err != nil {
			return err
		}
		src = l
	}
	b.top = src
	return nil
}

// topUp charges the budget for the window the layer's decoder has met
// beyond what was charged: a pooled decoder's, or a zstd frame's whose
// header has just gone by. zstd decoders read a frame's header and its
// blocks in separate reads, so the input calls this before handing over
// the first block of a frame, before the decoder allocates its window.
// (br's window is charged from the stream's first byte before the decoder
// reads anything.)
func (l *layer) topUp() error {
	b := l.in.body
	need := min(charge(l.kind, l.dec.Window()), b.dec.memory)
	if need <= l.charge || l.kind == writers.Brotli || l.dict != nil {
		return nil
	}
	more, err := b.dec.acquire(b.ctx, need-l.charge)
	l.charge += more
	return err
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
		switch d := l.dec.(type) {
		case *pool.Decoder:
			l.decoders.Put(d)
		case *dictDecoder:
			d.close()
		}
		l.dec = nil
		if l.charge > 0 {
			b.dec.budget.Release(l.charge)
			l.charge = 0
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
	coding   string         // as named in Content-Encoding, canonical
	kind     string         // the codec: coding, or zstd for dcz and br for dcb
	decoders *pool.Decoders // nil for a dictionary coding
	dict     *clientDict    // for dcz and dcb
	dec      layerDecoder   // a *pool.Decoder, or a *dictDecoder
	charge   int64          // bytes of the budget held for dec
	in       input
	err      error
}

// layerDecoder is what a layer reads from: a pooled decoder, or one built
// for a dictionary.
type layerDecoder interface {
	io.Reader
	Window() int64
}

func (l *layer) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.dec.Read(p)
	l.in.produced += int64(n)
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
		err = &invalidBodyError{coding: l.coding, response: l.in.body.response, err: io.ErrUnexpectedEOF}
	default:
		err = &invalidBodyError{coding: l.coding, response: l.in.body.response, err: err}
	}
	l.err = err
	return err
}

// input is what a layer's decoder reads: the layer before it, or the body
// that arrived, limited to body.inLimit bytes. An inner layer's input is
// limited as well by what the layer has produced: produced + produced/64 +
// innerSlack. It keeps what the decoder cannot be relied on to pass on
// intact: whether any bytes came (left is below the limit), and the first
// error, which is sticky.
type input struct {
	body     *decodedBody
	layer    *layer // the layer reading this input
	r        io.Reader
	left     int64
	inner    bool  // r is another layer
	produced int64 // bytes the layer reading this input has returned
	err      error

	// A byte read ahead (a br stream's first, for its window) and not yet
	// passed on.
	pending    [1]byte
	hasPending bool
}

func (in *input) Read(p []byte) (int, error) {
	if in.err != nil {
		return 0, in.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if in.hasPending {
		p[0], in.hasPending = in.pending[0], false
		return 1, nil
	}
	if in.layer.dec != nil && in.layer.coding == writers.Zstd {
		// (Not dcz: charged in full up front.)
		if err := in.layer.topUp(); err != nil {
			in.err = err
			return 0, err
		}
	}
	allowed := in.left
	if in.inner {
		read := in.body.inLimit - in.left
		allowed = min(allowed, in.produced+in.produced/64+innerSlack-read)
	}
	if int64(len(p))-1 > allowed {
		p = p[:allowed+1]
	}
	n, err := in.r.Read(p)
	if int64(n) > allowed {
		n = int(allowed)
		in.left -= allowed
		in.err = in.body.tooLarge(in.body.inLimit)
		return n, in.err
	}
	in.left -= int64(n)
	if err != nil && err != io.EOF {
		in.err = err
	}
	return n, err
}

// responseTooLargeError is the error of a Transport's response body past a
// limit: an *http.MaxBytesError for errors.As, whose own message speaks of
// a request body.
type responseTooLargeError struct {
	err *http.MaxBytesError
}

func (e *responseTooLargeError) Error() string {
	return "squeeze: response body too large (over " + strconv.FormatInt(e.err.Limit, 10) + " bytes)"
}

func (e *responseTooLargeError) Unwrap() error { return e.err }

// invalidBodyError matches both ErrInvalidBody and the codec's error.
type invalidBodyError struct {
	coding   string
	response bool // a Transport's response body, not a request body
	err      error
}

func (e *invalidBodyError) Error() string {
	body := " request body: "
	if e.response {
		body = " response body: "
	}
	return "squeeze: invalid " + e.coding + body + e.err.Error()
}

func (e *invalidBodyError) Unwrap() []error { return []error{ErrInvalidBody, e.err} }
