package squeeze

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/writers"
)

// This file is the one home of best-level work, for the Cache's upgrade
// worker (cache.go) and the FileServer's (fileserver_upgrade.go) alike:
// which level is best (BestLevel, upgradeLevel) and the fallbacks when the
// budget has no room for it (upgradeLevels); the encoders an upgrade
// builds for one encoding, the dictionary-aware ones for deltas included
// (newUpgradeEncoder); the decoders of an entry kept without its plain
// bytes (newUpgradeDecoder); and one estimate of what each holds
// (encoderMemory and the estimates built on it), which the budgets claim
// before the work starts. An upgraded delta keeps the framing and the
// window limits of RFC 9842 §4: dcz's window is dczWindow of the
// dictionary, as at the Middleware's level, and dcb's is dcbWindowBits,
// the dictionary being reached beyond it.

// BestLevel returns the level squeeze's precompression uses for coding:
// the highest the codec has ([writers.Levels]), except zstd at 19, as the
// zstd command line's highest level without --ultra (klauspost/compress
// runs 10 to 22 alike). It reads coding as [WithEncodings] and [WithLevel]
// do: case-insensitively, "x-gzip" meaning gzip. For a coding it does not
// know ("identity", "dcz", a typo) it returns -1, a level that no coding
// takes, so that passing it on to [WithLevel] or [writers.NewEncoder] is
// an error rather than a valid level of another coding.
//
// It is the level of every best-level encoding squeeze makes: the
// [Cache]'s upgrades and the [Middleware.FileServer]'s, of deltas too
// (dcz at zstd's, dcb at br's), so that both name one encoding alike in a
// fleet's store ([WithSharedStore]).
func BestLevel(coding string) int {
	canonical, ok := writers.Canonical(coding)
	if !ok {
		return -1
	}
	if canonical == Zstd {
		return 19
	}
	r, _ := writers.Levels(canonical)
	return r.Max
}

// upgradeLevel is the level a best-level upgrade of coding encodes at, the
// Cache's and the FileServer's, a delta's included: BestLevel of the codec
// it runs on (dcz zstd's, dcb br's). zstd's is 19, not 22: klauspost/compress
// runs 10 to 22 alike, so a higher number would only name the same bytes
// under another key in a fleet's store, and make an encoding at 19 look
// short of the best.
func upgradeLevel(coding string) int {
	return BestLevel(deltaCodec(coding))
}

// reachedBest reports whether an encoding of coding at level is at its
// best: at upgradeLevel or above, which encodes no better.
func reachedBest(coding string, level int) bool {
	return level >= upgradeLevel(coding)
}

// upgradeLevels are the levels an upgrade tries for coding, best first:
// when the budget has no room for a best-level encoder, a lesser one still
// gains.
func upgradeLevels(coding string, best int) []int {
	switch deltaCodec(coding) {
	case writers.Zstd:
		return []int{best, 9}
	case writers.Brotli:
		return []int{best, 7, 6}
	}
	return []int{best}
}

// encoderMemory bounds the heap an encoder for coding at level allocates
// over its life, tables and transient buffers of one encode together
// (TestUpgradeCodecMemoryIsBounded checks it). zstd runs levels 10-22 as
// klauspost/compress's best, with its largest tables; br 9 and over search
// deeper hash chains, and 10-11 allocate their tables at each encode.
func encoderMemory(coding string, level int) int64 {
	const MiB = 1 << 20
	switch {
	case coding == writers.Zstd && level >= 10:
		return 38 * MiB
	case coding == writers.Zstd:
		return 6 * MiB
	case coding == writers.Brotli && level >= 9:
		return 42 * MiB
	case coding == writers.Brotli && level >= 8:
		return 21 * MiB
	case coding == writers.Brotli && level >= 7:
		return 12 * MiB
	case coding == writers.Brotli:
		return 7 * MiB
	}
	return 2 * MiB // gzip and deflate
}

// decoderMemory bounds what a decoder of an entry allocates: the cache's
// own encodings, whose windows NewEncoder keeps to 256 KiB at most.
const decoderMemory = 1 << 20

// deltaCodec returns the codec a coding runs on: zstd for dcz, br for dcb,
// and coding itself for the others.
func deltaCodec(coding string) string {
	switch coding {
	case DCZ:
		return writers.Zstd
	case DCB:
		return writers.Brotli
	}
	return coding
}

// upgradeEncoderMemory bounds what the upgrade worker's encoder for coding
// at level holds, with d as its dictionary for dcz and dcb
// (TestUpgradeDeltaCodecMemoryIsBounded checks it): the codec's own memory
// (encoderMemory), and for a delta what the dictionary adds. A dcb encoder
// prepares its own tables for d (dcbTableBytes): the dictionary store's are
// built inside its pool and are not reachable from here; from level 10 its
// search over the dictionary allocates more still. A zstd encoder with a
// dictionary keeps a second set of tables, primed with d, beside its own,
// and copies d into a history of up to dczWindow.
func upgradeEncoderMemory(coding string, level int, d *dictionary) int64 {
	const MiB = 1 << 20
	w := encoderMemory(deltaCodec(coding), level)
	switch n := int64(len(d.dataOrNil())); {
	case d == nil:
	case coding == DCB && level >= 10:
		w += dcbTableBytes(int(n)) + 4*n + 12*MiB
	case coding == DCB:
		w += dcbTableBytes(int(n)) + 4*n
	case coding == DCZ:
		w = 2*w + 2*int64(dczWindow(int(n))) + 2*n
	}
	return w
}

// dataOrNil returns d's bytes, or nil for no dictionary.
func (d *dictionary) dataOrNil() []byte {
	if d == nil {
		return nil
	}
	return d.data
}

// newUpgradeEncoder returns an encoder for coding at level, against d for
// dcz and dcb, behind the header that names d.
func newUpgradeEncoder(coding string, level int, d *dictionary) (writers.Encoder, error) {
	switch coding {
	case DCZ:
		zw, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(dczWindow(len(d.data))),
			zstd.WithLowerEncoderMem(true),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderDictRaw(0, d.data),
		)
		if err != nil {
			return nil, err
		}
		return newFramedEncoder(cdt.Header(DCZ, d.hash), zw), nil
	case DCB:
		prepared, err := brrr.PrepareDictionary(d.data)
		if err != nil {
			return nil, err
		}
		bw, err := brrr.NewWriterOptions(nil, level, brrr.WriterOptions{
			Dictionaries: []*brrr.PreparedDictionary{prepared},
			LGWin:        dcbWindowBits,
		})
		if err != nil {
			return nil, err
		}
		return newFramedEncoder(cdt.Header(DCB, d.hash), bw), nil
	}
	return writers.NewEncoder(coding, level)
}

// encodeOnce returns plain encoded by enc, an encoder built for this one
// encoding.
func encodeOnce(enc writers.Encoder, plain []byte) ([]byte, error) {
	var out bytes.Buffer
	enc.Reset(&out)
	if _, err := enc.Write(plain); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// deltaDecoderMemory bounds what decoding a delta against d holds: the
// window a dcz stream may declare with d (RFC 9842 §4) and a copy of d, or
// brotli's 16 MB window for dcb, less when the stream is short: a decoder
// never holds more window than the bytes it writes.
func deltaDecoderMemory(coding string, d *dictionary, plainMax int64) int64 {
	w := min(cdt.ZstdWindow(len(d.data)), plainMax+upgradeChunk)
	if coding == DCB {
		w = min(16<<20, plainMax+upgradeChunk)
	}
	return decoderMemory + w + 2*int64(len(d.data))
}

// newDeltaDecoder returns a reader of the plain bytes of body, a dcz or dcb
// stream against d, which checks the header names d. Callers bound what
// they read from it.
func newDeltaDecoder(coding string, body []byte, d *dictionary) (io.Reader, func(), error) {
	return decode.NewDictionaryReader(coding, bytes.NewReader(body), decode.Dictionary{Data: d.data, Hash: d.hash})
}

// upgradeDecoderMemory bounds what decoding an entry of coding kept without
// its plain bytes holds, against d for a delta; plainMax bounds its plain
// bytes.
func upgradeDecoderMemory(coding string, d *dictionary, plainMax int64) int64 {
	if d == nil {
		return decoderMemory
	}
	return deltaDecoderMemory(coding, d, plainMax)
}

// newUpgradeDecoder returns a reader of the plain bytes of body, encoded
// with coding (against d for a delta), and what ends it.
func newUpgradeDecoder(coding string, body []byte, d *dictionary) (io.Reader, func(), error) {
	if d != nil {
		return newDeltaDecoder(coding, body, d)
	}
	dec, err := writers.NewDecoder(coding)
	if err != nil {
		return nil, nil, err
	}
	if err := dec.Reset(bytes.NewReader(body)); err != nil {
		return nil, nil, err
	}
	return dec, func() {}, nil
}

// fileEncoderMemory bounds what the encoder of o holds, built anew and run
// over a file once (TestFileEncoderMemoryBoundsWhatTheEncoderAllocates
// checks it). A plain coding's encoder is its pool's, at the pool's level. A
// delta's comes from the dictionary store's pool for o.dict, built at dicts'
// level for the codec (such a pool does not know its level) just as an
// upgrade encoder at that level is, so it is bounded as one
// (upgradeEncoderMemory), but for the prepared dcb tables: the store's pool
// shares them, and the store's budget counts them.
func fileEncoderMemory(o *offer, dicts *dictStore) int64 {
	if o.dict == nil {
		return encoderMemory(o.coding, o.encoders.Level())
	}
	n := upgradeEncoderMemory(o.coding, dicts.level(o.coding), o.dict)
	if o.coding == DCB {
		n -= dcbTableBytes(len(o.dict.data))
	}
	return n
}
