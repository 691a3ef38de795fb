package writers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"
)

// Encoder compresses what is written to it into the writer given to Reset.
//
// Flush writes out everything written so far as a decodable prefix of the
// stream, so a client can decode it before the stream ends. Close completes
// the stream; it does not close the destination. Reset discards all state,
// keeps the allocated tables and buffers, and directs output to w. Reset in
// mid-stream abandons the old stream: nothing more is written to its
// destination. An Encoder is not safe for concurrent use.
type Encoder interface {
	io.Writer
	Flush() error
	Close() error
	Reset(w io.Writer)
}

// NewEncoder returns an encoder for coding at level, writing to nothing until
// Reset names a destination. coding must be canonical (see [Canonical]) and
// level valid for it: otherwise the error matches [ErrUnknownCoding] or is a
// [*LevelError] (see [ValidateLevel]).
//
// zstd encoders run with concurrency 1, so they start no goroutines, and with
// a 128 KiB window, far under the 8 MB that RFC 9659 allows for HTTP. br
// encoders use a 256 KiB window rather than the codec's 4 MiB default. Both
// bound the memory an in-flight response holds (see
// docs/internals.md#encoders-windows-and-levels).
func NewEncoder(coding string, level int) (Encoder, error) {
	if err := ValidateLevel(coding, level); err != nil {
		return nil, err
	}
	switch coding {
	case Gzip:
		return encoderOrError(gzip.NewWriterLevel(nil, level))
	case Deflate:
		if level == gzip.StatelessCompression {
			// zlib.NewWriterLevel stops at -2 (Huffman only).
			return &statelessZlib{adler: adler32.New()}, nil
		}
		return encoderOrError(zlib.NewWriterLevel(nil, level))
	case Zstd:
		return encoderOrError(zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdEncoderWindow),
			zstd.WithLowerEncoderMem(true),
			// A stream with no input must still be a valid frame: a
			// flushed-but-empty response carries Content-Encoding: zstd.
			zstd.WithZeroFrames(true),
		))
	case Brotli:
		// go-brrr encodes the same bytes as andybalholm/brotli, faster
		// (docs/internals.md#encoders-windows-and-levels); andybalholm/brotli
		// stays the decoder of request bodies.
		return encoderOrError(brrr.NewWriterOptions(nil, level, brrr.WriterOptions{
			LGWin: brotliEncoderWindowBits,
		}))
	}
	// Unreachable: ValidateLevel rejected every other coding.
	return nil, unknownCoding(coding)
}

// encoderOrError keeps a codec's typed nil out of the Encoder interface: a
// failed constructor must yield a nil Encoder, not a non-nil one holding nil.
func encoderOrError[E Encoder](e E, err error) (Encoder, error) {
	if err != nil {
		return nil, fmt.Errorf("writers: %w", err)
	}
	return e, nil
}

// statelessZlib wraps klauspost/compress's stateless deflate in the zlib
// framing of RFC 1950, the one level gzip offers that zlib.NewWriterLevel
// does not. Like gzip at that level it keeps no history between writes: an
// in-flight response holds a few bytes rather than a window and hash tables,
// every Write leaves the stream flushed, and the ratio depends on write sizes.
type statelessZlib struct {
	w           io.Writer
	adler       hash.Hash32
	wroteHeader bool
	closed      bool
	err         error
	// scratch keeps the header and checksum off the heap: a slice of a
	// local array passed to an io.Writer escapes.
	scratch [4]byte
}

var errWriteAfterClose = errors.New("writers: write after Close")

func (z *statelessZlib) writeHeader() error {
	if z.wroteHeader || z.err != nil {
		return z.err
	}
	z.wroteHeader = true
	// CMF 0x78 is deflate with a 32 KiB window; FLG 0x01 is FLEVEL 0
	// ("fastest") plus the check bits that make the pair a multiple of 31.
	z.scratch[0], z.scratch[1] = 0x78, 0x01
	_, z.err = z.w.Write(z.scratch[:2])
	return z.err
}

func (z *statelessZlib) Write(p []byte) (int, error) {
	if z.closed {
		return 0, errWriteAfterClose
	}
	if err := z.writeHeader(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if z.err = flate.StatelessDeflate(z.w, p, false, nil); z.err != nil {
		return 0, z.err
	}
	z.adler.Write(p)
	return len(p), nil
}

// Flush writes the header if nothing else has been written; stateless
// output is flushed by every Write.
func (z *statelessZlib) Flush() error {
	if z.closed {
		return z.err
	}
	return z.writeHeader()
}

func (z *statelessZlib) Close() error {
	if z.closed {
		return z.err
	}
	z.closed = true
	if err := z.writeHeader(); err != nil {
		return err
	}
	if z.err = flate.StatelessDeflate(z.w, nil, true, nil); z.err != nil {
		return z.err
	}
	binary.BigEndian.PutUint32(z.scratch[:], z.adler.Sum32())
	_, z.err = z.w.Write(z.scratch[:])
	return z.err
}

func (z *statelessZlib) Reset(w io.Writer) {
	z.adler.Reset()
	*z = statelessZlib{w: w, adler: z.adler}
}
