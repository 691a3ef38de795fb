package writers_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// Reuse must really reuse: a codec that rebuilds its window or tables on
// Reset turns a pool into a slow allocator. After warm-up, one response
// (Reset, Write of a 16 KiB body, Close) allocates nothing at all, so the
// bound is zero, not "a few": any allocation is a regression in reuse.
//
// With a Flush in the middle, zstd switches from its one-shot path to a
// streamed frame, and klauspost/compress lets two scratch arrays escape to
// the io.Writer (the frame header and the checksum: 24 bytes in all), so
// that case allows 2.
//
// br 10 and 11 are exempt: andybalholm/brotli's Zopfli path allocates its
// cost models per meta-block (about 40 allocations for 16 KiB). They are far
// too slow for on-the-fly compression anyway.
// zstdSpeeds holds one zstd level for each of the encoder's four speeds
// (fastest, default, better, best); the levels between share their code.
var zstdSpeeds = []int{1, 3, 7, 11}

func TestEncoderReuseDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	body := corpus.Prefix(t, corpus.HTML(t), 16<<10)
	for _, flush := range []bool{false, true} {
		for _, coding := range codings {
			for _, level := range validLevels(t, coding) {
				if coding == writers.Brotli && level >= 10 {
					continue
				}
				if coding == writers.Zstd && !slices.Contains(zstdSpeeds, level) {
					continue
				}
				t.Run(fmt.Sprintf("flush=%v/%s/%d", flush, coding, level), func(t *testing.T) {
					e := newEncoder(t, coding, level)
					var out bytes.Buffer
					out.Grow(64 << 10)
					run := func() {
						out.Reset()
						e.Reset(&out)
						if _, err := e.Write(body); err != nil {
							t.Fatal(err)
						}
						if flush {
							if err := e.Flush(); err != nil {
								t.Fatal(err)
							}
						}
						if err := e.Close(); err != nil {
							t.Fatal(err)
						}
					}
					run() // the first stream sizes the tables and buffers
					runs := 5
					if level == defaultLevel(t, coding) {
						runs = 50
					}
					bound := 0.0
					// A flush costs zstd two small allocations, and go-brrr
					// (br from level 2) two as well.
					if flush && (coding == writers.Zstd || coding == writers.Brotli) {
						bound = 2
					}
					if allocs := testing.AllocsPerRun(runs, run); allocs > bound {
						t.Errorf("%v allocations per reused stream; want at most %v", allocs, bound)
					}
				})
			}
		}
	}
}

// The decoder side of the same guarantee: Reset onto a new body and read it
// all into a buffer that already has room. br allocates its context map and
// context modes for every meta-block inside andybalholm/brotli (a 16 KiB
// body is one meta-block: 3 allocations, a few hundred bytes); the ring
// buffer and Huffman tables, the large parts, are reused.
func TestDecoderReuseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	body := corpus.Prefix(t, corpus.HTML(t), 16<<10)
	bound := map[string]float64{writers.Gzip: 0, writers.Deflate: 0, writers.Zstd: 0, writers.Brotli: 3}
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			stream := encode(t, coding, defaultLevel(t, coding), body)
			d := newDecoder(t, coding)
			src := bytes.NewReader(stream)
			var out bytes.Buffer
			out.Grow(64 << 10)
			run := func() {
				out.Reset()
				src.Reset(stream)
				if err := d.Reset(src); err != nil {
					t.Fatal(err)
				}
				if _, err := out.ReadFrom(d); err != nil {
					t.Fatal(err)
				}
				if err := d.Reset(nil); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if !bytes.Equal(out.Bytes(), body) {
				t.Fatal("decoded the wrong bytes")
			}
			if allocs := testing.AllocsPerRun(50, run); allocs > bound[coding] {
				t.Errorf("%v allocations per reused stream; want at most %v", allocs, bound[coding])
			}
		})
	}
}
