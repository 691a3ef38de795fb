package squeeze

import (
	"io"

	"github.com/squeezehttp/squeeze/writers"
)

// dczHistoryMax is the most of a learned dictionary a dcz encoder is
// given: its last dczHistoryMax bytes (dczHistory). klauspost/compress
// copies a raw dictionary's bytes into the encoder's history at every
// frame, and its matches into a larger dictionary miss the cache more, so
// without this bound a learned delta's CPU would grow with the
// dictionary's size (bench/measured/learned-delta-cost.md). What the bound
// costs in bytes, on held-out pages of real sites, is measured there too.
const dczHistoryMax = 512 << 10

// dczHistory returns the raw dictionary a dcz encoder of d is built with.
// For a learned dictionary that is its last dczHistoryMax bytes (dczTail):
// the trainer lays its segments out most valuable last, and a response
// matches segments wherever they lie, so the tail keeps most of what the
// dictionary is worth, and its size, not the dictionary's, sets the cost.
// Any other dictionary is an earlier version of the resource the response
// is (a remembered response, a FileServer's file, WithDictionary's), whose
// content lies where the new version's does, at a distance of the whole
// dictionary: a tail would lose it all, and a dictionary of about the
// response's size costs about what the response moves anyway. So it is
// given all of it.
func dczHistory(d *dictionary) []byte {
	if d.learned {
		return dczTail(d.data)
	}
	return d.data
}

// dczTail returns data's last dczHistoryMax bytes, or all of data when it
// is no larger. The frames an encoder given the tail codes decode to the
// same bytes with all of data as their dictionary, as RFC 9842 clients
// hold it: a zstd match into a raw-content dictionary is an offset back
// from the frame's start, so it lands on the same byte of data's tail; a
// raw dictionary has no ID, entropy tables or repeat offsets of its own
// (the frame starts from zstd's defaults, 1, 4 and 8, either way); and the
// encoder's offsets never pass its window, dczWindow of the tail, which
// the frame declares. TestDCZHistoryDecodesWithWholeDictionary proves it
// with klauspost/compress's decoder and the zstd CLI. dcb has no such
// bound: a brotli reference to its static dictionary is a distance past
// the whole compound dictionary, so an encoder given less would write
// references a client holding all of it reads as other bytes.
func dczTail(data []byte) []byte {
	if len(data) > dczHistoryMax {
		return data[len(data)-dczHistoryMax:]
	}
	return data
}

// framedEncoder writes header before the first byte of its inner encoder's
// stream: the dcz or dcb header naming the dictionary. Its inner encoder
// writes to dst, whose destination Reset sets, so that it is reset once
// per stream, not twice: a pool resets an encoder when it is given back
// and again when it is lent (internal/pool), and a dictionary encoder's
// reset is what a delta pays for its dictionary on every response (the
// zstd encoder copies the dictionary's tables and history back). dst is
// an object of its own, not a field, so that the inner encoder does not
// point back into the framedEncoder: go-brrr's Writer has a finalizer,
// and the garbage collector never frees a cycle through one.
type framedEncoder struct {
	header []byte
	inner  writers.Encoder
	dst    *destination
	// started is set once the header is written; used once inner has
	// been written, flushed or closed since it was last reset.
	started, used bool
}

// newFramedEncoder returns inner behind header, reset to write to
// io.Discard until its own Reset.
func newFramedEncoder(header []byte, inner writers.Encoder) *framedEncoder {
	e := &framedEncoder{header: header, inner: inner, dst: &destination{io.Discard}}
	inner.Reset(e.dst)
	return e
}

// destination is the writer a framedEncoder's inner encoder writes to: w,
// which the framedEncoder changes from one stream to the next.
type destination struct{ w io.Writer }

func (d *destination) Write(p []byte) (int, error) { return d.w.Write(p) }

func (e *framedEncoder) start() error {
	e.used = true
	if e.started {
		return nil
	}
	e.started = true
	_, err := e.dst.w.Write(e.header)
	return err
}

func (e *framedEncoder) Write(p []byte) (int, error) {
	if err := e.start(); err != nil {
		return 0, err
	}
	return e.inner.Write(p)
}

func (e *framedEncoder) Flush() error {
	if err := e.start(); err != nil {
		return err
	}
	return e.inner.Flush()
}

func (e *framedEncoder) Close() error {
	if err := e.start(); err != nil {
		return err
	}
	return e.inner.Close()
}

// Reset starts a new stream to w, dropping the last destination. The inner
// encoder is reset only when it has been used since its last reset: one
// reset and nothing since leaves it as a new reset would.
func (e *framedEncoder) Reset(w io.Writer) {
	e.dst.w, e.started = w, false
	if e.used {
		e.inner.Reset(e.dst)
		e.used = false
	}
}
