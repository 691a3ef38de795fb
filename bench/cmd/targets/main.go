// Command targets reads the output of bench's benchmarks and checks
// squeeze's performance targets against it, each figure a ratio taken from
// the same run. Timing verdicts use the best of the rounds, since on a
// shared machine the distribution is bimodal (rounds with a free core and
// rounds without) and the median falls between the modes; the median is
// printed beside it. Allocation and heap verdicts use medians.
//
//   - throughput at least 0.97x the floor, every coding and body, serial and
//     parallel, every GOMAXPROCS, judged on BenchmarkVersusFloor, which times
//     the two in alternation;
//   - allocations per compressed response no more than gzhttp's, not growing
//     with body size, and B/op constant (within 1 KiB from 2 KiB to 286 KiB);
//   - parallel speed-up from GOMAXPROCS 1 to 2 of at least 1.8x at 16 KiB;
//   - heap per in-flight stream no more than the lowest peer's.
//
// It prints Markdown. Missed targets are reported, not fatal: the exit status
// is non-zero only when the input cannot be read.
//
//	go run ./cmd/targets results/bench.txt results/inflight.txt
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Target values.
const (
	minFloorRatio = 0.97
	minSpeedup    = 1.8
	maxBytesDrift = 1 << 10
)

type key struct {
	bench, coding, body, impl string
	procs                     int
	unit                      string
}

type data map[key][]float64

// firstSeen numbers key values in the order the input first shows them,
// which is the order the benchmarks run them in.
var firstSeen = map[string]int{}

func see(v string) {
	if _, ok := firstSeen[v]; !ok {
		firstSeen[v] = len(firstSeen)
	}
}

func main() {
	allocsFile := flag.String("allocs", "", "results of a fixed-iteration `file` of BenchmarkResponse, for the allocation table")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: targets [-allocs file] file...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	d := data{}
	for _, name := range flag.Args() {
		if err := d.read(name); err != nil {
			fmt.Fprintln(os.Stderr, "targets:", err)
			os.Exit(1)
		}
	}
	if len(d) == 0 {
		fmt.Fprintln(os.Stderr, "targets: no benchmark results in", strings.Join(flag.Args(), " "))
		os.Exit(1)
	}
	allocs := d
	if *allocsFile != "" {
		allocs = data{}
		if err := allocs.read(*allocsFile); err != nil {
			fmt.Fprintln(os.Stderr, "targets:", err)
			os.Exit(1)
		}
	}
	// The report is built in memory and written once, so a failed write
	// (a closed pipe, a full disk) is one error to check.
	var out strings.Builder
	report(&out, d, allocs)
	if _, err := os.Stdout.WriteString(out.String()); err != nil {
		fmt.Fprintln(os.Stderr, "targets:", err)
		os.Exit(1)
	}
}

func (d data) read(name string) error {
	raw, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	r := benchfmt.NewReader(bytes.NewReader(raw), name)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		k := key{bench: string(base), procs: 1}
		for _, p := range parts {
			switch {
			case bytes.HasPrefix(p, []byte("-")):
				if n, err := strconv.Atoi(string(p[1:])); err == nil {
					k.procs = n
				}
			case bytes.HasPrefix(p, []byte("/coding=")):
				k.coding = string(p[len("/coding="):])
			case bytes.HasPrefix(p, []byte("/body=")):
				k.body = string(p[len("/body="):])
			case bytes.HasPrefix(p, []byte("/impl=")):
				k.impl = string(p[len("/impl="):])
			case bytes.HasPrefix(p, []byte("/mode=")):
				// BenchmarkVersusFloor has no impl key (it runs both):
				// its mode (serial or parallel) takes the place.
				k.impl = string(p[len("/mode="):])
			}
		}
		see(k.coding)
		see(k.body)
		see(k.impl)
		for _, v := range res.Values {
			k.unit = v.Unit
			d[k] = append(d[k], v.Value)
		}
	}
	return r.Err()
}

// median returns the median of the samples for k and whether there are any.
func (d data) median(k key) (float64, bool) {
	s := d[k]
	if len(s) == 0 {
		return 0, false
	}
	s = slices.Clone(s)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// best returns the smallest sample for k: on a machine shared with other
// work, the round in which an implementation got a core to itself. Every
// round runs every implementation, so each has the same chance of a quiet
// one.
func (d data) best(k key) (float64, bool) {
	s := d[k]
	if len(s) == 0 {
		return 0, false
	}
	return slices.Min(s), true
}

// values lists the distinct values of one key field among results of bench,
// in the order the benchmarks ran them.
func (d data) values(bench string, field func(key) string) []string {
	seen := map[string]bool{}
	var out []string
	for k := range d {
		if k.bench != bench {
			continue
		}
		if v := field(k); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return firstSeen[out[i]] < firstSeen[out[j]] })
	return out
}

func (d data) procsOf(bench string) []int {
	seen := map[int]bool{}
	var out []int
	for k := range d {
		if k.bench == bench && !seen[k.procs] {
			seen[k.procs] = true
			out = append(out, k.procs)
		}
	}
	sort.Ints(out)
	return out
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**MISSED**"
}

// report prints every table; allocs holds the results the allocation table
// is read from.
func report(w *strings.Builder, d, allocs data) {
	d.medianTable(w, "Response", 1, "floor", "Time per response, serial, cpu=1")
	d.medianTable(w, "ResponseParallel", 2, "floor", "Time per response, RunParallel, cpu=2")
	d.medianTable(w, "Defaults", 1, "squeeze", "Time per response, each implementation at its defaults, serial, cpu=1")
	d.medianTable(w, "Request", 1, "floor", "Request decoding: time per request body, serial, cpu=1")
	misses := 0
	misses += d.pairedRatios(w)
	d.floorRatios(w, "sec/op", "wall time of separate benchmarks, for reference")
	misses += allocs.allocations(w)
	misses += d.speedup(w)
	misses += d.heap(w)
	if misses == 0 {
		fmt.Fprintln(w, "All targets met.")
	} else {
		fmt.Fprintf(w, "%d target checks missed.\n", misses)
	}
}

// medianTable prints the median wall time per operation of every
// implementation of bench at GOMAXPROCS procs, with its ratio to base (time
// over base's time, so lower is faster) and, where the benchmark reports
// it, the encoded size.
func (d data) medianTable(w *strings.Builder, bench string, procs int, base, title string) {
	impls := d.values(bench, func(k key) string { return k.impl })
	if len(impls) == 0 {
		return
	}
	fmt.Fprintf(w, "### %s (median; in brackets: time relative to %s)\n\n| coding | body |", title, base)
	for _, impl := range impls {
		fmt.Fprintf(w, " %s |", impl)
	}
	fmt.Fprint(w, "\n| --- | --- |"+strings.Repeat(" ---: |", len(impls))+"\n")
	for _, coding := range d.values(bench, func(k key) string { return k.coding }) {
		for _, body := range d.values(bench, func(k key) string { return k.body }) {
			ref, okRef := d.median(key{bench, coding, body, base, procs, "sec/op"})
			if _, ok := d.median(key{bench, coding, body, impls[0], procs, "sec/op"}); !ok && !okRef {
				continue
			}
			fmt.Fprintf(w, "| %s | %s |", coding, body)
			for _, impl := range impls {
				t, ok := d.median(key{bench, coding, body, impl, procs, "sec/op"})
				if !ok {
					fmt.Fprint(w, " |")
					continue
				}
				cell := duration(t)
				if okRef && impl != base {
					cell += fmt.Sprintf(" (%.2f)", t/ref)
				}
				if wire, ok := d.median(key{bench, coding, body, impl, procs, "wire-B/op"}); ok && bench == "Defaults" {
					cell += fmt.Sprintf(", %.1f KiB", wire/1024)
				}
				fmt.Fprintf(w, " %s |", cell)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}

func duration(sec float64) string {
	switch {
	case sec >= 1e-3:
		return fmt.Sprintf("%.2fms", sec*1e3)
	default:
		return fmt.Sprintf("%.1fµs", sec*1e6)
	}
}

// pairedRatios prints BenchmarkVersusFloor's x-floor, the floor's time
// over squeeze's measured in rotation, which is what the throughput target
// is judged on, and gzhttp's, measured in the same rotation, beside it.
func (d data) pairedRatios(w *strings.Builder) int {
	const b = "VersusFloor"
	codings := d.values(b, func(k key) string { return k.coding })
	if len(codings) == 0 {
		return 0
	}
	modes := []string{"serial", "parallel"}
	procs := d.procsOf(b)
	fmt.Fprintf(w, "### Throughput: squeeze / floor, paired (BenchmarkVersusFloor x-floor; target >= %.2f; median, range of the rounds in brackets)\n\n| coding | body |", minFloorRatio)
	for _, m := range modes {
		for _, p := range procs {
			fmt.Fprintf(w, " %s cpu=%d |", m, p)
		}
	}
	fmt.Fprint(w, "\n| --- | --- |"+strings.Repeat(" ---: |", len(modes)*len(procs))+"\n")
	misses := 0
	for _, coding := range codings {
		for _, body := range d.values(b, func(k key) string { return k.body }) {
			fmt.Fprintf(w, "| %s | %s |", coding, body)
			for _, m := range modes {
				for _, p := range procs {
					k := key{b, coding, body, m, p, "x-floor"}
					v, ok := d.median(k)
					if !ok {
						fmt.Fprint(w, " |")
						continue
					}
					mark := ""
					if v < minFloorRatio {
						mark = " **MISSED**"
						misses++
					}
					fmt.Fprintf(w, " %.3f%s (%.2f–%.2f)", v, mark, slices.Min(d[k]), slices.Max(d[k]))
					k.unit = "gzhttp-x-floor"
					if g, ok := d.median(k); ok {
						fmt.Fprintf(w, "; gzhttp %.3f", g)
					}
					fmt.Fprint(w, " |")
				}
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	return misses
}

// floorRatios prints squeeze's throughput as a fraction of the floor's:
// the floor's time per response divided by squeeze's, in unit.
func (d data) floorRatios(w *strings.Builder, unit, what string) {
	found := false
	for k := range d {
		if k.unit == unit && (k.bench == "Response" || k.bench == "ResponseParallel") {
			found = true
			break
		}
	}
	if !found {
		return
	}
	fmt.Fprintf(w, "### Throughput: squeeze / floor by %s (best of the rounds, median in brackets)\n\n", what)
	type col struct {
		bench string
		procs int
	}
	var cols []col
	for _, b := range []string{"Response", "ResponseParallel"} {
		for _, p := range d.procsOf(b) {
			cols = append(cols, col{b, p})
		}
	}
	fmt.Fprint(w, "| coding | body |")
	for _, c := range cols {
		mode := "serial"
		if strings.HasSuffix(c.bench, "Parallel") {
			mode = "parallel"
		}
		fmt.Fprintf(w, " %s cpu=%d |", mode, c.procs)
	}
	fmt.Fprint(w, "\n| --- | --- |"+strings.Repeat(" ---: |", len(cols))+"\n")
	for _, coding := range d.values("Response", func(k key) string { return k.coding }) {
		for _, body := range d.values("Response", func(k key) string { return k.body }) {
			fmt.Fprintf(w, "| %s | %s |", coding, body)
			for _, c := range cols {
				floor, ok1 := d.best(key{c.bench, coding, body, "floor", c.procs, unit})
				sq, ok2 := d.best(key{c.bench, coding, body, "squeeze", c.procs, unit})
				if !ok1 || !ok2 {
					fmt.Fprint(w, " |")
					continue
				}
				floorMed, _ := d.median(key{c.bench, coding, body, "floor", c.procs, unit})
				sqMed, _ := d.median(key{c.bench, coding, body, "squeeze", c.procs, unit})
				fmt.Fprintf(w, " %.2f (%.2f) |", floor/sq, floorMed/sqMed)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}

// allocations compares squeeze's allocs/op with gzhttp's (or, for codings
// gzhttp lacks, with the fewest of any peer), and checks that neither
// allocs/op nor B/op grows with the body. Growth is judged on squeeze's
// excess over the floor, since the codecs themselves allocate more for
// large bodies (zstd: 2 allocations at 2 KiB, 4 at 286 KiB).
func (d data) allocations(w *strings.Builder) int {
	const b = "Response"
	misses := 0
	fmt.Fprint(w, "### Allocations per response, serial, cpu=1 (target: allocs/op <= gzhttp's; squeeze's excess over the floor flat in body size; B/op within 1 KiB across sizes)\n\n")
	fmt.Fprint(w, "| coding | body | floor allocs/op | squeeze allocs/op | squeeze B/op | reference | reference allocs/op | verdict |\n| --- | --- | ---: | ---: | ---: | --- | ---: | --- |\n")
	impls := d.values(b, func(k key) string { return k.impl })
	for _, coding := range d.values(b, func(k key) string { return k.coding }) {
		var sizes []string
		for _, body := range d.values(b, func(k key) string { return k.body }) {
			if strings.HasPrefix(body, "html-") {
				sizes = append(sizes, body)
			}
		}
		minB, maxB := -1.0, -1.0
		var firstExcess, lastExcess float64
		for _, body := range d.values(b, func(k key) string { return k.body }) {
			allocs, ok := d.median(key{b, coding, body, "squeeze", 1, "allocs/op"})
			if !ok {
				continue
			}
			floor, _ := d.median(key{b, coding, body, "floor", 1, "allocs/op"})
			bytesOp, _ := d.median(key{b, coding, body, "squeeze", 1, "B/op"})
			ref, refAllocs := "gzhttp", -1.0
			if v, ok := d.median(key{b, coding, body, "gzhttp", 1, "allocs/op"}); ok {
				refAllocs = v
			} else {
				for _, impl := range impls {
					if impl == "floor" || impl == "squeeze" {
						continue
					}
					if v, ok := d.median(key{b, coding, body, impl, 1, "allocs/op"}); ok && (refAllocs < 0 || v < refAllocs) {
						ref, refAllocs = "fewest of the peers: "+impl, v
					}
				}
			}
			ok = refAllocs < 0 || allocs <= refAllocs
			if !ok {
				misses++
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %s | %.0f | %s |\n", coding, body, floor, allocs, bytesOp, ref, refAllocs, verdict(ok))
			if slices.Contains(sizes, body) {
				if minB < 0 || bytesOp < minB {
					minB = bytesOp
				}
				maxB = max(maxB, bytesOp)
				if body == sizes[0] {
					firstExcess = allocs - floor
				}
				if body == sizes[len(sizes)-1] {
					lastExcess = allocs - floor
				}
			}
		}
		if minB >= 0 {
			flat := lastExcess <= firstExcess
			constant := maxB-minB <= maxBytesDrift
			if !flat {
				misses++
			}
			if !constant {
				misses++
			}
			fmt.Fprintf(w, "| %s | %s..%s | | excess over floor %+.0f -> %+.0f | %.0f..%.0f | | | %s, %s |\n",
				coding, sizes[0], sizes[len(sizes)-1], firstExcess, lastExcess, minB, maxB,
				verdict(flat)+" (allocs flat)", verdict(constant)+" (B/op constant)")
		}
	}
	fmt.Fprintln(w)
	return misses
}

// speedup prints sec/op at GOMAXPROCS 1 over sec/op at 2 for the parallel
// benchmark at 16 KiB, for every implementation; the target applies to
// squeeze, the others show what the machine allows.
func (d data) speedup(w *strings.Builder) int {
	const b, body = "ResponseParallel", "html-16K"
	procs := d.procsOf(b)
	if len(procs) < 2 {
		fmt.Fprint(w, "### Parallel speed-up\n\nNeeds BenchmarkResponseParallel at two GOMAXPROCS values.\n\n")
		return 0
	}
	lo, hi := procs[0], procs[len(procs)-1]
	fmt.Fprintf(w, "### Parallel speed-up, %s, cpu=%d -> cpu=%d (target for squeeze >= %.1fx; best of the rounds, median in brackets)\n\n", body, lo, hi, minSpeedup)
	impls := d.values(b, func(k key) string { return k.impl })
	fmt.Fprint(w, "| coding |")
	for _, impl := range impls {
		fmt.Fprintf(w, " %s |", impl)
	}
	fmt.Fprint(w, "\n| --- |"+strings.Repeat(" ---: |", len(impls))+"\n")
	misses := 0
	for _, coding := range d.values(b, func(k key) string { return k.coding }) {
		fmt.Fprintf(w, "| %s |", coding)
		for _, impl := range impls {
			t1, ok1 := d.best(key{b, coding, body, impl, lo, "sec/op"})
			t2, ok2 := d.best(key{b, coding, body, impl, hi, "sec/op"})
			if !ok1 || !ok2 {
				fmt.Fprint(w, " |")
				continue
			}
			s := t1 / t2
			mark := ""
			if impl == "squeeze" && s < minSpeedup {
				mark = " **MISSED**"
				misses++
			}
			m1, _ := d.median(key{b, coding, body, impl, lo, "sec/op"})
			m2, _ := d.median(key{b, coding, body, impl, hi, "sec/op"})
			fmt.Fprintf(w, " %.2fx%s (%.2fx) |", s, mark, m1/m2)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return misses
}

// heap compares squeeze's live heap per in-flight stream with the lowest
// peer's at the same settings. Beside the totals, which are mostly the
// encoder's state, it shows each one's overhead over the floor (the same
// encoder held by no middleware): the part a middleware controls.
func (d data) heap(w *strings.Builder) int {
	misses := 0
	for _, b := range []string{"Inflight", "InflightDefaults"} {
		codings := d.values(b, func(k key) string { return k.coding })
		if len(codings) == 0 {
			continue
		}
		procs := d.procsOf(b)[0]
		title := "at squeeze's settings"
		if b == "InflightDefaults" {
			title = "each at its defaults (context only: levels and windows differ)"
		}
		fmt.Fprintf(w, "### Heap per in-flight stream, %s (live heap per stream; target: squeeze <= lowest peer)\n\n", title)
		impls := d.values(b, func(k key) string { return k.impl })
		fmt.Fprint(w, "| coding |")
		for _, impl := range impls {
			fmt.Fprintf(w, " %s |", impl)
		}
		fmt.Fprint(w, " lowest peer | squeeze / lowest | squeeze - floor | lowest - floor |\n| --- |"+strings.Repeat(" ---: |", len(impls))+" --- | --- | ---: | ---: |\n")
		for _, coding := range codings {
			fmt.Fprintf(w, "| %s |", coding)
			lowest, lowestName := -1.0, ""
			for _, impl := range impls {
				v, ok := d.median(key{b, coding, "", impl, procs, "live-B/stream"})
				if !ok {
					fmt.Fprint(w, " |")
					continue
				}
				fmt.Fprintf(w, " %s |", kib(v))
				if impl != "squeeze" && impl != "floor" && impl != "none" && (lowest < 0 || v < lowest) {
					lowest, lowestName = v, impl
				}
			}
			sq, ok := d.median(key{b, coding, "", "squeeze", procs, "live-B/stream"})
			if !ok || lowest <= 0 {
				fmt.Fprint(w, " | | | |\n")
				continue
			}
			cell := fmt.Sprintf("%.3f", sq/lowest)
			if b == "Inflight" {
				met := sq <= lowest
				cell += " " + verdict(met)
				if !met {
					misses++
				}
			}
			over, overLowest := "", ""
			if floor, ok := d.median(key{b, coding, "", "floor", procs, "live-B/stream"}); ok {
				over = fmt.Sprintf("%+.0f B", sq-floor)
				overLowest = fmt.Sprintf("%+.0f B", lowest-floor)
			}
			fmt.Fprintf(w, " %s | %s | %s | %s |\n", lowestName, cell, over, overLowest)
		}
		fmt.Fprintln(w)
	}
	return misses
}

func kib(v float64) string {
	return fmt.Sprintf("%.1f KiB", v/1024)
}
