// Package decode undoes the content codings of HTTP bodies under limits:
// request bodies for squeeze's Middleware and response bodies for its
// Transport. A [Decoders] holds the pooled decoders of each coding and a
// memory budget they are charged against; a [Body] undoes up to
// [MaxCodings] stacked codings, last applied first, within [Limits]: the
// decoded size, the compressed input of each layer, the memory the decoders
// may hold and the wait for room in that budget. dcz and dcb (RFC 9842)
// are undone with a [Dictionary] the caller offered.
//
// Every failure is one the caller can tell apart: [ErrInvalidBody] for
// bytes that are not a valid stream, [ErrBusy] for a spent budget, an
// [*http.MaxBytesError] past a limit, and the body's own error.
package decode

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

	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// ErrInvalidBody is wrapped by the error of a Read on a body whose bytes
// are not a valid stream of their Content-Encoding: corrupt, truncated,
// empty, followed by other bytes, asking for more than the decoder grants
// (a zstd window over 8 MB), or, for dcz and dcb, compressed with another
// dictionary than the one offered. The error also wraps the codec's own
// error, and its message says which body it was, request or response.
var ErrInvalidBody = errors.New("squeeze: body is not valid for its Content-Encoding")

// ErrBusy is the error of a Read when the memory budget for decoders stays
// spent for the wait Limits allow, or the body's context ends during that
// wait. Nothing is wrong with the body.
var ErrBusy = errors.New("squeeze: too many request bodies being decoded; retry later")

// DefaultMemory is the decoder memory budget when Limits.Memory is 0: room
// for seven br streams with the largest window (16 MiB, charged 32 MiB),
// thirty zstd ones at 8 MB, or four thousand gzip ones or zstd and br ones
// at the windows squeeze's own encoders use (128 and 256 KiB) at once.
const DefaultMemory = 256 << 20

// DefaultWait is how long a Read waits for room in the budget when
// Limits.Wait is 0.
const DefaultWait = 200 * time.Millisecond

// MaxCodings is the most codings a body may stack, counting
// neither identity nor empty list elements. Real clients apply one; two
// leaves room for a proxy that adds its own. Each layer holds a pooled
// decoder (up to 16 MiB of window for br) and multiplies the work a small
// body can demand, so a deeper stack is refused with 415.
const MaxCodings = 2

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

// Limits are what a body's decoding may cost.
type Limits struct {
	// MaxSize caps the decoded bytes of a body; it must be positive. Each
	// layer's compressed input is capped at CompressedLimit(MaxSize).
	MaxSize int64
	// Memory is the budget of the memory all decoders of a Decoders may
	// hold at once, charged per layer as the windows they meet allow; 0
	// means DefaultMemory.
	Memory int64
	// Wait bounds how long a Read waits for room in that budget before it
	// fails with ErrBusy; 0 means DefaultWait.
	Wait time.Duration
}

// Budget charges per layer; see the Middleware's WithDecoderMemory for the
// reasons.
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

// Decoders holds the decoder pools of every coding squeeze implements and
// the memory budget they are charged against. It is safe for concurrent
// use.
type Decoders struct {
	limits Limits
	pools  map[string]*pool.Decoders
	budget *semaphore.Weighted // of limits.Memory bytes
}

// New returns the decoders for limits. It fails when MaxSize is not
// positive, Memory or Wait is negative, or a pool cannot be built.
func New(limits Limits) (*Decoders, error) {
	if limits.MaxSize <= 0 || limits.Memory < 0 || limits.Wait < 0 {
		return nil, fmt.Errorf("squeeze: decode limits %+v: the size must be positive, the memory and the wait not negative", limits)
	}
	if limits.Memory == 0 {
		limits.Memory = DefaultMemory
	}
	if limits.Wait == 0 {
		limits.Wait = DefaultWait
	}
	d := &Decoders{limits: limits, budget: semaphore.NewWeighted(limits.Memory), pools: map[string]*pool.Decoders{}}
	for _, coding := range writers.Codings() {
		p, err := pool.NewDecoders(coding)
		if err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
		d.pools[coding] = p
	}
	return d, nil
}

// Limits returns the limits d applies, defaults filled in.
func (d *Decoders) Limits() Limits { return d.limits }

// Undoes reports whether d has decoders for coding, a canonical name.
func (d *Decoders) Undoes(coding string) bool { return d.pools[coding] != nil }

// acquire takes n bytes of the budget (all of it when n is more), waiting
// up to the Wait of its Limits within ctx. It reports how much it took.
func (d *Decoders) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, d.limits.Memory)
	if d.budget.TryAcquire(n) {
		return n, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.limits.Wait)
	defer cancel()
	if err := d.budget.Acquire(ctx, n); err != nil {
		return 0, ErrBusy
	}
	return n, nil
}

// CompressedLimit returns the most bytes any one layer of a body may feed
// its decoder when the decoded body is capped at limit.
func CompressedLimit(limit int64) int64 {
	margin := limit/64 + codecOverhead
	if limit > math.MaxInt64-margin {
		return math.MaxInt64
	}
	return limit + margin
}

// Stats is what a decoded body reports when its decoders are released.
type Stats struct {
	// Coding names the codings undone as Content-Encoding named them:
	// "gzip", or "gzip, br" for a stack.
	Coding string
	// Decoded is the decoded bytes read from the body; Compressed the
	// bytes its first layer read from the body that arrived.
	Decoded, Compressed int64
	// Elapsed is the time spent in Read, measured only when a report
	// func was given.
	Elapsed time.Duration
}

// NewResponseBody returns the decoded body of a response whose body raw
// carries codings, as Content-Encoding lists them (in the order applied;
// at most MaxCodings, each canonical, and one of DCZ and DCB only with
// dict). The body's Read fails as Body describes, with errors that speak
// of a response body; its Close closes raw. ctx bounds the wait for room
// in the budget.
func (d *Decoders) NewResponseBody(ctx context.Context, raw io.ReadCloser, codings []string, dict Dictionary) *Body {
	n := len(codings)
	limit := d.limits.MaxSize
	b := &Body{response: true, ctx: ctx, dec: d, raw: raw, n: n, limit: limit, left: limit, inLimit: CompressedLimit(limit), dict: dict}
	for i := range n {
		coding := codings[n-1-i]
		switch coding {
		case DCZ:
			b.initLayer(i, coding, writers.Zstd, nil, &b.dict)
		case DCB:
			b.initLayer(i, coding, writers.Brotli, nil, &b.dict)
		default:
			b.initLayer(i, coding, coding, d.pools[coding], nil)
		}
	}
	return b
}

// initLayer sets up layer i of b to undo coding with a decoder of kind (the
// codec: coding itself, or zstd for dcz and br for dcb), taken from decoders
// or, for a dictionary coding, built for dict.
func (b *Body) initLayer(i int, coding, kind string, decoders *pool.Decoders, dict *Dictionary) {
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
func (b *Body) tooLarge(limit int64) error {
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

// Body is the body of a decoded request (see Decoders.Request), or of a
// decoded response (see Decoders.NewResponseBody). Its layers each undo one coding,
// reading from the one before; layer 0 reads the body that arrived.
//
// The work a body can cause is bounded across layers: layer 0 reads at most
// CompressedLimit(limit) bytes, an inner layer at most 1/64 more than it
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
type Body struct {
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
	dec      *Decoders
	raw      io.ReadCloser
	limit    int64      // cap on the decoded bytes
	inLimit  int64      // cap on the bytes each layer reads
	dict     Dictionary // for the layers of dcz and dcb

	// Touched by Read only, under readMu.
	started bool
	eof     bool      // the decoded body ended; the decoders can go
	top     io.Reader // the last layer
	left    int64     // decoded bytes still allowed
	err     error     // sticky: why starting failed, or the cap
	n       int
	layers  [MaxCodings]layer

	// report gets the body's Stats once, when the decoders are released;
	// elapsed is the time spent in read, measured only when report is set.
	report  func(Stats)
	elapsed time.Duration
}

// Read returns decoded bytes. It fails with ErrBusy when the decoder
// budget stays spent, with *http.MaxBytesError beyond the
// decoded cap or when any layer's input exceeds its limit, with an error
// matching ErrInvalidBody when the stream is not valid, with the body's own
// error when reading it fails, and with http.ErrBodyReadAfterClose once the
// body has been closed or the handler has returned.
func (b *Body) Read(p []byte) (int, error) {
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
	if b.report != nil {
		t0 = time.Now()
	}
	n, err := b.read(p)
	if b.report != nil {
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

func (b *Body) read(p []byte) (int, error) {
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
func (b *Body) start() error {
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
				if err == io.EOF {
					// No br stream is empty, not even after a dcb
					// header: the input is cut short.
					err = io.ErrUnexpectedEOF
				}
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
	need := min(charge(l.kind, l.dec.Window()), b.dec.limits.Memory)
	if need <= l.charge || l.kind == writers.Brotli || l.dict != nil {
		return nil
	}
	more, err := b.dec.acquire(b.ctx, need-l.charge)
	l.charge += more
	return err
}

// Close releases the decoders and closes the body that arrived. Reads after
// Close fail; a second Close does nothing.
func (b *Body) Close() error {
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
func (b *Body) release() {
	b.mu.Lock()
	b.closed = true
	if !b.reading {
		b.releaseLocked()
	}
	b.mu.Unlock()
}

func (b *Body) releaseLocked() {
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
	if b.report != nil { // one report per decoded body
		b.report(b.stats())
	}
}

// layer undoes one coding. Its errors are sticky, so a decoder is never
// asked to go on after it has failed.
type layer struct {
	coding   string         // as named in Content-Encoding, canonical
	kind     string         // the codec: coding, or zstd for dcz and br for dcb
	decoders *pool.Decoders // nil for a dictionary coding
	dict     *Dictionary    // for dcz and dcb
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
	body     *Body
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

// stats returns what the body reports once released. Stacked codings, rare,
// cost an allocation for their name.
func (b *Body) stats() Stats {
	st := Stats{Coding: b.layers[0].coding, Decoded: b.limit - b.left, Elapsed: b.elapsed}
	st.Compressed = b.inLimit - b.layers[0].in.left
	for i := 1; i < b.n; i++ {
		st.Coding = b.layers[i].coding + ", " + st.Coding
	}
	return st
}

// Idle reports whether no body holds any of d's memory budget: every
// decoder charged to it has been released.
func (d *Decoders) Idle() bool {
	if !d.budget.TryAcquire(d.limits.Memory) {
		return false
	}
	d.budget.Release(d.limits.Memory)
	return true
}
