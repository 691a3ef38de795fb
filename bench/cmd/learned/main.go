// Command learned measures squeeze's learned dictionaries
// (squeeze.WithLearnedDictionary) on real documents no one here wrote: the
// HTML manual pages of Debian's git-doc package, and the per-locale
// numbers.json of the npm package cldr-numbers-full. Each corpus is split
// in two by its sorted file names, alternately: squeeze learns a
// dictionary from the first half, served through a Middleware as a site
// would, and the second half, held out, is then served as dcz and dcb
// deltas against it. The program prints, for the held-out half, the bytes
// against br at level 11 and zstd at level 19 without a dictionary, and
// the server's CPU per response: the section of BENCHMARKS.md, in
// Markdown, which bench/stamp.sh keeps in results/learned.md.
//
//	go run ./cmd/learned -html /usr/share/doc/git-doc -json /tmp/cldr/package/main
//
// With -sites it prints instead the served table of
// bench/measured/trainer.md for the sites of bench.Sites named: the
// held-out half as dcb, as dcz and as a client accepting both (Chromium)
// gets it, against br 11 and issue 33's goal, with the server's CPU as
// ratios; -sample-defaults keeps the route's default sample options, and
// -levels prints the sweep of the levels a delta could go out at:
//
//	go run ./cmd/learned -sites git,cldr,python,sqlite -repeat 3 -cap 2097152 -size 262144
//	go run ./cmd/learned -sites git,cldr -levels -cap 2097152
//
// The corpora are not part of the repository; the program fails, saying
// how to install them, when one is missing:
//
//	apt-get install git-doc
//	npm pack cldr-numbers-full@48.2.0 && tar xzf cldr-numbers-full-48.2.0.tgz
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/bench"
)

// corpus is one set of documents of one site.
type corpus struct {
	name, contentType string
	train, held       [][]byte
}

func main() {
	htmlDir := flag.String("html", "/usr/share/doc/git-doc", "directory of git-doc's HTML pages (apt-get install git-doc)")
	jsonDir := flag.String("json", "", "the main/ directory of cldr-numbers-full 48.2.0, unpacked (npm pack cldr-numbers-full@48.2.0)")
	repeat := flag.Int("repeat", 5, "times each held-out document is served per coding, for the CPU figures")
	sites := flag.String("sites", "", "comma-separated names (a prefix each) of bench.Sites: print the served table of BENCHMARKS.md#learned-dictionaries-served-at-the-defaults for them instead")
	npm := flag.String("npm", "/tmp/trainer-corpora", "with -sites: the directory the npm packages are unpacked under (numbers/, dates/)")
	size := flag.Int("size", 256<<10, "with -sites: LearnedDictionarySize (256 KiB is its default)")
	capBytes := flag.Int64("cap", 4<<20, "with -sites: the most bytes of each half")
	sampleDefaults := flag.Bool("sample-defaults", false, "with -sites: keep the route's default LearnedSamples, LearnedSampleBudget and LearnedTrainingMemory (one round of the first pages that fill it), instead of training on the whole training half")
	levelSweep := flag.Bool("levels", false, "with -sites: print the sweep of the levels a learned delta may go out at instead")
	flag.Parse()
	if *sites != "" && *levelSweep {
		if err := levels(*sites, *npm, *size, *capBytes); err != nil {
			fail(err)
		}
		return
	}
	if *sites != "" {
		if err := served(*sites, *npm, *size, *capBytes, *repeat, *sampleDefaults); err != nil {
			fail(err)
		}
		return
	}
	var corpora []corpus
	html, err := load("git-doc HTML", "text/html; charset=utf-8", *htmlDir, "*.html",
		"apt-get install git-doc (Debian), or point -html at its pages")
	if err != nil {
		fail(err)
	}
	corpora = append(corpora, html)
	if *jsonDir == "" {
		fail(fmt.Errorf("no -json: give the main/ directory of cldr-numbers-full, made by\n\tnpm pack cldr-numbers-full@48.2.0 && tar xzf cldr-numbers-full-48.2.0.tgz\nthen -json package/main"))
	}
	js, err := load("CLDR numbers.json", "application/json", *jsonDir, "*/numbers.json",
		"npm pack cldr-numbers-full@48.2.0 && tar xzf cldr-numbers-full-48.2.0.tgz, then -json package/main")
	if err != nil {
		fail(err)
	}
	corpora = append(corpora, js)
	var rows, cpu []string
	var first result
	for i, c := range corpora {
		r, err := measure(c, *repeat, 0, false)
		if err != nil {
			fail(fmt.Errorf("%s: %w", c.name, err))
		}
		if i == 0 {
			first = r
		}
		rows, cpu = append(rows, r.row), append(cpu, r.cpuRow)
	}
	fmt.Printf(section, strings.Join(rows, "\n"), *repeat, strings.Join(cpu, "\n"), first.saving, first.median)
}

// section is the section of BENCHMARKS.md: the size rows, the repeat, the
// CPU rows, and the HTML's saving over br 11, overall and on the median
// page.
const section = `## Learned dictionaries on real pages

` + "`WithLearnedDictionary`" + ` on documents no one here wrote: the 206 HTML pages of git's manual as
Debian's git-doc package ships them (asciidoc output: one template, pages from 8 bytes to 400 KB),
and the 766 per-locale numbers.json of the npm package cldr-numbers-full 48.2.0 (one shape of JSON,
about 7 KB each). Each corpus is split by sorted file name, alternately: squeeze learns a dictionary
(the default size at most) from the first half served through a Middleware, then serves the
held-out half as dcb and dcz against it at its default levels (br 5, zstd 3), every body decoded and
compared. References are the same held-out documents as br 11 and zstd 19 without a dictionary;
dcb 11 and dcz 19 are the same dictionary at those levels. Bytes are sums over the held-out half;
the median is per page. The trainer's parameters were chosen on these two corpora: for sites
that took no part in any tuning (Python's and SQLite's documentation, CLDR dates), see
[Learned dictionaries served at the defaults](#learned-dictionaries-served-at-the-defaults).

| corpus | held out | plain | br 11 | zstd 19 | dcb (5) | dcz (3) | dcb 11 | dcz 19 | dcb (5) vs br 11 | dcz 19 vs zstd 19 | median page, dcb (5) vs br 11 | dictionary |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
%s

The server's CPU per held-out response through the Middleware (process CPU time over %d requests
of each document per coding, an httptest recorder, no network), without and with the dictionary:

| corpus | br (5) | zstd (3) | dcb (5) | dcz (3) |
| --- | ---: | ---: | ---: | ---: |
%s

On the HTML a delta at squeeze's default br level is %.0f%% smaller than br at its best level
(%.0f%% on the median page, whose template is most of it; the largest pages are mostly text of
their own): beyond the 30%% the explainer reports against brotli. The dictionary is internal/train's
(see [Dictionary trainer](#dictionary-trainer)). Made by (with git-doc installed by apt-get, and
cldr-numbers-full 48.2.0 from npm pack unpacked into /tmp/cldr; the program fails, saying so, when
either is missing; bench/stamp.sh runs it when both are there):

` + "```" + `
cd bench && go run ./cmd/learned -json /tmp/cldr/package/main
` + "```" + `

`

// result is what measure found for one corpus.
type result struct {
	row, cpuRow    string
	saving, median float64
	// The held-out half's bytes (dcb and dcz at the Middleware's levels,
	// headers included; 0 for a coding the route does not offer) and the
	// server's CPU per response by coding, chromium for the requests
	// that name both delta codings as Chromium does.
	br11, dcb, dcz, dictLen int
	cpu                     map[string]time.Duration
	// chromium is the bytes of the held-out half to a client accepting
	// what Chromium accepts, and chromiumCodings what it went out as.
	chromium        int
	chromiumCodings map[string]int
}

// chromiumAccepts is the Accept-Encoding Chromium sends with a dictionary,
// and chromium the name its requests' figures go under.
const (
	chromiumAccepts = "gzip, deflate, br, zstd, dcb, dcz"
	chromium        = "Chromium"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "learned:", err)
	os.Exit(1)
}

// load reads the files matching glob under dir, sorted by name, and splits
// them alternately into training and held-out halves.
func load(name, contentType, dir, glob, install string) (corpus, error) {
	files, err := filepath.Glob(filepath.Join(dir, glob))
	if err == nil && len(files) < 20 {
		err = fs.ErrNotExist
	}
	if err != nil {
		return corpus{}, fmt.Errorf("the %s corpus is not in %s (%v): %s", name, dir, err, install)
	}
	sort.Strings(files)
	c := corpus{name: name, contentType: contentType}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return corpus{}, err
		}
		if i%2 == 0 {
			c.train = append(c.train, b)
		} else {
			c.held = append(c.held, b)
		}
	}
	return c, nil
}

var linkRE = regexp.MustCompile(`<([^>]+)>; rel="compression-dictionary"`)

// measure serves c's training half through a Middleware learning /doc/*
// until it links a dictionary, then its held-out half in each coding.
// A size of 0 is the default LearnedDictionarySize.
//
// With sampleDefaults the route keeps its default sample options
// (LearnedSamples, LearnedSampleBudget, LearnedTrainingMemory): its one
// round trains on the first pages that fill it, none over a fifth of the
// budget. Otherwise the round takes the whole training half.
func measure(c corpus, repeat, size int, sampleDefaults bool) (result, error) {
	opts := []squeeze.LearnedOption{squeeze.LearnedInterval(time.Hour)}
	if !sampleDefaults {
		opts = append(opts, squeeze.LearnedSamples(len(c.train)), squeeze.LearnedSampleBudget(16<<20),
			squeeze.LearnedTrainingMemory(256<<20))
	}
	if size > 0 {
		opts = append(opts, squeeze.LearnedDictionarySize(size))
	}
	m, err := squeeze.New(squeeze.WithLearnedDictionary("/doc/*", opts...))
	if err != nil {
		return result{}, err
	}
	docs := append(slices.Clone(c.train), c.held...)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!doctype html><title>index</title>"))
			return
		}
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/doc/"))
		if err != nil || i < 0 || i >= len(docs) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", c.contentType)
		w.Header().Set("Cache-Control", "public, max-age=600")
		_, _ = w.Write(docs[i])
	}))
	get := func(path string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	for i := range c.train {
		get("/doc/"+strconv.Itoa(i), "Accept-Encoding", "br")
	}
	// With the default sample options the route has one round (its
	// interval is an hour), which may publish nothing: a dictionary that
	// beats neither zstd nor br on the pages it held out is not published,
	// and the held-out pages then go out without one.
	var dict []byte
	wait := 5 * time.Minute
	if sampleDefaults {
		wait = time.Minute
	}
	for deadline := time.Now().Add(wait); dict == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			if sampleDefaults {
				break
			}
			return result{}, fmt.Errorf("no dictionary was learned in %v", wait)
		}
		if l := linkRE.FindStringSubmatch(get("/").Header().Get("Link")); l != nil {
			dict = get(l[1]).Body.Bytes()
		}
	}
	avail := ":" + availableHash(dict) + ":"
	var plain, br11, zstd19, dcb, dcz, dcb11, dcz19, chromiumBytes int
	var perDoc []float64
	cpuOf := map[string]time.Duration{}
	chromiumCodings := map[string]int{}
	offered := map[string]bool{squeeze.DCB: true, squeeze.DCZ: true}
	for k, doc := range c.held {
		path := "/doc/" + strconv.Itoa(len(c.train)+k)
		plain += len(doc)
		b11, err := bench.Encode(squeeze.Brotli, 11, doc)
		if err != nil {
			return result{}, err
		}
		z19, err := bench.Encode(squeeze.Zstd, 19, doc)
		if err != nil {
			return result{}, err
		}
		br11, zstd19 = br11+len(b11), zstd19+len(z19)
		sizes := map[string]int{}
		for _, coding := range []string{squeeze.Brotli, squeeze.Zstd, squeeze.DCB, squeeze.DCZ, chromium} {
			if dict == nil && (coding == squeeze.DCB || coding == squeeze.DCZ) {
				offered[coding] = false
				continue
			}
			hdr := []string{"Accept-Encoding", coding}
			switch coding {
			case squeeze.DCB, squeeze.DCZ:
				hdr = append(hdr, "Available-Dictionary", avail)
			case chromium:
				hdr = []string{"Accept-Encoding", chromiumAccepts, "Available-Dictionary", avail}
				if dict == nil {
					hdr = hdr[:2]
				}
			}
			t0, _ := bench.CPUTime()
			var rec *httptest.ResponseRecorder
			for range repeat {
				rec = get(path, hdr...)
			}
			t1, _ := bench.CPUTime()
			cpuOf[coding] += t1 - t0
			got := rec.Header().Get("Content-Encoding")
			switch {
			case coding == chromium:
				chromiumCodings[got]++
			case got != coding && (coding == squeeze.DCB || coding == squeeze.DCZ):
				offered[coding] = false // the route's round did not choose it
				continue
			case got != coding:
				return result{}, fmt.Errorf("%s went out as %q, want %s", path, got, coding)
			}
			if err := check(got, rec.Body.Bytes(), dict, doc); err != nil {
				return result{}, fmt.Errorf("%s as %s: %w", path, got, err)
			}
			sizes[coding] = rec.Body.Len()
		}
		dcb, dcz, chromiumBytes = dcb+sizes[squeeze.DCB], dcz+sizes[squeeze.DCZ], chromiumBytes+sizes[chromium]
		if sizes[squeeze.DCB] > 0 {
			perDoc = append(perDoc, 1-float64(sizes[squeeze.DCB])/float64(len(b11)))
		}
		if dict != nil {
			b, z, err := bestDeltas(dict, doc)
			if err != nil {
				return result{}, err
			}
			dcb11, dcz19 = dcb11+b, dcz19+z
		}
	}
	sort.Float64s(perDoc)
	if len(perDoc) == 0 {
		perDoc = []float64{0}
	}
	pct := func(a, b int) string { return fmt.Sprintf("%.1f%%", 100*(1-float64(a)/float64(b))) }
	row := fmt.Sprintf("| %s | %d docs | %d | %d | %d | %d | %d | %d | %d | %s | %s | %.1f%% | %d B |",
		c.name, len(c.held), plain, br11, zstd19, dcb, dcz, dcb11, dcz19, pct(dcb, br11), pct(dcz19, zstd19),
		100*perDoc[len(perDoc)/2], len(dict))
	n := time.Duration(len(c.held) * repeat)
	us := func(coding string) string { return fmt.Sprintf("%.1f µs", float64(cpuOf[coding]/n)/1e3) }
	cpuRow := fmt.Sprintf("| %s | %s | %s | %s | %s |", c.name, us(squeeze.Brotli), us(squeeze.Zstd), us(squeeze.DCB), us(squeeze.DCZ))
	for coding, ok := range offered {
		if !ok {
			if coding == squeeze.DCB {
				dcb = 0
			} else {
				dcz = 0
			}
		}
	}
	return result{row: row, cpuRow: cpuRow, saving: 100 * (1 - float64(dcb)/float64(br11)), median: 100 * perDoc[len(perDoc)/2],
		br11: br11, dcb: dcb, dcz: dcz, dictLen: len(dict), cpu: cpuOf, chromium: chromiumBytes, chromiumCodings: chromiumCodings}, nil
}

// check decodes body, sent in coding, and compares it with want.
func check(coding string, body, dict, want []byte) error {
	var got []byte
	var err error
	switch coding {
	case squeeze.DCB, squeeze.DCZ:
		got, err = decodeDelta(coding, body, dict)
	default:
		got, err = bench.Decode(coding, body)
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("decodes to %d bytes that differ from the document", len(got))
	}
	return nil
}

// decodeDelta decodes a dcb or dcz body against dict, past its 36- or
// 40-byte header.
func decodeDelta(coding string, body, dict []byte) ([]byte, error) {
	if coding == squeeze.DCB {
		r, err := brrr.NewReaderOptions(bytes.NewReader(body[36:]), brrr.ReaderOptions{Dictionaries: [][]byte{dict}})
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		_, err = out.ReadFrom(r)
		return out.Bytes(), err
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(0, dict), zstd.WithDecoderMaxWindow(128<<20))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(body[40:], nil)
}

// bestDeltas returns the sizes of doc as dcb at br 11 and as dcz at zstd
// 19 against dict, headers included: what the same dictionary gives at the
// levels of the references.
func bestDeltas(dict, doc []byte) (int, int, error) {
	prepared, err := brrr.PrepareDictionary(dict)
	if err != nil {
		return 0, 0, err
	}
	var b bytes.Buffer
	bw, err := brrr.NewWriterOptions(&b, 11, brrr.WriterOptions{Dictionaries: []*brrr.PreparedDictionary{prepared}, LGWin: 22})
	if err != nil {
		return 0, 0, err
	}
	if _, err := bw.Write(doc); err != nil {
		return 0, 0, err
	}
	if err := bw.Close(); err != nil {
		return 0, 0, err
	}
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(19)), zstd.WithEncoderDictRaw(0, dict),
		zstd.WithWindowSize(8<<20))
	if err != nil {
		return 0, 0, err
	}
	n := len(zw.EncodeAll(doc, nil))
	if err := zw.Close(); err != nil {
		return 0, 0, err
	}
	return 36 + b.Len(), 40 + n, nil
}

// served prints, for each of the sites named, the held-out half served by
// a Middleware that learned a dictionary of size bytes from the training
// half (at most samples of 16 MiB, a corpus's training half whole up to
// capBytes): dcb and dcz at the Middleware's levels against br 11, beside
// what the zstd CLI at -19 with zstd --train's dictionary of the same size
// (its content, raw) saves against br 11, and whether the deltas save two
// thirds of that at least (issue 33's goal for the defaults); then the
// server's CPU per response.
func served(names, npm string, size int, capBytes int64, repeat int, sampleDefaults bool) error {
	var rows, cpu []string
	for _, site := range bench.Sites(npm) {
		if !selected(site.Name, names) {
			continue
		}
		train, held, err := site.Load(capBytes)
		if err != nil {
			return err
		}
		c := corpus{name: site.Name, contentType: site.ContentType, train: train, held: held}
		r, err := measure(c, repeat, size, sampleDefaults)
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		zt, err := bench.ZstdTrain(train, size)
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		ref, err := bench.ZstdCLI(19, zt.Content, held)
		if err != nil {
			return fmt.Errorf("%s: %w", site.Name, err)
		}
		saved := func(n int64) float64 { return 1 - float64(n)/float64(r.br11) }
		goal := 2 * saved(ref) / 3
		cell := func(n int) string {
			if n == 0 {
				return "not offered"
			}
			meets := "**no**"
			if saved(int64(n)) >= goal {
				meets = "yes"
			}
			return fmt.Sprintf("%d (%.1f%%) %s", n, 100*saved(int64(n)), meets)
		}
		tuned := "no (held out)"
		if site.Tuned {
			tuned = "yes"
		}
		var went []string
		for _, coding := range []string{squeeze.DCB, squeeze.DCZ, squeeze.Zstd, squeeze.Brotli} {
			if n := r.chromiumCodings[coding]; n > 0 {
				went = append(went, fmt.Sprintf("%s %d", coding, n))
			}
		}
		dictCell := fmt.Sprintf("%d B", r.dictLen)
		if r.dictLen == 0 {
			dictCell = "none published"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %d docs | %d | %d (%.1f%%) | %.1f%% | %s | %s | %s: %s | %s |",
			site.Name, tuned, len(held), r.br11, ref, 100*saved(ref), 100*goal,
			cell(r.dcb), cell(r.dcz), strings.Join(went, ", "), cell(r.chromium), dictCell))
		n := time.Duration(len(held) * repeat)
		us := func(coding string) string {
			if coding == squeeze.DCB && r.dcb == 0 || coding == squeeze.DCZ && r.dcz == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f µs", float64(r.cpu[coding]/n)/1e3)
		}
		ratio := func(a, b string) string {
			if a == squeeze.DCB && r.dcb == 0 || a == squeeze.DCZ && r.dcz == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2fx", float64(r.cpu[a])/float64(r.cpu[b]))
		}
		cpu = append(cpu, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", site.Name,
			us(squeeze.Brotli), us(squeeze.Zstd), us(squeeze.DCB), us(squeeze.DCZ), us(chromium),
			ratio(squeeze.DCB, squeeze.Brotli), ratio(squeeze.DCZ, squeeze.Zstd), ratio(chromium, squeeze.Zstd)))
	}
	how := "the round trained on the whole training half (LearnedSamples, LearnedSampleBudget 16 MiB, LearnedTrainingMemory 256 MiB)"
	if sampleDefaults {
		how = "the route's sample options at their defaults (one round of the first pages that fill 32 samples or 1 MiB)"
	}
	fmt.Printf("LearnedDictionarySize %d, %s; bytes of the held-out half, savings against br 11 (dcb and dcz: a client naming that coding alone; Chromium: one accepting %q, which without the dictionary gets zstd):\n\n", size, how, chromiumAccepts)
	fmt.Println("| corpus | tuned on | held out | br 11 | zstd -19, zstd --train's dictionary | goal (2/3 of it) | dcb (5) | dcz (3) | Chromium gets | our dictionary |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	fmt.Println(strings.Join(rows, "\n"))
	fmt.Printf("\nThe server's CPU per held-out response (process CPU over %d requests of each page in each coding, the codings in turn on each page), and as ratios against the same codec at the same level without the dictionary (Chromium's against zstd, what it gets without one):\n\n", repeat)
	fmt.Println("| corpus | br (5) | zstd (3) | dcb (5) | dcz (3) | Chromium | dcb / br | dcz / zstd | Chromium / zstd |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	fmt.Println(strings.Join(cpu, "\n"))
	return nil
}

// selected reports whether name starts with one of the comma-separated
// prefixes of names, ignoring case.
func selected(name, names string) bool {
	for _, o := range strings.Split(names, ",") {
		if o != "" && strings.HasPrefix(strings.ToLower(name), strings.ToLower(o)) {
			return true
		}
	}
	return false
}
