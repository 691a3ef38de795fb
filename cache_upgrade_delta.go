package squeeze

import (
	"bytes"
	"io"
	"weak"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/writers"
)

// This file holds what the cache's upgrade worker (cache.go) needs to
// upgrade a delta, a dcz or dcb encoding made against a dictionary: the
// dictionary-aware encoders at the best level, the decoder of an entry
// kept without its plain bytes, and what both cost the budget. An upgraded
// delta keeps the framing and the window limits of RFC 9842 §4: dcz's
// window is dczWindow of the dictionary, as at the Middleware's level, and
// dcb's is dcbWindowBits, the dictionary being reached beyond it.

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
		return &framedEncoder{header: cdt.Header(DCZ, d.hash), inner: zw}, nil
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
		return &framedEncoder{header: cdt.Header(DCB, d.hash), inner: bw}, nil
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

// upgradeSource is what an upgrade of an entry needs beyond the entry: the
// dictionary of a dcz or dcb key, and the fleet's store of the Middleware
// that found the entry, each nil when there is none.
type upgradeSource struct {
	dict   *dictionary
	shared *shared
}

// newUpgradeJob returns the job of upgrading e, stored under k, at level
// best, with what src holds.
func newUpgradeJob(k *cacheKey, e *cacheEntry, best int, src upgradeSource) upgradeJob {
	j := upgradeJob{key: *k, entry: e, best: best, shared: src.shared}
	if src.dict != nil && k.dictionary != "" {
		j.dict = weak.Make(src.dict)
	}
	return j
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
