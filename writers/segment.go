package writers

import (
	"encoding/binary"
	"errors"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// This file holds the segments of a stream: bytes written in a compression
// context of their own, which nothing written before or after them can be
// matched against and which are matched against nothing. That is what stops
// BREACH-style attacks on a secret sent beside bytes an attacker chooses:
// the compressed length of the rest no longer depends on the secret, and the
// secret's own length is its plain length.
//
//   - zstd: the frame open so far ends, the bytes go out in a frame of their
//     own made of raw blocks, and a fresh frame follows (RFC 8878 §3.1: a
//     stream may be several frames, each independent; decoders, Chromium's
//     included, decode them one after another).
//   - gzip and deflate: one member (one zlib stream), whose deflate stream
//     is made of segments compressed independently: the compressor is
//     flushed (a sync flush, which ends on a byte boundary), the bytes go
//     out as stored blocks, and the compressor starts again with fresh
//     state, as `pigz --independent` does; one CRC-32 (Adler-32) and length
//     cover them all. Never a second gzip member: Chromium ignores every
//     member after the first.
//   - br: not possible with the encoder squeeze uses: a brotli stream has one
//     window, so bytes after a stored meta-block may still refer back into
//     it. br encoders do not implement [Isolator].

// Isolator is implemented by every [Encoder] that [NewEncoder] returns for
// zstd, gzip and deflate (not br): WriteIsolated writes p as a segment of the
// stream compressed in a context of its own. Nothing written to the stream
// before or after p is matched against p, and p is matched against nothing:
// it goes out stored (zstd raw blocks, deflate stored blocks), so its encoded
// length depends only on len(p). What was written before p is flushed, as
// Flush would, and what follows starts a fresh context.
type Isolator interface {
	WriteIsolated(p []byte) (int, error)
}

// ErrIsolateUnsupported is returned by [WriteIsolated] for an encoder that
// cannot write a segment in a context of its own (br's).
var ErrIsolateUnsupported = errors.New("writers: this coding cannot compress bytes in a context of their own")

// WriteIsolated writes p to e as an isolated segment if e is an [Isolator]
// (or wraps one, through an Unwrap method returning an Encoder), and returns
// an error matching [ErrIsolateUnsupported], having written nothing,
// otherwise.
func WriteIsolated(e Encoder, p []byte) (int, error) {
	for {
		switch t := e.(type) {
		case Isolator:
			return t.WriteIsolated(p)
		case interface{ Unwrap() Encoder }:
			e = t.Unwrap()
		default:
			return 0, ErrIsolateUnsupported
		}
	}
}

// CanIsolate reports whether the encoders [NewEncoder] returns for coding
// implement [Isolator]: zstd, gzip and deflate.
func CanIsolate(coding string) bool {
	return coding == Zstd || coding == Gzip || coding == Deflate
}

// zstdEncoder is a klauspost/compress zstd encoder that can end its frame
// for an isolated segment and start a fresh one after it.
type zstdEncoder struct {
	*zstd.Encoder
	w io.Writer
	// open is set once bytes were written to the current frame, which
	// then has to be closed before a segment; segments counts the
	// segments written since Reset, so that Close does not add an empty
	// frame after one.
	open     bool
	segments int
}

func (z *zstdEncoder) Write(p []byte) (int, error) {
	if len(p) > 0 {
		z.open = true
	}
	return z.Encoder.Write(p)
}

// Close ends the stream: the frame open, or an empty one when nothing at
// all was written, as a stream with no input must still be a valid frame.
// After a segment with nothing written since, the stream is complete as it
// is.
func (z *zstdEncoder) Close() error {
	if !z.open && z.segments > 0 {
		return nil
	}
	return z.Encoder.Close()
}

func (z *zstdEncoder) Reset(w io.Writer) {
	z.w, z.open, z.segments = w, false, 0
	z.Encoder.Reset(w)
}

// WriteIsolated ends the frame open, writes p in a frame of its own of raw
// blocks, and readies a fresh frame for what follows.
func (z *zstdEncoder) WriteIsolated(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if z.open {
		if err := z.Encoder.Close(); err != nil {
			return 0, err
		}
	}
	z.Encoder.Reset(z.w)
	z.open = false
	z.segments++
	if err := writeRawZstdFrame(z.w, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// zstdFrameMagic starts every zstd frame (RFC 8878 §3.1.1), little-endian.
const zstdFrameMagic = 0xFD2FB528

// zstdMaxBlock is the largest block a frame may hold (RFC 8878 §3.1.1.2.4):
// a raw frame of more is written in blocks of this size.
const zstdMaxBlock = 128 << 10

// writeRawZstdFrame writes p as one zstd frame of raw blocks: a single
// segment frame declaring its content size (so its window is that size),
// with no checksum and no dictionary.
func writeRawZstdFrame(w io.Writer, p []byte) error {
	var hdr [4 + 1 + 8 + 3]byte
	binary.LittleEndian.PutUint32(hdr[:4], zstdFrameMagic)
	n := 5
	// Frame_Header_Descriptor: Single_Segment_Flag (bit 5), and the size
	// of Frame_Content_Size in bits 6-7.
	switch size := uint64(len(p)); {
	case size < 256:
		hdr[4] = 0x20
		hdr[n] = byte(size)
		n++
	case size < 65536+256:
		hdr[4] = 0x20 | 1<<6
		binary.LittleEndian.PutUint16(hdr[n:], uint16(size-256))
		n += 2
	case size <= 0xFFFFFFFF:
		hdr[4] = 0x20 | 2<<6
		binary.LittleEndian.PutUint32(hdr[n:], uint32(size))
		n += 4
	default:
		hdr[4] = 0x20 | 3<<6
		binary.LittleEndian.PutUint64(hdr[n:], size)
		n += 8
	}
	for first := true; first || len(p) > 0; first = false {
		k := min(len(p), zstdMaxBlock)
		// Block_Header: Last_Block (bit 0), Block_Type 0 (raw), Block_Size.
		bh := uint32(k) << 3
		if k == len(p) {
			bh |= 1
		}
		hdr[n], hdr[n+1], hdr[n+2] = byte(bh), byte(bh>>8), byte(bh>>16)
		if _, err := w.Write(hdr[:n+3]); err != nil {
			return err
		}
		if _, err := w.Write(p[:k]); err != nil {
			return err
		}
		p, n = p[k:], 0
	}
	return nil
}

// framedDeflate is a gzip member (RFC 1952) or a zlib stream (RFC 1950)
// around a deflate stream of independently compressed segments. Without a
// segment it writes what klauspost/compress's gzip and zlib writers write,
// header byte for header byte.
type framedDeflate struct {
	w     io.Writer
	level int
	gzip  bool
	// fw is the compressor, nil for the stateless level, whose every write
	// is compressed on its own and flushed already.
	fw *flate.Writer
	// crc and size are gzip's trailer; adler is zlib's.
	crc, size   uint32
	adler       hash.Hash32
	wroteHeader bool
	// pending is set while fw holds bytes since it was last flushed or
	// reset.
	pending bool
	closed  bool
	err     error
	scratch [10]byte
}

// newFramedDeflate returns the gzip (or zlib) encoder for level, which
// ValidateLevel accepted.
func newFramedDeflate(isGzip bool, level int) (*framedDeflate, error) {
	f := &framedDeflate{level: level, gzip: isGzip}
	if !isGzip {
		f.adler = adler32.New()
	}
	if level != gzip.StatelessCompression {
		fw, err := flate.NewWriter(nil, level)
		if err != nil {
			return nil, err
		}
		f.fw = fw
	}
	return f, nil
}

func (f *framedDeflate) writeHeader() error {
	if f.wroteHeader || f.err != nil {
		return f.err
	}
	f.wroteHeader = true
	var b []byte
	if f.gzip {
		// ID1 ID2 CM=8, no flags, no MTIME, XFL as gzip -1/-9 say, OS
		// unknown: klauspost/compress's header, which padding and the
		// fleet's canonical check expect.
		b = f.scratch[:10]
		b[0], b[1], b[2], b[3] = 0x1f, 0x8b, 8, 0
		b[4], b[5], b[6], b[7] = 0, 0, 0, 0
		switch f.level {
		case flate.BestCompression:
			b[8] = 2
		case flate.BestSpeed:
			b[8] = 4
		default:
			b[8] = 0
		}
		b[9] = 255
	} else {
		// CMF 0x78: deflate, 32 KiB window; FLEVEL as RFC 1950 grades the
		// level, and the check bits.
		b = f.scratch[:2]
		b[0] = 0x78
		switch f.level {
		case gzip.StatelessCompression, flate.HuffmanOnly, 1:
			b[1] = 0
		case 2, 3, 4, 5:
			b[1] = 1 << 6
		case 6:
			b[1] = 2 << 6
		default:
			b[1] = 3 << 6
		}
		b[1] += uint8(31 - binary.BigEndian.Uint16(b)%31)
	}
	_, f.err = f.w.Write(b)
	return f.err
}

func (f *framedDeflate) sum(p []byte) {
	if f.gzip {
		f.crc = crc32.Update(f.crc, crc32.IEEETable, p)
		f.size += uint32(len(p))
	} else {
		f.adler.Write(p)
	}
}

func (f *framedDeflate) Write(p []byte) (int, error) {
	if f.closed {
		return 0, errWriteAfterClose
	}
	if err := f.writeHeader(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.sum(p)
	if f.fw == nil {
		if f.err = flate.StatelessDeflate(f.w, p, false, nil); f.err != nil {
			return 0, f.err
		}
		return len(p), nil
	}
	f.pending = true
	n, err := f.fw.Write(p)
	f.err = err
	return n, err
}

func (f *framedDeflate) Flush() error {
	if f.closed {
		return f.err
	}
	if err := f.writeHeader(); err != nil {
		return err
	}
	if f.fw == nil {
		return nil // stateless output is flushed by every Write
	}
	f.pending = false
	f.err = f.fw.Flush()
	return f.err
}

// WriteIsolated flushes the compressor, writes p as stored blocks, and
// starts the compressor afresh, with no history, for what follows.
func (f *framedDeflate) WriteIsolated(p []byte) (int, error) {
	if f.closed {
		return 0, errWriteAfterClose
	}
	if err := f.writeHeader(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.pending {
		// A sync flush: the blocks so far, then an empty stored block,
		// which leaves the stream on a byte boundary.
		if f.err = f.fw.Flush(); f.err != nil {
			return 0, f.err
		}
		f.pending = false
	}
	f.sum(p)
	for q := p; len(q) > 0; {
		k := min(len(q), 0xFFFF)
		// A stored block, not the last: BFINAL 0, BTYPE 00, padded to the
		// byte, then LEN and its complement (RFC 1951 §3.2.4).
		h := f.scratch[:5]
		h[0] = 0
		binary.LittleEndian.PutUint16(h[1:], uint16(k))
		binary.LittleEndian.PutUint16(h[3:], ^uint16(k))
		if _, f.err = f.w.Write(h); f.err != nil {
			return 0, f.err
		}
		if _, f.err = f.w.Write(q[:k]); f.err != nil {
			return 0, f.err
		}
		q = q[k:]
	}
	if f.fw != nil {
		f.fw.Reset(f.w)
	}
	return len(p), nil
}

func (f *framedDeflate) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if err := f.writeHeader(); err != nil {
		return err
	}
	if f.fw == nil {
		f.err = flate.StatelessDeflate(f.w, nil, true, nil)
	} else {
		f.err = f.fw.Close()
	}
	if f.err != nil {
		return f.err
	}
	var t []byte
	if f.gzip {
		t = f.scratch[:8]
		binary.LittleEndian.PutUint32(t, f.crc)
		binary.LittleEndian.PutUint32(t[4:], f.size)
	} else {
		t = f.scratch[:4]
		binary.BigEndian.PutUint32(t, f.adler.Sum32())
	}
	_, f.err = f.w.Write(t)
	return f.err
}

func (f *framedDeflate) Reset(w io.Writer) {
	f.w, f.crc, f.size = w, 0, 0
	f.wroteHeader, f.pending, f.closed, f.err = false, false, false, nil
	if f.adler != nil {
		f.adler.Reset()
	}
	if f.fw != nil {
		f.fw.Reset(w)
	}
}
