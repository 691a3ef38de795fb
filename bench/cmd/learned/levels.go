package main

import (
	"bytes"
	"fmt"
	"runtime"

	"time"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/bench"
	"github.com/squeezehttp/squeeze/internal/train"
)

// levels prints, for each site named, the held-out half as dcb and dcz
// against internal/train's dictionary of size bytes (trained on the
// training half less every fourth page, as a round trains) at each level a
// learned delta could go out at, in bytes and saving against br 11
// without a dictionary, beside the goal of issue 33 (two thirds of what
// the zstd CLI at -19 saves with zstd --train's dictionary of the same
// size); and the CPU of each level per held-out page as a ratio against
// the same coding at squeeze's default level without a dictionary (br 5,
// zstd 3), every candidate timed in turn on each page (the thread's CPU,
// alternated, one pass). It is the measurement on which a learned delta's
// levels were left at the Middleware's (learned_codings.go in the root
// package): see bench/measured/trainer.md.
func levels(names, npm string, size int, capBytes int64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	brLevels := []int{5, 6, 7, 8, 9, 11}
	zLevels := []int{3, 7, 11}
	for _, site := range bench.Sites(npm) {
		if !selected(site.Name, names) {
			continue
		}
		trainHalf, held, err := site.Load(capBytes)
		if err != nil {
			return err
		}
		var input [][]byte
		for i, b := range trainHalf {
			if i%4 != 3 {
				input = append(input, b)
			}
		}
		r, err := train.Train(input, size, 256<<20, train.Options{})
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		dict := r.Dict
		zt, err := bench.ZstdTrain(trainHalf, size)
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		ref, err := bench.ZstdCLI(19, zt.Content, held)
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		prepared, err := brrr.PrepareDictionary(dict)
		if err != nil {
			return err
		}
		type cand struct {
			name  string
			enc   func([]byte) (int, error)
			base  string // the no-dictionary coding its CPU is compared with
			bytes int
			cpu   time.Duration
		}
		brEnc := func(q int, d *brrr.PreparedDictionary) func([]byte) (int, error) {
			return func(doc []byte) (int, error) {
				var b bytes.Buffer
				o := brrr.WriterOptions{LGWin: 22}
				if d != nil {
					o = brrr.WriterOptions{LGWin: 18, Dictionaries: []*brrr.PreparedDictionary{d}}
				}
				w, err := brrr.NewWriterOptions(&b, q, o)
				if err != nil {
					return 0, err
				}
				if _, err := w.Write(doc); err != nil {
					return 0, err
				}
				err = w.Close()
				return b.Len(), err
			}
		}
		zEnc := func(level int, d []byte) (func([]byte) (int, error), error) {
			opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1),
				zstd.WithLowerEncoderMem(true)}
			if d != nil {
				opts = append(opts, zstd.WithEncoderDictRaw(0, d), zstd.WithWindowSize(1<<20))
			}
			zw, err := zstd.NewWriter(nil, opts...)
			if err != nil {
				return nil, err
			}
			var buf []byte
			return func(doc []byte) (int, error) {
				buf = zw.EncodeAll(doc, buf[:0])
				return len(buf), nil
			}, nil
		}
		cands := []*cand{{name: "br 11", enc: brEnc(11, nil)}, {name: "br 5", enc: brEnc(5, nil)}}
		z3, err := zEnc(3, nil)
		if err != nil {
			return err
		}
		cands = append(cands, &cand{name: "zstd 3", enc: z3})
		for _, q := range brLevels {
			cands = append(cands, &cand{name: fmt.Sprintf("dcb %d", q), enc: brEnc(q, prepared), base: "br 5"})
		}
		for _, l := range zLevels {
			e, err := zEnc(l, dict)
			if err != nil {
				return err
			}
			cands = append(cands, &cand{name: fmt.Sprintf("dcz %d", l), enc: e, base: "zstd 3"})
		}
		for _, doc := range held {
			for _, c := range cands {
				t0, _ := bench.ThreadCPUTime()
				n, err := c.enc(doc)
				t1, _ := bench.ThreadCPUTime()
				if err != nil {
					return err
				}
				c.bytes += n
				c.cpu += t1 - t0
			}
		}
		by := map[string]*cand{}
		for _, c := range cands {
			by[c.name] = c
		}
		br11 := by["br 11"].bytes
		saved := func(n int) float64 { return 1 - float64(n)/float64(br11) }
		goal := 2 * saved(int(ref)) / 3
		tuned := "no (held out)"
		if site.Tuned {
			tuned = "yes"
		}
		fmt.Printf("%s (tuned on: %s), %d held-out pages, dictionary %d B; br 11 %d B, br 5 %d B, zstd 3 %d B; zstd -19 with zstd --train's: %d B (%.1f%%), goal %.1f%%\n\n",
			site.Name, tuned, len(held), len(dict), br11, by["br 5"].bytes, by["zstd 3"].bytes, ref, 100*saved(int(ref)), 100*goal)
		fmt.Println("| level | bytes | vs br 11 | goal | CPU vs the coding at its default level, no dictionary |")
		fmt.Println("| --- | ---: | ---: | --- | ---: |")
		for _, c := range cands {
			if c.base == "" {
				continue
			}
			meets := "**no**"
			if saved(c.bytes) >= goal {
				meets = "yes"
			}
			fmt.Printf("| %s | %d | %.1f%% | %s | %.2fx |\n", c.name, c.bytes, 100*saved(c.bytes), meets,
				float64(c.cpu)/float64(by[c.base].cpu))
		}
		fmt.Println()
	}
	return nil
}
