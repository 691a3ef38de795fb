package squeeze

import (
	"io"
	"net/http"
)

// fillChunk is the least a fill claims of the budget at a time.
const fillChunk = 64 << 10

// cacheFill is a miss being stored as it goes out: the stream's encoder
// writes through it to the client, and it keeps a copy, and, for a stream
// found by content (streamByContent), a copy of its plain bytes too, which
// the writer tees to it as a hook. The copies grow within bytes claimed
// against the cache's budget as they go; when the budget has no room, the
// fill stops keeping and leaves the flight.
//
// A fill of a stream found by content starts with cand, the entry its
// request's key holds, whose plain bytes the writer compares the stream's
// with; it leads no flight until the writer gives the comparison up
// (unhold), and then stores the stream in cand's place if it can lead.
type cacheFill struct {
	c   *cacheCore
	key cacheKey
	dst io.Writer
	buf []byte
	// kept is the copy of the plain bytes when byContent is set.
	kept []byte
	// cand is the entry compared with, nil once the comparison ended.
	cand *cacheEntry
	// declared is the stream's declared length, -1 for none: the size
	// of kept from the start.
	declared int64
	// held is what the fill claimed of the budget, at least the
	// capacity of its copies.
	held int64
	// level is the offer's level; leading is set while the fill still
	// leads its flight; byContent while it keeps the plain bytes.
	level              int
	leading, byContent bool
}

func (f *cacheFill) Write(p []byte) (int, error) {
	n, err := f.dst.Write(p)
	if f.leading {
		if err != nil || !f.keep(&f.buf, p[:n]) {
			f.drop()
		}
	}
	return n, err
}

// keep appends p to *dst, one of the fill's copies, claiming budget for it
// as the copies grow, and reports whether it could: not past the entry
// limit, nor when the budget has no room.
func (f *cacheFill) keep(dst *[]byte, p []byte) bool {
	if int64(len(f.buf)+len(f.kept)+len(p)) > f.c.entryMax {
		f.c.storesSkipped.Add(1)
		return false
	}
	b := *dst
	if need := int64(len(b) + len(p)); need > int64(cap(b)) {
		other := int64(cap(f.buf) + cap(f.kept) - cap(b))
		size := min(max(need, 2*int64(cap(b)), 4<<10), f.c.entryMax-int64(len(f.buf)+len(f.kept)-len(b)))
		if dst == &f.kept && f.declared >= need && f.declared <= f.c.entryMax {
			size = f.declared // the whole plain body at once
		}
		if other+size > f.held {
			more := max(other+size-f.held, fillChunk)
			if !f.c.reserve(more) {
				return false
			}
			f.held += more
		}
		nb := make([]byte, len(b), size)
		copy(nb, b)
		b = nb
	}
	*dst = append(b, p...)
	return true
}

// drop ends the fill without storing, giving back what it claimed and
// letting identical misses go on.
func (f *cacheFill) drop() {
	if f != nil && f.leading {
		held := f.held
		f.leading, f.buf, f.kept, f.held = false, nil, nil, 0
		f.c.endHeld(&f.key, nil, nil, 0, held, false)
	}
}

// The fill follows its response as a responseHook: it wants no plain body
// at the commit (it is attached after, and a fill by content is told to
// keep them by the writer), a flushed stream is not stored, and at the end
// it stores what it kept.
func (f *cacheFill) committed(http.Header, facts) bool { return false }

// plain keeps p, the plain bytes of a stream found by content.
func (f *cacheFill) plain(p []byte) bool {
	if !f.leading || !f.byContent {
		return false
	}
	if !f.keep(&f.kept, p) {
		f.drop()
		return false
	}
	return true
}

func (f *cacheFill) flushed() { f.drop() }

// ended stores the stream the fill kept if the response completed and its
// stream ended whole, with no trailers, and otherwise drops it. The entry
// keeps exact copies, not the fill's buffers with their spare capacity,
// and its weight takes over what the fill claimed.
func (f *cacheFill) ended(end responseEnd) {
	f.cand = nil
	if !end.completed || !end.closed || !f.leading || end.secret || end.lengthMismatch || end.trailers {
		f.drop()
		return
	}
	body, plain := exact(f.buf), []byte(nil)
	if f.byContent {
		plain = exact(f.kept)
	}
	f.leading, f.buf, f.kept = false, nil, nil
	f.c.endHeld(&f.key, body, plain, f.level, f.held, false)
}

// exact returns b, or a copy of it without its spare capacity.
func exact(b []byte) []byte {
	if cap(b) == len(b) {
		return b
	}
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
