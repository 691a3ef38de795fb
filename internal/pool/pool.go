// Package pool keeps the expensive parts of compression for reuse:
// [Encoders] and [Decoders] of one coding (and, for encoders, one level), and
// fixed-size byte [Buffers].
//
// A zstd or brotli encoder holds megabytes of tables; building one per
// stream costs more than compressing a small one. Any program that
// compresses many streams at once, from many goroutines, can share one pool
// per coding: an HTTP middleware, a database driver compressing values, a log
// shipper compressing batches. The encoders and decoders are those of
// package [github.com/squeezehttp/squeeze/writers], and nothing here depends
// on net/http.
//
// Each pool is built on [sync.Pool], so there is no lock shared across
// goroutines and idle objects are released under memory pressure, but for
// the one idle encoder a pool of [NewEncodersFuncKeepingOne] keeps. A value
// handed out by Get belongs to the caller alone until it is given back with
// Put. Put resets the value before pooling it, so nothing from one stream can
// reach the next, and refuses a value that is already in the pool.
package pool

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/squeezehttp/squeeze/writers"
)

// ErrInvalidSize is matched by the error [NewBuffers] returns for a size that
// is not positive. Test for it with [errors.Is].
var ErrInvalidSize = errors.New("pool: buffer size must be positive")

// Encoder is a [writers.Encoder] lent by an [Encoders] pool. It belongs to
// the caller from Get until Put.
type Encoder struct {
	writers.Encoder
	pooled bool
}

// Encoders pools the encoders of one coding at one level.
type Encoders struct {
	coding string
	level  int
	// build makes a new encoder for pools made by [NewEncodersFunc].
	build func() (writers.Encoder, error)
	p     sync.Pool
	// spare, for pools made by [NewEncodersFuncKeepingOne], holds an idle
	// encoder that the garbage collector does not take, nil when none is.
	spare *atomic.Pointer[Encoder]
}

// NewEncodersFunc returns a pool of the encoders build makes, for encoders
// that [writers.NewEncoder] cannot describe, such as the dictionary codings
// of RFC 9842, whose encoders hold one dictionary each. coding is what
// [Encoders.Coding] reports. It calls build once at once, so an encoder that
// cannot be built is reported here.
func NewEncodersFunc(coding string, build func() (writers.Encoder, error)) (*Encoders, error) {
	e, err := build()
	if err != nil {
		return nil, err
	}
	p := &Encoders{coding: coding, build: build}
	p.p.Put(&Encoder{Encoder: e, pooled: true})
	return p, nil
}

// NewEncodersFuncKeepingOne is [NewEncodersFunc] for encoders that cost
// much more to build than to reset, such as a zstd encoder of a raw
// dictionary, which hashes all of the dictionary into tables of its own:
// the pool keeps one idle encoder whatever the garbage collector does (a
// [sync.Pool] lets it take every idle one), so that a pool used less often
// than the collector runs still lends a built encoder. It holds that one
// encoder's memory for as long as the pool lives.
func NewEncodersFuncKeepingOne(coding string, build func() (writers.Encoder, error)) (*Encoders, error) {
	e, err := build()
	if err != nil {
		return nil, err
	}
	p := &Encoders{coding: coding, build: build, spare: new(atomic.Pointer[Encoder])}
	p.spare.Store(&Encoder{Encoder: e, pooled: true})
	return p, nil
}

// NewEncoders returns a pool of encoders for coding at level, as
// [writers.NewEncoder] takes them. It builds one encoder at once, so an
// invalid coding or level is reported here, not by the first Get: the error
// matches [writers.ErrUnknownCoding] or [writers.ErrInvalidLevel].
func NewEncoders(coding string, level int) (*Encoders, error) {
	e, err := writers.NewEncoder(coding, level)
	if err != nil {
		return nil, err
	}
	p := &Encoders{coding: coding, level: level}
	p.p.Put(&Encoder{Encoder: e, pooled: true})
	return p, nil
}

// Coding returns the coding of the pool's encoders, the value of the
// Content-Encoding header field for what they write.
func (p *Encoders) Coding() string { return p.coding }

// Level returns the level of the pool's encoders, or 0 for a pool made by
// [NewEncodersFunc].
func (p *Encoders) Level() int { return p.level }

// Get returns an encoder writing to w, taken from the pool or built anew.
func (p *Encoders) Get(w io.Writer) (*Encoder, error) {
	var e *Encoder
	if p.spare != nil {
		e = p.spare.Swap(nil)
	}
	if e == nil {
		e, _ = p.p.Get().(*Encoder)
	}
	if e == nil {
		var enc writers.Encoder
		var err error
		if p.build != nil {
			if enc, err = p.build(); err != nil {
				return nil, fmt.Errorf("pool: %s: %w", p.coding, err)
			}
		} else if enc, err = writers.NewEncoder(p.coding, p.level); err != nil {
			return nil, fmt.Errorf("pool: %s level %d: %w", p.coding, p.level, err)
		}
		e = &Encoder{Encoder: enc}
	}
	e.pooled = false
	e.Reset(w)
	return e, nil
}

// Put resets e, dropping its reference to the last destination, and keeps it
// for reuse. Whatever e held of an unfinished stream is discarded, not
// written. Put panics if e is already in the pool: a second Put would let
// two callers share one encoder. (Once another Get has taken e out again, a
// late second Put can no longer be told from a first one.)
func (p *Encoders) Put(e *Encoder) {
	if e.pooled {
		panic("pool: encoder put back twice")
	}
	e.Reset(io.Discard)
	e.pooled = true
	if p.spare != nil && p.spare.CompareAndSwap(nil, e) {
		return
	}
	p.p.Put(e)
}

// Decoder is a [writers.Decoder] lent by a [Decoders] pool. It belongs to the
// caller from Get until Put.
type Decoder struct {
	writers.Decoder
	pooled bool
}

// Decoders pools the decoders of one coding.
type Decoders struct {
	coding string
	p      sync.Pool
}

// NewDecoders returns a pool of decoders for coding, as [writers.NewDecoder]
// takes it. It builds one decoder at once, so an invalid coding is reported
// here: the error matches [writers.ErrUnknownCoding].
func NewDecoders(coding string) (*Decoders, error) {
	d, err := writers.NewDecoder(coding)
	if err != nil {
		return nil, err
	}
	p := &Decoders{coding: coding}
	p.p.Put(&Decoder{Decoder: d, pooled: true})
	return p, nil
}

// Get returns a decoder reading from r, taken from the pool or built anew.
// gzip and deflate decoders read the stream header here: when it is corrupt
// or missing, the decoder goes straight back to the pool and Get returns the
// codec's error (wrapping io.ErrUnexpectedEOF for an empty or cut-off
// header, never a bare io.EOF). zstd and br report a bad stream from Read.
func (p *Decoders) Get(r io.Reader) (*Decoder, error) {
	d, _ := p.p.Get().(*Decoder)
	if d == nil {
		dec, err := writers.NewDecoder(p.coding)
		if err != nil {
			return nil, fmt.Errorf("pool: %s: %w", p.coding, err)
		}
		d = &Decoder{Decoder: dec}
	}
	d.pooled = false
	if err := d.Reset(r); err != nil {
		p.Put(d)
		return nil, err
	}
	return d, nil
}

// MaxPooledWindow is the largest window (see [writers.Decoder]) a
// decoder may have met and still be pooled by Put. Codecs keep the history
// buffer of the largest window they met, so a pooled decoder would hold on
// to what one stream asked for, as much as the window it declared (the
// figures are in docs/internals.md#request-and-response-decoding). 4 MiB pools
// decoders for the windows common encoders choose (squeeze's own 128 and
// 256 KiB, the zstd tool's 2 MiB at its default level, the brotli tool's
// lgwin 22 for files) and drops those that met more, among them
// klauspost/compress's default 8 MiB for streams over one block; the next
// Get then builds a decoder without that buffer.
const MaxPooledWindow = 4 << 20

// Put detaches d from its source, so the pool keeps no input alive,
// and keeps it for reuse, unless it met a window larger than
// [MaxPooledWindow]: then it is dropped. It panics if d is already in the
// pool.
func (p *Decoders) Put(d *Decoder) {
	if d.pooled {
		panic("pool: decoder put back twice")
	}
	// Reset(nil) cannot fail for these codecs; a decoder that could not be
	// detached is dropped rather than pooled with a live source.
	if err := d.Reset(nil); err != nil {
		return
	}
	if d.Window() > MaxPooledWindow {
		d.pooled = true // a late second Put still panics
		return
	}
	d.pooled = true
	p.p.Put(d)
}

// Buffers pools byte slices of one fixed capacity.
type Buffers struct {
	size int
	p    sync.Pool
}

// NewBuffers returns a pool of buffers of size bytes. A size that is not
// positive is an error matching [ErrInvalidSize].
func NewBuffers(size int) (*Buffers, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w, got %d", ErrInvalidSize, size)
	}
	return &Buffers{size: size}, nil
}

// Size returns the capacity of the pool's buffers.
func (b *Buffers) Size() int { return b.size }

// Get returns an empty buffer with capacity Size. The pointer saves an
// allocation per Put (a slice header stored in an interface escapes).
func (b *Buffers) Get() *[]byte {
	if buf, _ := b.p.Get().(*[]byte); buf != nil {
		return buf
	}
	buf := make([]byte, 0, b.size)
	return &buf
}

// Put empties buf and keeps it for reuse. A buffer whose capacity is not
// Size (one that was grown or cut elsewhere) is dropped, so the pool never
// hands out a buffer larger or smaller than it promises.
func (b *Buffers) Put(buf *[]byte) {
	if cap(*buf) != b.size {
		return
	}
	*buf = (*buf)[:0]
	b.p.Put(buf)
}
