package squeeze

import (
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// keptEncoders returns the pool of the delta encoders build makes for d, of
// coding at level with a dictionary of n bytes: it keeps at most
// s.encodersKept of them, and each takes its place only once
// deltaEncoderBytes is charged to d (dictStore.charge: a remembered
// dictionary's cost, evicting others, that leaves the budget with it).
// An encoder built past them, while more responses than that use the
// dictionary at once or when the budget has no room, serves one response
// and is dropped. A static or live learned dictionary is not charged
// (charge), and keeps as many.
func (s *dictStore) keptEncoders(d *dictionary, coding string, level, n int, build func() (writers.Encoder, error)) (*pool.Encoders, error) {
	cost := deltaEncoderBytes(coding, level, n)
	return pool.NewKeptEncodersFunc(coding, build, s.encodersKept, func() bool { return s.charge(d, cost) })
}

// deltaEncoderBytes returns what one dcz or dcb encoder at level, built
// with a dictionary of n bytes (dczHistory's for dcz), holds once it has
// coded a response: an upper bound on the heap it keeps, checked against
// runtime.MemStats at every level (TestDeltaEncoderBytesBoundsTheHeap; the
// figures are in docs/internals.md#the-dictionary-store). A zstd encoder
// holds its hash tables, a copy of them as the dictionary left them, and
// the dictionary's history, so twice n on top of the tables of its level;
// a brotli encoder holds its level's hasher and ring buffer (dcbWindowBits)
// and shares the dictionary's prepared tables (dcbTableBytes), charged
// once.
func deltaEncoderBytes(coding string, level, n int) int64 {
	if coding == DCZ {
		var tables int64
		switch zstd.EncoderLevelFromZstd(level) {
		case zstd.SpeedFastest:
			tables = 1 << 20
		case zstd.SpeedDefault:
			tables = 7 << 19
		case zstd.SpeedBetterCompression:
			tables = 10 << 20
		default:
			tables = 80 << 20
		}
		return tables + 2*int64(n)
	}
	switch {
	case level <= 3:
		return 3 << 19
	case level == 4:
		return 5 << 19
	case level == 5:
		return 3 << 20
	case level == 6:
		return 9 << 19
	case level == 7:
		return 12 << 20
	case level == 8:
		return 20 << 20
	}
	return 40 << 20
}

// dczHistoryMax is the most of a dictionary a dcz encoder is given: its
// last dczHistoryMax bytes (dczHistory). klauspost/compress copies a raw
// dictionary's bytes into the encoder's history at every frame, and its
// matches into a larger dictionary cost cache misses, so without this
// bound a delta's CPU would grow with the dictionary's size
// (bench/measured/learned-delta-cost.md). What the bound costs in bytes,
// on held-out pages of real sites, is measured there too.
const dczHistoryMax = 512 << 10

// dczHistory returns the raw dictionary a dcz encoder of data is built
// with: data's last dczHistoryMax bytes, or all of data when it is no
// larger. The frames it codes decode to the same bytes with all of data
// as their dictionary, as RFC 9842 clients hold it: a zstd match into a
// raw-content dictionary is an offset back from the frame's start, so it
// lands on the same byte of data's tail; a raw dictionary has no ID,
// entropy tables or repeat offsets of its own (the frame starts from
// zstd's defaults, 1, 4 and 8, either way); and the encoder's offsets
// never pass its window, dczWindow of the tail, which the frame
// declares. TestDCZHistoryDecodesWithWholeDictionary proves it with
// klauspost/compress's decoder and the zstd CLI. dcb has no such bound:
// a brotli reference to its static dictionary is a distance past the
// whole compound dictionary, so an encoder given less would write
// references a client holding all of it reads as other bytes.
func dczHistory(data []byte) []byte {
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
// zstd encoder copies the dictionary's tables and history back).
type framedEncoder struct {
	header []byte
	inner  writers.Encoder
	dst    destination
	// started is set once the header is written; used once inner has
	// been written, flushed or closed since it was last reset.
	started, used bool
}

// newFramedEncoder returns inner behind header, reset to write to
// io.Discard until its own Reset.
func newFramedEncoder(header []byte, inner writers.Encoder) *framedEncoder {
	e := &framedEncoder{header: header, inner: inner, dst: destination{io.Discard}}
	inner.Reset(&e.dst)
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
		e.inner.Reset(&e.dst)
		e.used = false
	}
}
