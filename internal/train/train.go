// Package train builds raw dictionaries from samples of the content they
// will compress: squeeze's learned dictionaries (WithLearnedDictionary)
// are trained here, in the background, on the responses a route sampled.
//
// The method is COVER (Liao, Petri, Moffat and Wirth, "Effective
// Construction of Relative Lempel-Ziv Dictionaries", WWW 2016), hashed
// as fastCover hashes it: every d-byte string of the samples (a d-mer) is
// worth the number of samples it occurs in; the samples, concatenated, are
// cut into epochs, and each pick takes from the next epoch, in turn, the
// k-byte segment whose distinct d-mers are worth most, trimmed of d-mers
// worth nothing, then sets the worth of its d-mers to zero so that no
// later pick pays for them again. Picks go on until the dictionary is full
// or nothing left is worth anything: the samples hold no more distinct
// content. The dictionary holds the picked segments in increasing order
// of worth, the most valuable last, where an LZ77 coder reaches them with
// the shortest offsets (as zstd lays out a raw dictionary).
//
// A d-mer's worth is counted in a table of 2^bits counters indexed by its
// hash, so memory is the samples, the dictionary and the tables, which
// [MaxCost] and [MinCost] state and [Train] keeps within the budget it is given. The time
// is linear in the samples: each epoch is scanned once per pick from it,
// and there are about four picks per epoch.
//
// Everything here is a pure function of its arguments: the same samples,
// size and options give the same dictionary.
package train

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Defaults of [Options], chosen by measurement on held-out pages
// (BENCHMARKS.md#dictionary-trainer).
const (
	// DefaultSegment is the length k of the segments a dictionary is made
	// of when [Options.Segment] is zero: longer than fastCover's (50 to
	// 2000), since a page's template repeats in long runs that an LZ77
	// coder takes best as one match.
	DefaultSegment = 8192
	// DefaultDmer is the length d of the strings whose sharing is counted
	// when [Options.Dmer] is zero.
	DefaultDmer = 8
)

const (
	// minTableBits and maxTableBits bound the hash table: below 2^12
	// counters distinct d-mers collide too often to tell anything apart;
	// past 2^20 (fastCover's default) a larger table bought under 1% on
	// held-out pages of 4 MiB of samples, for four times the memory and
	// three times the time (BENCHMARKS.md#dictionary-trainer).
	minTableBits = 12
	maxTableBits = 20
	// tableBytesPerEntry is a counter of worth (uint32) and one of
	// presence, in the last sample counted and then in the scanned
	// window (uint32).
	tableBytesPerEntry = 8
	// fixedCost covers the small allocations of one training.
	fixedCost = 4 << 10
	// segmentBytes is the size of a segment, of which a dictionary of
	// size bytes holds at most size/4+1 (a segment is a d-mer at least).
	segmentBytes = 24
	// passes is how many picks an epoch should give: the samples are cut
	// into size/k/passes epochs.
	passes = 4
	// minEpochSegments is the shortest epoch, in segments.
	minEpochSegments = 10
)

// ErrMemory is returned by [Train] when its memory budget cannot hold a
// training of even the newest sample with the smallest table.
var ErrMemory = errors.New("train: memory budget too small for any training")

// Options tunes a training. The zero value is the defaults.
type Options struct {
	// Segment is the length k of the segments picked, from Dmer to 64 KiB;
	// zero is DefaultSegment.
	Segment int
	// Dmer is the length d of the strings whose sharing is counted, from 4
	// to 8; zero is DefaultDmer.
	Dmer int
}

// Result is a trained dictionary and what the training used.
type Result struct {
	// Dict is the dictionary: at most the size asked for, and shorter
	// only when the samples hold no more content worth anything. nil when
	// there was nothing to train on.
	Dict []byte
	// Samples is how many of the samples, the last ones, were trained on;
	// fewer than given when the memory budget did not hold them all.
	Samples int
	// Bytes is the length of those samples.
	Bytes int64
	// TableBits is the log2 of the hash table's size.
	TableBits int
	// Segments is how many segments the dictionary holds.
	Segments int
}

// cost returns the most [Train] allocates to train a dictionary of size
// bytes on n bytes of samples with a table of 2^tableBits counters.
func cost(n int64, size, tableBits int) int64 {
	return fixedCost + n + 8 + int64(size) + segmentBytes*(int64(size)/4+1) + tableBytesPerEntry<<tableBits
}

// MaxCost returns the most [Train] allocates on n bytes of samples for a
// dictionary of size bytes, with the table it chooses given all the memory
// it wants: the samples, about seven bytes per dictionary byte, and a
// table of about sixteen bytes per sample byte, from 32 KiB to 8 MiB.
func MaxCost(n int64, size int) int64 {
	return cost(n, size, tableBitsFor(n))
}

// MinCost returns the least memory in which [Train] trains on n bytes of
// samples for a dictionary of size bytes, with its smallest table.
func MinCost(n int64, size int) int64 {
	return cost(n, size, minTableBits)
}

// tableBitsFor returns the table a training on n bytes wants: about two
// counters per byte, within the bounds.
func tableBitsFor(n int64) int {
	return min(max(bits.Len64(uint64(n))+1, minTableBits), maxTableBits)
}

// Train returns a dictionary of at most size bytes for samples, allocating
// at most memory bytes (see [MaxCost]). When the budget cannot hold them all,
// it first takes a smaller table (down to 2^12 counters), then trains on
// the last samples that fit, and says so in the Result; when it cannot
// hold the last sample with the smallest table it returns [ErrMemory]. An
// empty dictionary (nil) and no error come of samples with fewer than
// Dmer bytes in all, or a size of zero. Options are checked; a bad one is
// an error naming it.
func Train(samples [][]byte, size int, memory int64, o Options) (Result, error) {
	k, d := o.Segment, o.Dmer
	if k == 0 {
		k = DefaultSegment
	}
	if d == 0 {
		d = DefaultDmer
	}
	switch {
	case d < 4 || d > 8:
		return Result{}, fmt.Errorf("train: Dmer %d: must be from 4 to 8", o.Dmer)
	case k < d || k > 64<<10:
		return Result{}, fmt.Errorf("train: Segment %d: must be from Dmer (%d) to 65536", o.Segment, d)
	case size < 0:
		return Result{}, fmt.Errorf("train: size %d: must not be negative", size)
	}
	var n int64
	for _, s := range samples {
		n += int64(len(s))
	}
	if size == 0 || n < int64(d) {
		return Result{Samples: len(samples), Bytes: n}, nil
	}
	// Fit the budget: the table first, then the oldest samples.
	tb := tableBitsFor(n)
	for tb > minTableBits && cost(n, size, tb) > memory {
		tb--
	}
	first := 0
	for first < len(samples) && cost(n, size, tb) > memory {
		n -= int64(len(samples[first]))
		first++
	}
	if first == len(samples) || n < int64(d) {
		return Result{}, ErrMemory
	}
	samples = samples[first:]
	t := newTrainer(samples, n, tb, k, d)
	t.count()
	dict, segs := t.build(size)
	return Result{Dict: dict, Samples: len(samples), Bytes: n, TableBits: tb, Segments: segs}, nil
}

// trainer is one training's state.
type trainer struct {
	samples [][]byte
	data    []byte // the samples, concatenated, and 8 bytes of zeros
	k, d    int
	// shift and mask make a d-mer's hash from the 8 bytes at its start.
	shift uint
	mask  uint64
	worth []uint32 // per hash: in how many samples it occurs, zero once picked
	seen  []uint32 // per hash: the last sample counted + 1; then counts in the window
}

func newTrainer(samples [][]byte, n int64, tableBits, k, d int) *trainer {
	t := &trainer{samples: samples, k: k, d: d, shift: uint(64 - tableBits), mask: ^uint64(0) >> (64 - 8*d)}
	t.data = make([]byte, 0, n+8)
	for _, s := range samples {
		t.data = append(t.data, s...)
	}
	t.data = append(t.data, make([]byte, 8)...)
	t.worth = make([]uint32, 1<<tableBits)
	t.seen = make([]uint32, 1<<tableBits)
	return t
}

// hash returns the table index of the d-mer at p.
func (t *trainer) hash(p int) uint32 {
	v := binary.LittleEndian.Uint64(t.data[p:]) & t.mask
	return uint32((v * 0x9E3779B97F4A7C15) >> t.shift)
}

// dmers returns how many d-mers start in the concatenation.
func (t *trainer) dmers() int {
	return len(t.data) - 8 - t.d + 1
}

// count sets each d-mer's worth to the number of samples it occurs in,
// counting only d-mers that lie within one sample.
func (t *trainer) count() {
	start := 0
	for i, s := range t.samples {
		id, end := uint32(i+1), start+len(s)
		for p := start; p+t.d <= end; p++ {
			h := t.hash(p)
			if t.seen[h] != id {
				t.seen[h] = id
				t.worth[h]++
			}
		}
		start = end
	}
	clear(t.seen)
}

// segment is a picked run of the concatenation and its worth.
type segment struct {
	begin, end int // data[begin:end]
	worth      uint64
}

// build picks segments round the epochs until size bytes are picked or
// a round of the epochs finds nothing worth anything, and lays them out,
// most valuable last.
func (t *trainer) build(size int) ([]byte, int) {
	n := t.dmers()
	epochs := max(1, size/t.k/passes)
	epochLen := n / epochs
	if epochLen < minEpochSegments*t.k {
		epochLen = min(minEpochSegments*t.k, n)
		epochs = n / epochLen
	}
	segs := make([]segment, 0, size/t.d+1)
	picked, zeroRun := 0, 0
	for e := 0; picked < size; e = (e + 1) % epochs {
		begin, end := e*epochLen, (e+1)*epochLen
		if e == epochs-1 {
			end = n // the last epoch takes the remainder
		}
		s := t.pick(begin, end)
		if s.worth == 0 {
			if zeroRun++; zeroRun >= epochs { // a round found nothing
				break
			}
			continue
		}
		zeroRun = 0
		s.end = min(s.end, s.begin+size-picked)
		segs = append(segs, s)
		picked += s.end - s.begin
	}
	// Most valuable last; equals in the order picked.
	slices.SortStableFunc(segs, func(a, b segment) int {
		switch {
		case a.worth > b.worth:
			return 1
		case a.worth < b.worth:
			return -1
		}
		return 0
	})
	if picked == 0 {
		return nil, 0
	}
	dict := make([]byte, 0, picked)
	for _, s := range segs {
		dict = append(dict, t.data[s.begin:s.end]...)
	}
	return dict, len(segs)
}

// pick returns the most valuable segment of d-mers starting in
// [begin, end): the window of k bytes whose distinct d-mers are worth most,
// first of equals, trimmed of d-mers worth nothing at either end; and it
// zeroes the worth of the d-mers in it. A segment of no worth when the
// epoch has nothing left.
func (t *trainer) pick(begin, end int) segment {
	w := t.k - t.d + 1 // d-mers in a window
	var best segment
	var cur uint64
	for p := begin; p < end; p++ {
		h := t.hash(p)
		if t.seen[h] == 0 {
			cur += uint64(t.worth[h])
		}
		t.seen[h]++
		if q := p - w + 1; q > begin {
			old := t.hash(q - 1)
			if t.seen[old]--; t.seen[old] == 0 {
				cur -= uint64(t.worth[old])
			}
		}
		if cur > best.worth {
			best = segment{begin: max(begin, p-w+1), end: p + 1, worth: cur}
		}
	}
	// Empty the window's counts: only the last w d-mers are still in it.
	for p := max(begin, end-w); p < end; p++ {
		t.seen[t.hash(p)] = 0
	}
	if best.worth == 0 {
		return best
	}
	// best.begin and best.end bound d-mer starts; trim those worth nothing.
	for best.begin < best.end && t.worth[t.hash(best.begin)] == 0 {
		best.begin++
	}
	for best.end > best.begin && t.worth[t.hash(best.end-1)] == 0 {
		best.end--
	}
	for p := best.begin; p < best.end; p++ {
		t.worth[t.hash(p)] = 0
	}
	best.end += t.d - 1 // the bytes of the last d-mer
	return best
}
