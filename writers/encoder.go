package writers

import (
	"errors"
	"fmt"
	"io"

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
	case Gzip, Deflate:
		// One gzip member or zlib stream whose deflate stream may hold
		// isolated segments (segment.go); without one, the bytes
		// klauspost/compress's gzip and zlib writers make.
		return encoderOrError(newFramedDeflate(coding == Gzip, level))
	case Zstd:
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdEncoderWindow),
			zstd.WithLowerEncoderMem(true),
			// A stream with no input must still be a valid frame: a
			// flushed-but-empty response carries Content-Encoding: zstd.
			zstd.WithZeroFrames(true),
		)
		if err != nil {
			return nil, fmt.Errorf("writers: %w", err)
		}
		return &zstdEncoder{Encoder: enc}, nil
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

var errWriteAfterClose = errors.New("writers: write after Close")
