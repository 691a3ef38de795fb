package squeeze

// This file holds WithLengthHiding: padding added to every encoded
// response, of an amount derived from the plain body and a secret of the
// Middleware, so that the compressed length no longer tells an attacker
// exactly how well a guess of a secret compressed (BREACH). Padding is
// added as the body goes out, never stored: what the Cache and the fleet's
// store keep stays the canonical encoding of the plain body, and a hit is
// padded as a fresh encoding of the same content is. A whole body's amount
// is the hash of all of it; a stream's, of all of its bytes too, hashed as
// they pass (streamHash) and padded at its end. Where each coding carries
// it is writers' business: a whole gzip body in its header, a gzip stream
// in empty deflate blocks before its last block, zstd and dcz in a
// skippable frame after the stream, br and dcb in metadata meta-blocks
// before the last meta-block.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"

	"github.com/squeezehttp/squeeze/writers"
)

// maxLengthHiding is the largest n WithLengthHiding takes.
const maxLengthHiding = 4096

// WithLengthHiding pads every encoded response with 1 to n bytes that every
// decoder skips, against BREACH-style attacks, which recover a secret in a
// page that also reflects attacker input from how the compressed length
// changes with the guesses. The amount comes from a keyed hash of all of the
// plain body (a secret New draws at random), so repeating a request does not
// average it away while each guess gets an unrelated amount; a stream is
// hashed as it passes and padded at its end. n must be 1 to 4096; deflate
// cannot be offered with it. It costs n/2 bytes a response on average; br
// and dcb responses bypass the Cache. Padding multiplies the requests an
// attack needs (128 to 256 times for n = 32, measured) without stopping
// it: [WriteSecret] is the fix. docs/reference.md says where each coding
// carries the padding.
func WithLengthHiding(n int) Option {
	return func(c *config) error {
		if n < 1 || n > maxLengthHiding {
			return fmt.Errorf("squeeze: WithLengthHiding(%d): the most padding must be 1 to %d bytes", n, maxLengthHiding)
		}
		c.lengthHiding = n
		return nil
	}
}

// lengthHiding is the configuration of WithLengthHiding: the most padding a
// response gets, and the secret that, with the content, decides how much;
// and the buffers padding is made in.
type lengthHiding struct {
	max    int
	secret [32]byte
	bufs   sync.Pool // *[]byte
	hashes sync.Pool // *streamHash
}

// newLengthHiding returns the length hiding of up to n bytes with a new
// random secret.
func newLengthHiding(n int) *lengthHiding {
	l := &lengthHiding{max: n}
	_, _ = rand.Read(l.secret[:]) // crypto/rand.Read never fails
	l.bufs.New = func() any { return new([]byte) }
	l.hashes.New = func() any { return &streamHash{h: sha256.New()} }
	return l
}

// amount returns how many bytes of padding a whole body plain gets: 1 to
// max, from a keyed hash of plain, so that the same content always gets
// the same amount (repeating a request does not average the padding away)
// and one byte more or less of content gets an unrelated one. A stream
// gets the amount of all of its bytes, hashed as they pass (streamHash).
func (l *lengthHiding) amount(plain []byte) int {
	sum := sha256.Sum256(plain)
	return l.keyed(sum[:])
}

// keyed returns the amount of padding for sum, the SHA-256 of a plain body,
// from its hash under the Middleware's secret.
func (l *lengthHiding) keyed(sum []byte) int {
	var keyed [64]byte
	copy(keyed[:32], l.secret[:])
	copy(keyed[32:], sum)
	k := sha256.Sum256(keyed[:])
	return 1 + int(binary.LittleEndian.Uint64(k[:8])%uint64(l.max))
}

// skipsCache reports whether responses in coding bypass the Cache: br and
// dcb do under length hiding, since their padding goes before the
// stream's last meta-block, which a stored stream from elsewhere (an
// upgrade, the fleet's store) does not show where to find without decoding
// it.
func (l *lengthHiding) skipsCache(coding string) bool {
	return l != nil && deltaCodec(coding) == writers.Brotli
}

// padding returns, in a buffer of l.bufs, the padding of amount n of a
// body in coding that goes at its end: for zstd and dcz a skippable frame
// after the stream (its 8-byte header beyond n-1 bytes), for br and dcb
// metadata meta-blocks between a Flush and Close, for gzip deflate blocks
// that produce nothing between a Flush and Close (8 bytes beyond n, as
// they take at least 9). nil for a coding padding does not end.
func (l *lengthHiding) padding(coding string, n int) *[]byte {
	var err error
	buf := l.bufs.Get().(*[]byte)
	switch deltaCodec(coding) {
	case writers.Zstd:
		*buf, err = writers.AppendPadding((*buf)[:0], writers.Zstd, n+7)
	case writers.Brotli:
		*buf, err = writers.AppendPadding((*buf)[:0], writers.Brotli, n)
	case writers.Gzip:
		*buf, err = writers.AppendDeflatePadding((*buf)[:0], n+gzipStreamExtra)
	default:
		err = errNoPadding
	}
	if err != nil {
		l.bufs.Put(buf)
		return nil
	}
	return buf
}

// gzipStreamExtra is what a gzip stream's padding takes beyond its amount,
// at its end (writers.MinDeflatePadding less one); a stream the Cache
// sends is padded in its header by as much, so that it is as long as the
// fresh stream.
const gzipStreamExtra = writers.MinDeflatePadding - 1

// errNoPadding stands for a coding padding does not follow a stream in.
var errNoPadding = errors.New("squeeze: no padding after this coding")

// bodyPadding is where padding goes in a whole encoded body: buf's bytes
// go in at byte at of the body, in place of its skip bytes there. The zero
// value adds nothing.
type bodyPadding struct {
	buf      *[]byte
	at, skip int
}

// bodyPadding returns the padding of amount n of out, a whole encoded body
// in coding: for gzip in the header (fresh) or, for a stored stream, in
// the header by as much as the fresh stream's end took (gzipStreamExtra);
// for br and dcb at split, where the data ends before the last meta-block
// (-1 when unknown: no padding); for zstd and dcz at the end. A body it
// cannot pad (a gzip header with optional fields) gets none.
func (l *lengthHiding) bodyPadding(coding string, out []byte, split, n int, stream bool) bodyPadding {
	switch deltaCodec(coding) {
	case writers.Gzip:
		if len(out) < writers.GzipHeaderLen {
			return bodyPadding{}
		}
		if stream {
			n += gzipStreamExtra
		}
		buf := l.bufs.Get().(*[]byte)
		var err error
		if *buf, err = writers.AppendGzipHeaderPadding((*buf)[:0], out[:writers.GzipHeaderLen], n); err != nil {
			l.bufs.Put(buf)
			return bodyPadding{}
		}
		return bodyPadding{buf: buf, skip: writers.GzipHeaderLen}
	case writers.Brotli:
		if split < 0 {
			return bodyPadding{}
		}
		return bodyPadding{buf: l.padding(coding, n), at: split}
	case writers.Zstd:
		return bodyPadding{buf: l.padding(coding, n), at: len(out)}
	}
	return bodyPadding{}
}

// size is how many bytes p adds to a body.
func (p bodyPadding) size() int {
	if p.buf == nil {
		return 0
	}
	return len(*p.buf) - p.skip
}

// streamHash is the keyed hash of a stream's plain bytes under
// WithLengthHiding, which decides its padding at its end; and a stored
// stream the Cache sends for it, held until then (see holdHit).
type streamHash struct {
	h   hash.Hash
	hit []byte
}

// startStream returns a streamHash for a new stream.
func (l *lengthHiding) startStream() *streamHash {
	s := l.hashes.Get().(*streamHash)
	s.h.Reset()
	return s
}

// endStream returns s for reuse.
func (l *lengthHiding) endStream(s *streamHash) {
	s.hit = nil
	l.hashes.Put(s)
}

// amountOf returns the amount of padding of the stream s hashed so far:
// what amount gives a whole body of the same bytes.
func (l *lengthHiding) amountOf(s *streamHash) int {
	var sum [sha256.Size]byte
	return l.keyed(s.h.Sum(sum[:0]))
}

// streamPadding returns, in a buffer of l.bufs, the padding of the stream
// in coding whose plain bytes s hashed, which goes at its end (see
// padding); nil without length hiding.
func (l *lengthHiding) streamPadding(coding string, s *streamHash) *[]byte {
	if l == nil || s == nil {
		return nil
	}
	return l.padding(coding, l.amountOf(s))
}

// lengthHidingError is New's error for WithLengthHiding with an offered
// coding that cannot be padded.
func lengthHidingError(n int, coding string) error {
	return fmt.Errorf("squeeze: WithLengthHiding(%d): %s cannot be padded (a zlib stream has nowhere a decoder skips): leave it out of WithEncodings", n, coding)
}
