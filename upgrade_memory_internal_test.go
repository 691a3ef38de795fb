package squeeze

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/writers"
)

// allocated returns what fn allocates on the heap in all, out's growth
// apart (out may be nil), and what it leaves held after a collection: kept
// alive by fn's result until then. runtime.MemStats counts what every
// goroutine allocates, and other tests' leftovers may allocate meanwhile,
// so while the total is over bound it measures again, up to three times in
// all, and returns the least total and what that run held: fn builds what
// it measures anew each time, and out starts empty, so it allocates the
// same.
func allocated(bound int64, out *bytes.Buffer, fn func() any) (total, held int64) {
	total = math.MaxInt64
	for range 3 {
		if out != nil {
			*out = bytes.Buffer{}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v := fn()
		runtime.ReadMemStats(&after)
		t := int64(after.TotalAlloc - before.TotalAlloc)
		if out != nil {
			t -= int64(out.Cap())
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(v)
		if t < total {
			total, held = t, int64(after.HeapAlloc)-int64(before.HeapAlloc)
		}
		if total <= bound {
			break
		}
	}
	return total, held
}

// writeAndClose writes p through w and closes it, failing t on an error.
func writeAndClose(t *testing.T, w io.WriteCloser, p []byte) {
	t.Helper()
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// scriptVersions returns a dictionary of size bytes of lines that compress,
// and the next version of it: the same bytes with seven changes.
func scriptVersions(size int) (*dictionary, []byte) {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString("line " + strconv.Itoa(i*7919%100003) + " of a script that compresses\n")
	}
	dict := []byte(b.String()[:size])
	plain := bytes.Clone(dict)
	for i := len(plain) / 7; i < len(plain); i += len(plain) / 7 {
		copy(plain[i:], "a change of the next version")
	}
	return &dictionary{hash: sha256.Sum256(dict), data: dict}, plain
}

// The budget an upgrade claims for its encoder and decoder bounds all they
// allocate, tables and transient buffers of one encode or decode together:
// what an upgrade holds at any moment is within what it claimed.
func TestUpgradeCodecMemoryIsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	var b strings.Builder
	for i := 0; b.Len() < 512<<10; i++ {
		b.WriteString("line " + strconv.Itoa(i*7919%100003) + " of a page that compresses\n")
	}
	plain := []byte(b.String())
	const MiB = 1 << 20
	for _, coding := range []string{writers.Zstd, writers.Brotli, writers.Gzip, writers.Deflate} {
		for _, level := range upgradeLevels(coding, upgradeLevel(coding)) {
			var encoded bytes.Buffer
			total, held := allocated(encoderMemory(coding, level), &encoded, func() any {
				enc, err := writers.NewEncoder(coding, level)
				if err != nil {
					t.Fatal(err)
				}
				enc.Reset(&encoded)
				writeAndClose(t, enc, plain)
				return enc
			})
			t.Logf("%s-%d: %.1f MiB allocated, %.1f MiB held; claims %.1f MiB",
				coding, level, float64(total)/MiB, float64(held)/MiB, float64(encoderMemory(coding, level))/MiB)
			if total > encoderMemory(coding, level) {
				t.Errorf("%s-%d allocates %.1f MiB; an upgrade claims %.1f MiB for it",
					coding, level, float64(total)/MiB, float64(encoderMemory(coding, level))/MiB)
			}
		}
		// The cache's own encodings at the default level are what an
		// upgrade decodes.
		enc, err := writers.NewEncoder(coding, 5-2*boolInt(coding == writers.Zstd))
		if err != nil {
			t.Fatal(err)
		}
		var encoded bytes.Buffer
		enc.Reset(&encoded)
		_, _ = enc.Write(plain)
		_ = enc.Close()
		total, _ := allocated(decoderMemory+upgradeChunk, nil, func() any {
			dec, err := writers.NewDecoder(coding)
			if err != nil {
				t.Fatal(err)
			}
			if err := dec.Reset(bytes.NewReader(encoded.Bytes())); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, upgradeChunk)
			for {
				if _, err := io.ReadFull(dec, buf); err != nil {
					break
				}
			}
			return dec
		})
		t.Logf("%s decoder: %.1f MiB allocated; claims %.1f MiB", coding, float64(total)/MiB, float64(decoderMemory+upgradeChunk)/MiB)
		if total > decoderMemory+upgradeChunk {
			t.Errorf("a %s decoder allocates %.1f MiB; an upgrade claims %.1f MiB for it and its buffer",
				coding, float64(total)/MiB, float64(decoderMemory+upgradeChunk)/MiB)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// What a FileServer encoding claims of the store's budget for its encoder
// (fileEncoderMemory) bounds all the encoder allocates, built anew and run
// over a file once: for a delta, at the levels the middleware was given,
// whatever level the dictionary's pool reports.
func TestFileEncoderMemoryBoundsWhatTheEncoderAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	const MiB = 1 << 20
	for _, levels := range []struct{ zstd, br int }{{3, 5}, {1, 2}, {19, 11}} {
		for _, size := range []int{16 << 10, 256 << 10, 2 << 20} {
			d, plain := scriptVersions(size)
			s, err := newDictStore(&config{dictMatch: []string{"/*"}, dictStoreSize: 64 << 20}, levels.zstd, levels.br)
			if err != nil {
				t.Fatal(err)
			}
			for _, coding := range []string{DCZ, DCB} {
				build := s.newDCZ
				if coding == DCB {
					build = s.newDCB
				}
				p, err := build(d)
				if err != nil {
					t.Fatal(err)
				}
				// Take the encoder the pool was built with, so the one
				// measured is built anew.
				first, err := p.Get(nil)
				if err != nil {
					t.Fatal(err)
				}
				claim := fileEncoderMemory(&offer{coding: coding, encoders: p, dict: d}, s)
				var encoded bytes.Buffer
				total, _ := allocated(claim, &encoded, func() any {
					enc, err := p.Get(&encoded)
					if err != nil {
						t.Fatal(err)
					}
					writeAndClose(t, enc, plain)
					return enc
				})
				p.Put(first)
				name := coding + "-" + strconv.Itoa(levels.zstd) + "/" + strconv.Itoa(levels.br)
				t.Logf("%d KiB %s: %.1f MiB allocated; claims %.1f MiB", size>>10, name, float64(total)/MiB, float64(claim)/MiB)
				if total > claim {
					t.Errorf("%d KiB %s allocates %.1f MiB; a FileServer encoding claims %.1f MiB for it",
						size>>10, name, float64(total)/MiB, float64(claim)/MiB)
				}
			}
		}
	}
}
