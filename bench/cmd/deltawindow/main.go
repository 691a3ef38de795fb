// Command deltawindow measures what dcz loses when its encoder is given
// only the last bytes of a learned dictionary as its raw dictionary, as
// squeeze's dcz encoder does past dczHistoryMax (dictionary_encoder.go):
// zstd's matches into a raw-content dictionary are offsets back from the
// frame's start, so a frame coded against the dictionary's tail decodes
// identically with the whole dictionary, and the encoder's work no longer
// grows with the dictionary's size. On each real corpus (bench.Sites, the
// same halves cmd/trainer uses) it trains a dictionary of -size bytes with
// internal/train on the training half, then codes every held-out page at
// zstd -level (klauspost/compress, as dcz does) with no dictionary, the
// whole dictionary and its last -suffixes bytes, decoding each frame with
// the whole dictionary to prove it, and prints a Markdown table of the
// bytes and the process CPU time of the coding.
//
//	go run ./cmd/deltawindow
//	go run ./cmd/deltawindow -size 262144 -suffixes 65536,131072
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/bench"
	"github.com/squeezehttp/squeeze/internal/train"
)

func main() {
	npm := flag.String("npm", "/tmp/trainer-corpora", "directory the npm packages are unpacked under (numbers/, dates/)")
	size := flag.Int("size", 1<<20, "dictionary size")
	suffixesFlag := flag.String("suffixes", "131072,262144,524288", "comma-separated suffix lengths")
	level := flag.Int("level", 3, "zstd level (3 is the level squeeze serves dcz at by default)")
	capBytes := flag.Int64("cap", 2<<20, "the most bytes of each half")
	rounds := flag.Int("rounds", 3, "times each held-out half is coded per variant, alternating, for the CPU column")
	flag.Parse()
	var suffixes []int
	for _, s := range strings.Split(*suffixesFlag, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-suffixes: %q is not a size", s))
		}
		suffixes = append(suffixes, n)
	}
	fmt.Printf("| corpus | tuned on | dictionary | encoder's dictionary | held-out bytes (dcz %d) | vs whole | CPU vs whole |\n", *level)
	fmt.Println("| --- | --- | ---: | --- | ---: | ---: | ---: |")
	for _, c := range bench.Sites(*npm) {
		trainHalf, held, err := c.Load(*capBytes)
		if err != nil {
			fail(err)
		}
		r, err := train.Train(trainHalf, *size, 1<<30, train.Options{})
		if err != nil {
			fail(fmt.Errorf("%s: %w", c.Name, err))
		}
		full := r.Dict
		tuned := "no (held out)"
		if c.Tuned {
			tuned = "yes"
		}
		type variant struct {
			label string
			raw   []byte
			enc   *zstd.Encoder
			bytes int64
			cpu   time.Duration
		}
		vs := []*variant{{label: "none"}, {label: fmt.Sprintf("whole (%d B)", len(full)), raw: full}}
		for _, n := range suffixes {
			if n < len(full) {
				vs = append(vs, &variant{label: fmt.Sprintf("last %d KiB", n>>10), raw: full[len(full)-n:]})
			}
		}
		dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(0, full), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			fail(err)
		}
		for _, v := range vs {
			o := []zstd.EOption{zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(*level)), zstd.WithEncoderConcurrency(1),
				zstd.WithWindowSize(window(len(v.raw))), zstd.WithLowerEncoderMem(true)}
			if v.raw != nil {
				o = append(o, zstd.WithEncoderDictRaw(0, v.raw))
			}
			if v.enc, err = zstd.NewWriter(nil, o...); err != nil {
				fail(err)
			}
		}
		var buf, out []byte
		for round := range *rounds {
			for _, v := range vs {
				t0, _ := bench.CPUTime()
				for _, doc := range held {
					buf = v.enc.EncodeAll(doc, buf[:0])
					if round == 0 {
						v.bytes += int64(len(buf))
					}
				}
				t1, _ := bench.CPUTime()
				v.cpu += t1 - t0
				if round > 0 {
					continue
				}
				for _, doc := range held { // outside the CPU time
					buf = v.enc.EncodeAll(doc, buf[:0])
					if v.raw != nil {
						if out, err = dec.DecodeAll(buf, out[:0]); err != nil || !bytes.Equal(out, doc) {
							fail(fmt.Errorf("%s, %s: a frame does not decode to its page with the whole dictionary (%v)", c.Name, v.label, err))
						}
					}
				}
			}
		}
		whole := vs[1]
		for _, v := range vs {
			fmt.Printf("| %s | %s | %d KiB | %s | %d | %+.2f%% | %.2fx |\n", c.Name, tuned, *size>>10, v.label, v.bytes,
				100*(float64(v.bytes)/float64(whole.bytes)-1), float64(v.cpu)/float64(whole.cpu))
		}
	}
}

// window is squeeze's dcz window for a dictionary of n bytes: a power of
// two covering it and 64 KiB beyond.
func window(n int) int {
	return max(1<<bits.Len(uint(n+64<<10-1)), zstd.MinWindowSize)
}

func fail(err error) {
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "deltawindow: a corpus is missing:", err)
	}
	fmt.Fprintln(os.Stderr, "deltawindow:", err)
	os.Exit(1)
}
