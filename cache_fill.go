package squeeze

import (
	"io"
	"net/http"
)

// fillChunk is the least a fill claims of the budget at a time.
const fillChunk = 64 << 10

// cacheFill is a miss being stored as it goes out: the stream's encoder
// writes through it to the client, and it keeps a copy. The copy grows
// within bytes claimed against the cache's budget as it goes; when the
// budget has no room, the fill stops keeping and leaves the flight.
type cacheFill struct {
	c   *cacheCore
	key cacheKey
	dst io.Writer
	buf []byte
	// held is what the fill claimed of the budget, at least cap(buf).
	held int64
	// level is the offer's level; leading is set while the fill still
	// leads its flight.
	level   int
	leading bool
}

func (f *cacheFill) Write(p []byte) (int, error) {
	n, err := f.dst.Write(p)
	if f.leading {
		if err != nil || !f.keep(p[:n]) {
			f.drop()
		}
	}
	return n, err
}

// keep appends p to the copy, claiming budget for it as the copy grows,
// and reports whether it could: not past the entry limit, nor when the
// budget has no room.
func (f *cacheFill) keep(p []byte) bool {
	need := int64(len(f.buf) + len(p))
	if need > f.c.entryMax {
		f.c.storesSkipped.Add(1)
		return false
	}
	if need > int64(cap(f.buf)) {
		size := min(max(need, 2*int64(cap(f.buf)), 4<<10), f.c.entryMax)
		if size > f.held {
			more := min(max(size-f.held, fillChunk), f.c.entryMax-f.held)
			if !f.c.reserve(more) {
				return false
			}
			f.held += more
		}
		b := make([]byte, len(f.buf), size)
		copy(b, f.buf)
		f.buf = b
	}
	f.buf = append(f.buf, p...)
	return true
}

// drop ends the fill without storing, giving back what it claimed and
// letting identical misses go on.
func (f *cacheFill) drop() {
	if f != nil && f.leading {
		held := f.held
		f.leading, f.buf, f.held = false, nil, 0
		f.c.endHeld(&f.key, nil, nil, 0, held, false)
	}
}

// The fill follows its response as a responseHook: it wants no plain body
// (it is the encoder's destination), a flushed stream is not stored, and
// at the end it stores what it kept.
func (f *cacheFill) committed(http.Header, facts) bool { return false }

func (f *cacheFill) plain([]byte) bool { return false }

func (f *cacheFill) flushed() { f.drop() }

// ended stores the stream the fill kept if the response completed and its
// stream ended whole, and otherwise drops it. The entry keeps an exact
// copy, not the fill's buffer with its spare capacity, and its weight takes
// over what the fill claimed.
func (f *cacheFill) ended(end responseEnd) {
	if !end.completed || !end.closed || !f.leading || end.secret {
		f.drop()
		return
	}
	body := f.buf
	if cap(body) > len(body) {
		body = make([]byte, len(f.buf))
		copy(body, f.buf)
	}
	f.leading, f.buf = false, nil
	f.c.endHeld(&f.key, body, nil, f.level, f.held, false)
}
