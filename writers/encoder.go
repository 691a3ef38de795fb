package writers

import (
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Encoder compresses what is written to it into the writer given to Reset.
//
// Flush writes out everything written so far as a decodable prefix of the
// stream, so a client can decode it before the stream ends. Close completes
// the stream; it does not close the destination. Reset discards all state,
// keeps the allocated tables and buffers, and directs output to w.
type Encoder interface {
	io.Writer
	Flush() error
	Close() error
	Reset(w io.Writer)
}

// NewEncoder returns an encoder for coding at level, writing to nothing until
// Reset names a destination. coding must be canonical (see Canonical) and
// level valid for it (see ValidateLevel).
//
// zstd encoders run with concurrency 1, so they start no goroutines, and with
// a window well under the 8 MB that RFC 9659 allows for HTTP. br encoders use
// a window sized for HTTP bodies rather than the codec's 4 MiB default.
func NewEncoder(coding string, level int) (Encoder, error) {
	if err := ValidateLevel(coding, level); err != nil {
		return nil, err
	}
	switch coding {
	case Gzip:
		return gzip.NewWriterLevel(nil, level)
	case Deflate:
		return zlib.NewWriterLevel(nil, level)
	case Zstd:
		return zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdEncoderWindow),
			zstd.WithLowerEncoderMem(true),
			// A stream with no input must still be a valid frame: a
			// flushed-but-empty response carries Content-Encoding: zstd.
			zstd.WithZeroFrames(true),
		)
	case Brotli:
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{
			Quality: level,
			LGWin:   brotliEncoderWindowBits,
		}), nil
	}
	// Unreachable: ValidateLevel rejected every other coding.
	return nil, fmt.Errorf("writers: no encoder for %q", coding)
}
