package squeeze

// This file holds WithLengthHiding: padding added to every encoded
// response, of an amount derived from the plain body and a secret of the
// Middleware, so that the compressed length no longer tells an attacker
// exactly how well a guess of a secret compressed (BREACH). Padding is
// added as the body goes out, never stored: what the Cache and the fleet's
// store keep stays the canonical encoding of the plain body, and a hit is
// padded as a fresh encoding of the same content is. Where each coding
// carries it is writers' business (writers.AppendPadding): gzip in its
// header, zstd and dcz in a skippable frame after the stream, br and dcb in
// metadata meta-blocks before the last meta-block.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/squeezehttp/squeeze/writers"
)

// maxLengthHiding is the largest n WithLengthHiding takes.
const maxLengthHiding = 4096

// WithLengthHiding pads every encoded response with 1 to n bytes that
// every decoder skips, against BREACH-style attacks, which recover a
// secret in a page (a CSRF token) that also reflects attacker input, from
// how the compressed length changes with the attacker's guesses. The
// amount comes from a keyed hash of the plain body (of its first
// [WithBufferSize] bytes for a stream) under a secret that [New] draws at
// random, so the same content always gets the same padding: repeating a
// request does not average it away, while each guess gets an unrelated
// amount. gzip carries it in its header, zstd and dcz in a skippable
// frame, br and dcb in metadata meta-blocks; hits from the [Cache] are
// padded as fresh encodings are, and what is stored stays unpadded. n must
// be 1 to 4096; deflate, which has nowhere to carry padding, cannot be
// offered with it. It costs n/2 bytes a response on average, plus 7 for
// zstd and dcz; br and dcb responses bypass the Cache. Padding only slows
// such an attack down: masking secrets per response, and keeping them out
// of responses that reflect input, is the fix (docs/reference.md).
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
}

// newLengthHiding returns the length hiding of up to n bytes with a new
// random secret.
func newLengthHiding(n int) *lengthHiding {
	l := &lengthHiding{max: n}
	_, _ = rand.Read(l.secret[:]) // crypto/rand.Read never fails
	l.bufs.New = func() any { return new([]byte) }
	return l
}

// amount returns how many bytes of padding a response whose plain body is,
// or begins with, plain gets: 1 to max, from a keyed hash of plain, so
// that the same content always gets the same amount (repeating a request
// does not average the padding away) and one byte more or less of content
// gets an unrelated one.
func (l *lengthHiding) amount(plain []byte) int {
	var keyed [64]byte
	copy(keyed[:32], l.secret[:])
	sum := sha256.Sum256(plain)
	copy(keyed[32:], sum[:])
	sum = sha256.Sum256(keyed[:])
	return 1 + int(binary.LittleEndian.Uint64(sum[:8])%uint64(l.max))
}

// skipsCache reports whether responses in coding bypass the Cache: br and
// dcb do under length hiding, since their padding goes before the
// stream's last meta-block, which a stored stream from elsewhere (an
// upgrade, the fleet's store) does not show where to find without decoding
// it.
func (l *lengthHiding) skipsCache(coding string) bool {
	return l != nil && deltaCodec(coding) == writers.Brotli
}

// padding returns, in a buffer of l.bufs, n bytes of padding of a stream in
// coding that go after it (zstd and dcz: a skippable frame, with its 8-byte
// header beyond n-1 bytes) or between its Flush and Close (br and dcb); nil
// for gzip, padded in its header.
func (l *lengthHiding) padding(coding string, n int) *[]byte {
	var err error
	buf := l.bufs.Get().(*[]byte)
	switch deltaCodec(coding) {
	case writers.Zstd:
		*buf, err = writers.AppendPadding((*buf)[:0], writers.Zstd, n+7)
	case writers.Brotli:
		*buf, err = writers.AppendPadding((*buf)[:0], writers.Brotli, n)
	default:
		err = errNoPadding
	}
	if err != nil {
		l.bufs.Put(buf)
		return nil
	}
	return buf
}

// errNoPadding stands for a coding padding does not follow a stream in.
var errNoPadding = errors.New("squeeze: no padding after this coding")

// sendPadded is sendEncodedBody under WithLengthHiding: it sends out, a
// whole encoded body in coding, with the padding the plain bytes held back
// decide, and its Content-Length. split is where a br or dcb body's data
// ends, before its last meta-block (sendWhole), -1 for other codings; a
// body it cannot pad (br or dcb without a split, a gzip header with
// optional fields) goes out as it is.
func (rw *responseWriter) sendPadded(h http.Header, coding string, out []byte, state writerState, split int) {
	l := rw.m.hiding
	n := l.amount(rw.buffered())
	var buf *[]byte
	at, skip := len(out), 0
	switch c := deltaCodec(coding); {
	case c == writers.Gzip && len(out) >= writers.GzipHeaderLen:
		buf = l.bufs.Get().(*[]byte)
		var err error
		if *buf, err = writers.AppendGzipHeaderPadding((*buf)[:0], out[:writers.GzipHeaderLen], n); err != nil {
			l.bufs.Put(buf)
			buf = nil
		}
		at, skip = 0, writers.GzipHeaderLen
	case c == writers.Brotli && split >= 0:
		buf, at = l.padding(coding, n), split
	case c == writers.Zstd:
		buf = l.padding(coding, n)
	}
	if buf == nil {
		at, skip = len(out), 0
	}
	var pad []byte
	if buf != nil {
		pad = *buf
		defer l.bufs.Put(buf)
	}
	rw.setLength(h, len(out)-skip+len(pad))
	rw.state = state
	rw.sendHeader(h)
	if at > 0 {
		if _, err := (*wire)(rw).Write(out[:at]); err != nil {
			return
		}
	}
	if len(pad) > 0 {
		if _, err := (*wire)(rw).Write(pad); err != nil {
			return
		}
	}
	_, _ = (*wire)(rw).Write(out[at+skip:])
}

// writeGzipHeader is the wire's Write of the first bytes of a gzip stream
// under WithLengthHiding: the 10-byte header the encoder writes alone, which
// it sends with the stream's padding in it (writers.AppendGzipHeaderPadding),
// through a Cache's fill, which so keeps the stream unpadded. Bytes that
// are not such a header pass unchanged.
func (c *wire) writeGzipHeader(p []byte) (int, error) {
	c.padGzip = false
	if len(p) < writers.GzipHeaderLen {
		return c.Write(p)
	}
	buf := c.m.hiding.bufs.Get().(*[]byte)
	defer c.m.hiding.bufs.Put(buf)
	var err error
	*buf, err = writers.AppendGzipHeaderPadding((*buf)[:0], p[:writers.GzipHeaderLen], int(c.padding))
	if err != nil {
		return c.Write(p)
	}
	n, err := c.w.Write(*buf)
	c.sent += int64(n)
	if err != nil {
		return 0, err
	}
	k, err := c.Write(p[writers.GzipHeaderLen:])
	return writers.GzipHeaderLen + k, err
}

// lengthHidingError is New's error for WithLengthHiding with an offered
// coding that cannot be padded.
func lengthHidingError(n int, coding string) error {
	return fmt.Errorf("squeeze: WithLengthHiding(%d): %s cannot be padded (a zlib stream has nowhere a decoder skips): leave it out of WithEncodings", n, coding)
}
