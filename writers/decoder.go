package writers

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Decoder decompresses the stream read from the reader given to Reset.
//
// Reset discards all state, keeps the allocated tables and buffers, and
// starts decoding r. gzip and deflate read the stream header in Reset, so it
// can fail on a corrupt or truncated stream; zstd and br report such a stream
// from Read. A stream that ends before its header or first frame, an empty
// body included, is an error wrapping io.ErrUnexpectedEOF, never a bare
// io.EOF. Bytes after the end of a complete stream (after the last gzip
// member, zstd frame, deflate or br stream) are an error too, never ignored.
// Reset(nil) detaches the decoder from its source, so a pooled
// decoder keeps no request body alive. A Decoder is not safe for concurrent
// use.
type Decoder interface {
	io.Reader
	Reset(r io.Reader) error
}

// ErrDetached is returned by Read on a Decoder that was Reset(nil).
var ErrDetached = errors.New("writers: decoder has no source")

// NewDecoder returns a decoder for coding that reads nothing until Reset
// names a source. coding must be canonical (see Canonical).
//
// zstd decoders run with concurrency 1, so they start no goroutines, and
// refuse frames that declare a window over ZstdMaxWindow. deflate decoders
// accept the zlib-wrapped streams RFC 9110 specifies and, since some senders
// emit them, raw deflate streams too. br decoders accept every window RFC
// 7932 allows (up to 16 MiB); andybalholm/brotli sizes its ring buffer from
// what the stream declares and keeps it for reuse.
func NewDecoder(coding string) (Decoder, error) {
	switch coding {
	case Gzip:
		return &gzipDecoder{}, nil
	case Deflate:
		return &deflateDecoder{}, nil
	case Zstd:
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(ZstdMaxWindow),
			zstd.WithDecoderMaxMemory(ZstdMaxWindow),
			// Always stream: the in-memory fast path would decode a whole
			// buffered body at once, whatever the caller's size cap.
			zstd.WithDecodeBuffersBelow(0),
		)
		if err != nil {
			return nil, fmt.Errorf("writers: zstd decoder: %w", err)
		}
		return &zstdDecoder{d: d}, nil
	case Brotli:
		return &brotliDecoder{r: brotli.NewReader(nil)}, nil
	}
	return nil, unknownCoding(coding)
}

// gzipDecoder reads through a bufio.Reader of its own. gzip.Reader would keep
// a source that is already a flate.Reader (a *bytes.Reader, a *bufio.Reader)
// and has no way to let go of it; ours can be pointed at nil, so Reset(nil)
// releases the body. It also guards the zero gzip.Reader, which panics if
// read before a successful Reset.
type gzipDecoder struct {
	src   *bufio.Reader
	r     gzip.Reader
	ready bool
}

func (d *gzipDecoder) Reset(r io.Reader) error {
	d.ready = false
	if !attach(&d.src, r) {
		return nil
	}
	if err := d.r.Reset(d.src); err != nil {
		return headerError(Gzip, err)
	}
	d.ready = true
	return nil
}

func (d *gzipDecoder) Read(p []byte) (int, error) {
	if !d.ready {
		return 0, ErrDetached
	}
	return d.r.Read(p)
}

// headerError reports a stream that ended before its header as truncated: a
// bare io.EOF from Reset would read as a clean, empty body to a caller that
// treats io.EOF as the end of input.
func headerError(coding string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("writers: %s header: %w", coding, err)
	}
	return err
}

// zstdDecoder counts the bytes its source yields: the zstd decoder reports
// io.EOF for an input with no frame at all, which is a truncated body, not an
// empty one (an empty body compresses to a frame).
type zstdDecoder struct {
	d     *zstd.Decoder
	src   countingReader
	ready bool
}

func (d *zstdDecoder) Reset(r io.Reader) error {
	d.ready = false
	d.src = countingReader{r: r}
	if r == nil {
		return d.d.Reset(nil)
	}
	if err := d.d.Reset(&d.src); err != nil {
		return err
	}
	d.ready = true
	return nil
}

func (d *zstdDecoder) Read(p []byte) (int, error) {
	if !d.ready {
		return 0, ErrDetached
	}
	n, err := d.d.Read(p)
	if err == io.EOF && d.src.n == 0 {
		err = fmt.Errorf("writers: zstd: no frame: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type brotliDecoder struct {
	r     *brotli.Reader
	ready bool
}

func (d *brotliDecoder) Reset(r io.Reader) error {
	d.ready = r != nil
	return d.r.Reset(r)
}

func (d *brotliDecoder) Read(p []byte) (int, error) {
	if !d.ready {
		return 0, ErrDetached
	}
	return d.r.Read(p)
}

// attach points a decoder's buffered source at r, creating it on first use,
// so the buffer is allocated once per decoder and not once per stream. For
// a nil r it detaches the source, so a pooled decoder keeps no body alive,
// and reports false.
func attach(src **bufio.Reader, r io.Reader) bool {
	switch {
	case r == nil:
		if *src != nil {
			(*src).Reset(nil)
		}
		return false
	case *src == nil:
		*src = bufio.NewReaderSize(r, 4096)
	default:
		(*src).Reset(r)
	}
	return true
}

// deflateDecoder looks at the first two bytes to tell a zlib stream from a
// raw deflate one. Its bufio.Reader doubles as the flate.Reader both
// decompressors want, so neither adds a buffer of its own. Neither
// decompressor looks past the end of its stream, so the decoder does: bytes
// after it are an error, as they are for gzip, zstd and br, where they would
// have to be another member or frame.
type deflateDecoder struct {
	src    *bufio.Reader
	zlib   io.ReadCloser
	flate  io.ReadCloser
	active io.Reader
	err    error // sticky: trailing data after the stream
}

// errTrailingData reports bytes after the end of a deflate stream.
var errTrailingData = errors.New("writers: deflate: data after the end of the stream")

func (d *deflateDecoder) Reset(r io.Reader) error {
	d.active = nil
	d.err = nil
	if !attach(&d.src, r) {
		return nil
	}
	head, err := d.src.Peek(2)
	if err != nil {
		return headerError(Deflate, err)
	}
	if isZlibHeader(head[0], head[1]) {
		if d.zlib == nil {
			d.zlib, err = zlib.NewReader(d.src)
		} else {
			err = d.zlib.(zlib.Resetter).Reset(d.src, nil)
		}
		if err != nil {
			return err
		}
		d.active = d.zlib
		return nil
	}
	if d.flate == nil {
		d.flate = flate.NewReader(d.src)
	} else if err := d.flate.(flate.Resetter).Reset(d.src, nil); err != nil {
		return err
	}
	d.active = d.flate
	return nil
}

func (d *deflateDecoder) Read(p []byte) (int, error) {
	if d.active == nil {
		return 0, ErrDetached
	}
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.active.Read(p)
	if err == io.EOF {
		// The stream is complete; so must the input be.
		switch _, perr := d.src.Peek(1); perr {
		case nil:
			d.err = errTrailingData
		case io.EOF:
			d.err = io.EOF
		default:
			d.err = perr
		}
		err = d.err
	}
	return n, err
}

// isZlibHeader reports whether cmf and flg open a zlib stream (RFC 1950 §2.2):
// method 8 with a window of at most 32 KiB, no preset dictionary, and a check
// value that makes the pair a multiple of 31. A raw deflate stream cannot
// pass: a low nibble of 8 would be a non-final stored block with a padding
// bit set, and encoders pad with zeros.
func isZlibHeader(cmf, flg byte) bool {
	return cmf&0x0f == 8 && cmf>>4 <= 7 && flg&0x20 == 0 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}
