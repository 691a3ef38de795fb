// Command trainer measures squeeze's dictionary trainer (internal/train)
// against `zstd --train` (the CLI's default, fastCover with its own
// parameter search) and klauspost/compress/dict's BuildRawDict, on real
// sites no one here wrote. Each corpus is one site's pages, sorted by
// name and split alternately into a training half and a held-out half
// (as cmd/learned splits), each half capped at -cap bytes. Every trainer
// gets the training half and a size; every dictionary is then used as
// raw content (for zstd --train's, the content zstd.InspectDictionary
// finds, without its entropy tables), by the same encoders, on the
// held-out half: the zstd CLI at -19 with -D, squeeze's dcz encoder
// (klauspost/compress/zstd with WithEncoderDictRaw, at -dcz) and its dcb
// encoder (go-brrr with a prepared dictionary, at -dcb). It prints the
// Markdown tables of BENCHMARKS.md#dictionary-trainer.
//
//	go run ./cmd/trainer                  # every corpus, 64 KiB, 256 KiB, 1 MiB
//	go run ./cmd/trainer -only git-doc -trainers ours -k 512 -d 6   # tuning
//
// The corpora are Debian and npm packages; the program fails, saying how to
// install one, when it is missing:
//
//	apt-get install git-doc python3-doc sqlite3-doc
//	npm pack cldr-numbers-full@48.2.0 cldr-dates-full@48.2.0, each unpacked
//	  into a directory of its own under -npm (numbers/, dates/)
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/bench"
	"github.com/squeezehttp/squeeze/internal/train"
)

func main() {
	npm := flag.String("npm", "/tmp/trainer-corpora", "directory the npm packages are unpacked under (numbers/, dates/)")
	only := flag.String("only", "", "comma-separated corpus names (a prefix each) to measure; all when empty")
	sizesFlag := flag.String("sizes", "65536,262144,1048576", "comma-separated dictionary sizes")
	trainers := flag.String("trainers", "zstd,ours,buildraw", "comma-separated trainers: zstd (the CLI's --train, the reference, first), ours, buildraw")
	cliOnly := flag.Bool("cli-only", false, "encode with the zstd CLI only (for tuning)")
	capBytes := flag.Int64("cap", 2<<20, "the most bytes of each half")
	k := flag.Int("k", 0, "our trainer's segment length (0: its default)")
	d := flag.Int("d", 0, "our trainer's d-mer length (0: its default)")
	dczLevel := flag.Int("dcz", 3, "zstd level of the dcz encoder (klauspost/compress; 3 is the level squeeze serves by default)")
	dcbLevel := flag.Int("dcb", 5, "brotli quality of the dcb encoder (go-brrr; 5 is the level squeeze serves by default)")
	flag.Parse()
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-sizes: %q is not a size", s))
		}
		sizes = append(sizes, n)
	}
	if _, err := exec.LookPath("zstd"); err != nil {
		fail(errors.New("the zstd CLI is not installed: apt-get install zstd"))
	}
	opts := train.Options{Segment: *k, Dmer: *d}
	fmt.Printf("| corpus | tuned on | size | trainer | dictionary | zstd -19 | vs zstd --train | dcz %d | dcb %d | training (CPU) | memory |\n", *dczLevel, *dcbLevel)
	fmt.Println("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range bench.Sites(*npm) {
		if !selected(c.Name, *only) {
			continue
		}
		trainHalf, held, err := c.Load(*capBytes)
		if err != nil {
			fail(err)
		}
		base, err := encode(nil, held, *dczLevel, *dcbLevel, *cliOnly)
		if err != nil {
			fail(fmt.Errorf("%s: %w", c.Name, err))
		}
		tuned := "no (held out)"
		if c.Tuned {
			tuned = "yes"
		}
		fmt.Printf("| %s | %s | | no dictionary (%d held-out pages, %d B; trained on %d, %d B) | | %d | | %d | %d | | |\n",
			c.Name, tuned, len(held), total(held), len(trainHalf), total(trainHalf), base.cli, base.dcz, base.dcb)
		for _, size := range sizes {
			var ref int64
			for _, name := range strings.Split(*trainers, ",") {
				r, err := trainWith(name, trainHalf, size, opts)
				if err != nil {
					fail(fmt.Errorf("%s, %d B, %s: %w", c.Name, size, name, err))
				}
				e, err := encode(r.dict, held, *dczLevel, *dcbLevel, *cliOnly)
				if err != nil {
					fail(fmt.Errorf("%s, %d B, %s: %w", c.Name, size, name, err))
				}
				vs := ""
				if name == "zstd" {
					ref = e.cli
				} else if ref > 0 {
					vs = fmt.Sprintf("%+.1f%%", 100*(float64(e.cli)/float64(ref)-1))
				}
				fmt.Printf("| %s | %s | %d KiB | %s | %d B | %d | %s | %d | %d | %.1f s | %s |\n",
					c.Name, tuned, size>>10, r.label, len(r.dict), e.cli, vs, e.dcz, e.dcb, r.elapsed.Seconds(), r.memory)
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trainer:", err)
	os.Exit(1)
}

func selected(name, only string) bool {
	if only == "" {
		return true
	}
	for _, o := range strings.Split(only, ",") {
		if strings.HasPrefix(strings.ToLower(name), strings.ToLower(o)) {
			return true
		}
	}
	return false
}

func total(docs [][]byte) int64 {
	var n int64
	for _, d := range docs {
		n += int64(len(d))
	}
	return n
}

// trained is one trainer's dictionary and what it cost.
type trained struct {
	label   string
	dict    []byte
	elapsed time.Duration
	memory  string
}

// trainWith trains a dictionary of size bytes on docs with the trainer
// called name.
func trainWith(name string, docs [][]byte, size int, o train.Options) (trained, error) {
	switch name {
	case "ours":
		var r train.Result
		var err error
		var el time.Duration
		alloc := allocated(func() { el = cpu(func() { r, err = train.Train(docs, size, 1<<30, o) }) })
		return trained{"ours (internal/train)", r.Dict, el, fmt.Sprintf("%.1f MiB allocated", float64(alloc)/(1<<20))}, err
	case "buildraw":
		var out []byte
		var err error
		var el time.Duration
		alloc := allocated(func() {
			el = cpu(func() { out, err = dict.BuildRawDict(docs, dict.Options{MaxDictSize: size, HashBytes: 6}) })
		})
		return trained{"dict.BuildRawDict", out, el, fmt.Sprintf("%.1f MiB allocated", float64(alloc)/(1<<20))}, err
	case "zstd":
		return zstdTrain(docs, size)
	}
	return trained{}, fmt.Errorf("no trainer %q", name)
}

// cpu returns the process CPU time f takes (its GC included): on a loaded
// machine, what the training costs rather than how long it waited.
func cpu(f func()) time.Duration {
	t0, _ := bench.CPUTime()
	f()
	t1, _ := bench.CPUTime()
	return t1 - t0
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// zstdTrain runs `zstd --train` on docs and returns the content of its
// dictionary.
func zstdTrain(docs [][]byte, size int) (trained, error) {
	t, err := bench.ZstdTrain(docs, size)
	if err != nil {
		return trained{}, err
	}
	return trained{fmt.Sprintf("zstd --train (content of %d B)", t.Full), t.Content, t.CPU, fmt.Sprintf("%.1f MiB peak RSS", float64(t.MaxRSS)/(1<<20))}, nil
}

// encoded is what a dictionary gave on the held-out half, summed: the zstd
// CLI at -19, the dcz encoder and the dcb encoder (bodies, no dcz or dcb
// header).
type encoded struct{ cli, dcz, dcb int64 }

// encode encodes every held-out page with raw (nil: no dictionary), with
// the CLI only when cliOnly.
func encode(raw []byte, held [][]byte, dczLevel, dcbLevel int, cliOnly bool) (encoded, error) {
	var e encoded
	var err error
	if e.cli, err = bench.ZstdCLI(19, raw, held); err != nil || cliOnly {
		return e, err
	}
	zo := []zstd.EOption{zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(dczLevel)), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(8 << 20)}
	if raw != nil {
		zo = append(zo, zstd.WithEncoderDictRaw(0, raw))
	}
	zw, err := zstd.NewWriter(nil, zo...)
	if err != nil {
		return e, err
	}
	defer func() { _ = zw.Close() }()
	bo := brrr.WriterOptions{LGWin: 22}
	if raw != nil {
		p, err := brrr.PrepareDictionary(raw)
		if err != nil {
			return e, err
		}
		bo.Dictionaries = []*brrr.PreparedDictionary{p}
	}
	var buf []byte
	var b bytes.Buffer
	for _, doc := range held {
		buf = zw.EncodeAll(doc, buf[:0])
		e.dcz += int64(len(buf))
		b.Reset()
		bw, err := brrr.NewWriterOptions(&b, dcbLevel, bo)
		if err != nil {
			return e, err
		}
		if _, err := bw.Write(doc); err != nil {
			return e, err
		}
		if err := bw.Close(); err != nil {
			return e, err
		}
		e.dcb += int64(b.Len())
	}
	return e, nil
}
