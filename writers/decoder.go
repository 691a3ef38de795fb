package writers

import (
	"bufio"
	"encoding/binary"
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
	// Window returns the largest window, in bytes, that any stream this
	// decoder has read since it was built declared: what it may keep
	// allocated for reuse, since codecs keep their history buffers across
	// Reset. It is [FlateWindow] for gzip and deflate; for zstd, the largest
	// Window_Size of any frame (the content size of a single-segment
	// frame); for br, (1<<WBITS)-16 from the stream header (RFC 7932
	// §9.1). A window is counted as soon as its header has passed through
	// the decoder, before the first byte it decodes.
	Window() int64
}

// FlateWindow is the window of every gzip and deflate stream: 32 KiB.
const FlateWindow = 32 << 10

// ErrDetached is returned by Read on a [Decoder] that was Reset(nil), or that
// no Reset has given a source yet.
var ErrDetached = errors.New("writers: decoder has no source")

// NewDecoder returns a decoder for coding that reads nothing until Reset
// names a source. coding must be canonical (see [Canonical]); any other is an
// error matching [ErrUnknownCoding].
//
// zstd decoders run with concurrency 1, so they start no goroutines, and
// refuse frames that declare a window over [ZstdMaxWindow]. deflate decoders
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

func (d *gzipDecoder) Window() int64 { return FlateWindow }

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

// zstdDecoder watches the bytes its source yields: whether there were any
// (the zstd decoder reports io.EOF for an input with no frame at all, which
// is a truncated body, not an empty one: an empty body compresses to a
// frame), and the frame headers, for Window.
type zstdDecoder struct {
	d     *zstd.Decoder
	src   zstdSource
	ready bool
}

func (d *zstdDecoder) Reset(r io.Reader) error {
	d.ready = false
	d.src.reset(r)
	if r == nil {
		return d.d.Reset(nil)
	}
	if err := d.d.Reset(&d.src); err != nil {
		return err
	}
	d.ready = true
	return nil
}

func (d *zstdDecoder) Window() int64 { return d.src.frames.window }

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

// zstdSource passes a zstd stream on, counting its bytes and following its
// frames.
type zstdSource struct {
	r      io.Reader
	n      int64
	frames zstdFrames
}

func (s *zstdSource) reset(r io.Reader) {
	s.r, s.n = r, 0
	s.frames.reset()
}

func (s *zstdSource) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	s.frames.observe(p[:n])
	return n, err
}

// zstdFrames follows the structure of a zstd stream (RFC 8878 §3.1) from
// its bytes, without decoding: frame headers, block headers whose contents
// it skips, checksums and skippable frames. It records the largest window
// any frame declares. On anything it cannot follow it stops: the decoder
// refuses such a stream itself.
type zstdFrames struct {
	window   int64 // the largest Window_Size seen, kept across reset
	state    uint8
	hdr      [18]byte // the longest frame header
	hn, need int
	skip     int64
	checksum bool
}

const (
	zstdMagic      uint8 = iota // need 4 bytes
	zstdDescriptor              // need 5: the magic and Frame_Header_Descriptor
	zstdHeader                  // need the whole frame header
	zstdBlock                   // need 3: a block header
	zstdSkippable               // need 8: a skippable frame's magic and size
	zstdLost                    // not a stream it can follow
)

func (z *zstdFrames) reset() {
	z.state, z.hn, z.need, z.skip = zstdMagic, 0, 4, 0
}

func (z *zstdFrames) observe(p []byte) {
	for len(p) > 0 && z.state != zstdLost {
		if z.skip > 0 {
			k := min(int64(len(p)), z.skip)
			z.skip -= k
			p = p[k:]
			continue
		}
		c := copy(z.hdr[z.hn:z.need], p)
		z.hn += c
		p = p[c:]
		if z.hn == z.need {
			z.step()
		}
	}
}

// step acts on a complete piece of header in hdr[:need].
func (z *zstdFrames) step() {
	h := z.hdr[:z.need]
	switch z.state {
	case zstdMagic:
		switch m := binary.LittleEndian.Uint32(h); {
		case m == 0xfd2fb528:
			z.state, z.need = zstdDescriptor, 5
		case m&^0xf == 0x184d2a50:
			z.state, z.need = zstdSkippable, 8
		default:
			z.state = zstdLost
		}
	case zstdDescriptor:
		fhd := h[4]
		single := fhd&0x20 != 0
		n := 5 + [4]int{0, 1, 2, 4}[fhd&3] + [4]int{0, 2, 4, 8}[fhd>>6]
		if !single {
			n++ // Window_Descriptor
		} else if fhd>>6 == 0 {
			n++ // a one-byte Frame_Content_Size
		}
		z.state, z.need = zstdHeader, n
	case zstdHeader:
		fhd := h[4]
		z.checksum = fhd&4 != 0
		var window int64
		if fhd&0x20 == 0 {
			wd := h[5]
			base := int64(1) << (10 + wd>>3)
			window = base + base/8*int64(wd&7)
		} else {
			fcs := h[5+[4]int{0, 1, 2, 4}[fhd&3]:]
			switch len(fcs) {
			case 1:
				window = int64(fcs[0])
			case 2:
				window = int64(binary.LittleEndian.Uint16(fcs)) + 256
			case 4:
				window = int64(binary.LittleEndian.Uint32(fcs))
			default:
				window = int64(min(binary.LittleEndian.Uint64(fcs), 1<<62))
			}
			window = max(window, 1<<10) // the decoder's minimum
		}
		z.window = max(z.window, window)
		z.state, z.hn, z.need = zstdBlock, 0, 3
	case zstdBlock:
		v := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
		switch v >> 1 & 3 {
		case 0, 2: // raw, compressed
			z.skip = int64(v >> 3)
		case 1: // RLE: one byte
			z.skip = 1
		default:
			z.state = zstdLost
			return
		}
		z.hn = 0
		if v&1 != 0 { // the last block
			if z.checksum {
				z.skip += 4
			}
			z.state, z.need = zstdMagic, 4
		}
	case zstdSkippable:
		z.skip = int64(binary.LittleEndian.Uint32(h[4:]))
		z.state, z.hn, z.need = zstdMagic, 0, 4
	}
}

// brotliDecoder reads the window from the first byte of each stream as it
// passes by.
type brotliDecoder struct {
	r      *brotli.Reader
	src    brotliSource
	window int64
	ready  bool
}

func (d *brotliDecoder) Reset(r io.Reader) error {
	d.ready = r != nil
	if r == nil {
		d.src = brotliSource{}
		return d.r.Reset(nil)
	}
	d.src = brotliSource{r: r, d: d}
	return d.r.Reset(&d.src)
}

func (d *brotliDecoder) Window() int64 { return d.window }

func (d *brotliDecoder) Read(p []byte) (int, error) {
	if !d.ready {
		return 0, ErrDetached
	}
	return d.r.Read(p)
}

type brotliSource struct {
	r    io.Reader
	d    *brotliDecoder
	seen bool // the first byte has gone by
}

func (s *brotliSource) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && !s.seen {
		s.seen = true
		s.d.window = max(s.d.window, BrotliWindow(p[0]))
	}
	return n, err
}

// BrotliWindow returns the window, in bytes, that a brotli stream whose
// first byte is first declares: (1<<WBITS)-16, WBITS from 10 to 24 coded in
// its first bits (RFC 7932 §9.1). A reserved code, which the decoder
// refuses, counts as the largest window, 16 MiB.
func BrotliWindow(first byte) int64 {
	bits := 24
	switch {
	case first&1 == 0:
		bits = 16
	case first>>1&7 != 0:
		bits = 17 + int(first>>1&7)
	case first>>4&7 == 0:
		bits = 17
	case first>>4&7 != 1:
		bits = 8 + int(first>>4&7)
	}
	return 1<<bits - 16
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

func (d *deflateDecoder) Window() int64 { return FlateWindow }

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
