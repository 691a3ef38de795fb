package squeeze

import (
	"bytes"
	"slices"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
)

// This file holds the choice of the delta codings a learned dictionary is
// offered in (learned.go). Every round of a route encodes samples the
// dictionary was not trained on (those a training held out, or a later
// round's, for the live dictionary, one from the fleet's store included)
// as each of the store's delta codings (dcz and dcb, at the Middleware's
// levels, headers included) and in the coding each replaces (zstd and br
// from the Middleware's pools, as a streamed delta is probed against it).
// A delta coding that does not come out smaller than the coding it
// replaces is not offered against the dictionary, and of those that are,
// one that came out smaller than the store's preferred one by more than
// learnedCodingSlack goes first: a client that accepts both (Chromium
// does) gets the smaller, so a route where dcz loses gets dcb. The levels
// stay the Middleware's: on the sites the choice was made on, a higher
// level within a small multiple of the CPU saved less than what the
// smaller coding does, and held more memory per encoder (bench/measured/
// trainer.md, in BENCHMARKS.md: "Learned dictionaries served at the
// defaults").

// learnedCodingSlack is how much smaller a delta coding must come out than
// the store's preferred one to go first: within it, the store's order
// (WithEncodings) holds.
const learnedCodingSlack = 0.03

// codingTrial is what one delta coding did to a round's held-out samples:
// their bytes as the delta and in the coding it replaces.
type codingTrial struct {
	coding          string
	delta, replaced int64
}

// deltaCodingsOf returns the delta codings to offer against a dictionary
// of which trials measured each of the store's, in the store's order:
// those that came out smaller than the coding they replace, the smaller
// first unless within learnedCodingSlack of each other.
func deltaCodingsOf(trials []codingTrial) []string {
	var won []codingTrial
	for _, t := range trials {
		if t.delta < t.replaced {
			won = append(won, t)
		}
	}
	slices.SortStableFunc(won, func(a, b codingTrial) int {
		switch {
		case float64(a.delta) < float64(b.delta)*(1-learnedCodingSlack):
			return -1
		case float64(b.delta) < float64(a.delta)*(1-learnedCodingSlack):
			return 1
		}
		return 0
	})
	var out []string
	for _, t := range won {
		out = append(out, t.coding)
	}
	return out
}

// chooseCodings encodes held, samples data was not trained on, as each of
// the store's delta codings against data and in the coding each replaces,
// and returns the codings to offer data's deltas in (deltaCodingsOf), with
// what dcz at the store's zstd level did against the zstd it replaces (the
// round's measure, which LearnedRetrainBelow is compared with). It returns
// false when nothing could be measured.
func (l *learner) chooseCodings(data []byte, held [][]byte) ([]string, learnedMeasure, bool) {
	var trials []codingTrial
	var dcz *codingTrial
	for _, coding := range l.s.codings {
		t, ok := l.trial(coding, data, held)
		if !ok {
			return nil, learnedMeasure{}, false
		}
		trials = append(trials, t)
		if coding == DCZ {
			dcz = &trials[len(trials)-1]
		}
	}
	if dcz == nil {
		t, ok := l.trial(DCZ, data, held)
		if !ok {
			return nil, learnedMeasure{}, false
		}
		dcz = &t
	}
	var plain int64
	for _, h := range held {
		plain += int64(len(h))
	}
	// The measure is of the codec, without the header, as
	// LearnedRetrainBelow speaks of it.
	body := dcz.delta - int64(len(held)*len(cdt.Header(DCZ, [32]byte{})))
	m := learnedMeasure{ratio: float64(body) / float64(dcz.replaced), savedPerByte: float64(dcz.replaced-body) / float64(plain)}
	return deltaCodingsOf(trials), m, true
}

// trial encodes held as coding against data and in the coding it replaces.
func (l *learner) trial(coding string, data []byte, held [][]byte) (codingTrial, bool) {
	t := codingTrial{coding: coding}
	var err error
	if t.delta, err = encodeAll(coding, l.s.level(coding), data, held); err != nil {
		return t, false
	}
	for _, h := range held {
		n, ok := l.encodedLen(coding, h)
		if !ok {
			return t, false
		}
		t.replaced += n
	}
	return t, t.replaced > 0
}

// encodeAll returns the bytes of samples encoded one by one as coding (dcz
// or dcb) at level against dict, a learned dictionary, as the store's
// encoders encode them (dcz against its tail, dczTail), header included.
func encodeAll(coding string, level int, dict []byte, samples [][]byte) (int64, error) {
	n := int64(len(samples) * len(cdt.Header(coding, [32]byte{})))
	if coding == DCZ {
		w, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(dczWindow(len(dczTail(dict)))), zstd.WithEncoderDictRaw(0, dczTail(dict)))
		if err != nil {
			return 0, err
		}
		defer func() { _ = w.Close() }()
		var buf []byte
		for _, p := range samples {
			buf = w.EncodeAll(p, buf[:0])
			n += int64(len(buf))
		}
		return n, nil
	}
	prepared, err := brrr.PrepareDictionary(dict)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w, err := brrr.NewWriterOptions(&buf, level, brrr.WriterOptions{LGWin: dcbWindowBits, Dictionaries: []*brrr.PreparedDictionary{prepared}})
	if err != nil {
		return 0, err
	}
	for _, p := range samples {
		buf.Reset()
		w.Reset(&buf)
		if _, err := w.Write(p); err != nil {
			return 0, err
		}
		if err := w.Close(); err != nil {
			return 0, err
		}
		n += int64(buf.Len())
	}
	return n, nil
}
