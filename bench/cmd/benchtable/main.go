// Command benchtable writes BENCHMARKS.md from the raw output of one run
// of bench/stamp.sh: the paired ratio of squeeze (and gzhttp) to the
// pooled-encoder floor from BenchmarkVersusFloor, every peer's paired ratio
// from BenchmarkPeersVersusFloor, and allocations per response from a
// fixed-iteration BenchmarkResponse; and a Fleet section from a few fixed
// iterations of the root's BenchmarkSharedUpgradeTake and
// BenchmarkDeltaLevels and of redisstore's BenchmarkStore. Every paired time figure
// is a ratio taken inside one round, so that the drift of a shared machine
// between rounds cancels; the table gives the median over the rounds and,
// for squeeze, their range.
//
//	go run ./cmd/benchtable -commit abc1234 -date 2026-12-02 \
//		-versus floor.txt -peers peers.txt -allocs allocs.txt \
//		-fleet fleet.txt -redis redis.txt
//
// stamp.sh passes the commit, the date, the machine and the run's length;
// the output is the whole of BENCHMARKS.md.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// result is one benchmark line: its name's keys and its values by unit.
type result struct {
	bench, coding, body, impl string
	// parts is the name's parts after the benchmark's, split at "/",
	// for benchmarks whose sub-benchmarks are not key=value.
	parts  []string
	values map[string]float64
}

func main() {
	var (
		commit  = flag.String("commit", "unknown", "the commit measured")
		date    = flag.String("date", "unknown", "when it was measured")
		machine = flag.String("machine", "", "one line on the machine (CPU, cores, Go, load)")
		elapsed = flag.String("elapsed", "", "how long the run took")
		command = flag.String("command", "bench/stamp.sh > BENCHMARKS.md", "the command that produced the run")
		rounds  = flag.Int("rounds", 0, "the rounds the run made")
		versus  = flag.String("versus", "", "BenchmarkVersusFloor output, one line per round")
		peers   = flag.String("peers", "", "BenchmarkPeersVersusFloor output, one line per round")
		allocs  = flag.String("allocs", "", "BenchmarkResponse output at a fixed iteration count")
		exact   = flag.String("exact", "", "go test -v output of the root's TestSteadyStateAllocations, whose logs give squeeze's exact allocations per response")
		fleet   = flag.String("fleet", "", "output of the root's BenchmarkSharedUpgradeTake and BenchmarkDeltaLevels")
		store   = flag.String("redis", "", "output of redisstore's BenchmarkStore; empty when redis-server was absent")
		learned = flag.String("learned", "", "the section cmd/learned printed (learned dictionaries on real pages), included as it is")
	)
	flag.Parse()
	if *versus == "" || *peers == "" || *allocs == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: benchtable [-commit c -date d -machine m -elapsed e -rounds n] -versus file -peers file -allocs file [-exact file] [-fleet file [-redis file]] [-learned file]")
		os.Exit(2)
	}
	var in [3][]result
	for i, name := range []string{*versus, *peers, *allocs} {
		rs, err := read(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		if len(rs) == 0 {
			fmt.Fprintln(os.Stderr, "benchtable: no benchmark results in", name)
			os.Exit(1)
		}
		in[i] = rs
	}
	var b strings.Builder
	header(&b, *commit, *date, *machine, *elapsed, *command, *rounds)
	versusTable(&b, in[0])
	peersTable(&b, in[1])
	allocsTable(&b, in[2])
	if *exact != "" {
		raw, err := os.ReadFile(*exact)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		if !exactTable(&b, string(raw)) {
			fmt.Fprintln(os.Stderr, "benchtable: no allocation figures in", *exact)
			os.Exit(1)
		}
	}
	if *fleet != "" {
		rs, err := read(*fleet)
		if err == nil && len(rs) == 0 {
			err = fmt.Errorf("no benchmark results in %s", *fleet)
		}
		var redis []result
		if err == nil && *store != "" {
			redis, err = read(*store)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		if err := fleetTables(&b, rs, redis); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", *fleet+":", err)
			os.Exit(1)
		}
	}
	if *learned != "" {
		section, err := os.ReadFile(*learned)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		b.Write(section)
	}
	howToRead(&b)
	if _, err := os.Stdout.WriteString(b.String()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func read(name string) ([]result, error) {
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var out []result
	r := benchfmt.NewReader(bytes.NewReader(raw), name)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		x := result{bench: string(base), values: map[string]float64{}}
		if full := string(res.Name.Full()); strings.Contains(full, "/") {
			x.parts = strings.Split(full, "/")[1:]
		}
		for _, p := range parts {
			k, v, _ := strings.Cut(strings.TrimPrefix(string(p), "/"), "=")
			switch k {
			case "coding":
				x.coding = v
			case "body":
				x.body = v
			case "impl":
				x.impl = v
			}
		}
		for _, v := range res.Values {
			x.values[v.Unit] = v.Value
		}
		out = append(out, x)
	}
	return out, r.Err()
}

// order lists the distinct values of field in the order they first appear,
// which is the order the benchmarks ran them in.
func order(rs []result, field func(result) string) []string {
	var out []string
	for _, r := range rs {
		if v := field(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func header(b *strings.Builder, commit, date, machine, elapsed, command string, rounds int) {
	fmt.Fprintf(b, "# Benchmarks\n\n")
	fmt.Fprintf(b, "<!-- Written by %s; do not edit by hand: run it again. -->\n\n", command)
	fmt.Fprintf(b, "Measured at commit `%s` on %s", commit, date)
	if machine != "" {
		fmt.Fprintf(b, ", on %s", machine)
	}
	fmt.Fprintf(b, ", by `%s`", command)
	if rounds > 0 {
		plural := "s"
		if rounds == 1 {
			plural = ""
		}
		fmt.Fprintf(b, " (%d round%s", rounds, plural)
		if elapsed != "" {
			fmt.Fprintf(b, ", %s in all", elapsed)
		}
		b.WriteString(")")
	}
	b.WriteString(". Every time figure outside the Fleet section is a ratio to the floor, the bare pooled encoder at the same level, " +
		"taken within one round; see [How to read it](#how-to-read-it). Earlier measurements, with the " +
		"commands that made them, are in [docs/perf-history.md](docs/perf-history.md).\n\n")
}

// versusTable is the paired comparison: each line of BenchmarkVersusFloor
// timed the floor, squeeze and gzhttp in alternation, so its ratios need
// no other line. The thread-CPU ratios (cpu-x-floor) are the table's
// figures where the benchmark reports them; the wall-time ratio is beside
// them, for comparison with earlier runs.
func versusTable(b *strings.Builder, rs []result) {
	b.WriteString("## squeeze against the floor, paired (BenchmarkVersusFloor)\n\n")
	b.WriteString("Time per response relative to the floor's, the three served in alternation, one request at a time " +
		"(GOMAXPROCS 1): each response's thread CPU time, median over the rounds and squeeze's range over them; " +
		"squeeze's wall-time ratio; the floor's own CPU time per response.\n\n")
	b.WriteString("| coding | body | squeeze | (range) | squeeze, wall | gzhttp | floor |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	inverse := func(r result, unit string) (float64, bool) {
		x := r.values[unit]
		return 1 / x, x > 0
	}
	for _, coding := range order(rs, func(r result) string { return r.coding }) {
		for _, body := range order(rs, func(r result) string { return r.body }) {
			var sq, wall, gz, floor []float64
			for _, r := range rs {
				if r.coding != coding || r.body != body {
					continue
				}
				cpu := "cpu-"
				if _, ok := r.values["cpu-x-floor"]; !ok {
					cpu = "" // a run without thread CPU times: wall time
				}
				if v, ok := inverse(r, cpu+"x-floor"); ok {
					sq = append(sq, v)
				}
				if v, ok := inverse(r, "x-floor"); ok {
					wall = append(wall, v)
				}
				if v, ok := inverse(r, "gzhttp-"+cpu+"x-floor"); ok {
					gz = append(gz, v)
				}
				if t := r.values["floor-"+cpu+"sec/op"]; t > 0 {
					floor = append(floor, t)
				}
			}
			if len(sq) == 0 {
				continue
			}
			g := "—"
			if len(gz) > 0 {
				g = fmt.Sprintf("%.3f", median(gz))
			}
			fmt.Fprintf(b, "| %s | %s | %.3f | %.3f–%.3f | %.3f | %s | %s |\n", coding, body,
				median(sq), slices.Min(sq), slices.Max(sq), median(wall), g, duration(median(floor)))
		}
	}
	b.WriteString("\n")
}

// peersOrder is the order of the peers' columns; a peer not listed comes
// after them.
var peersOrder = []string{"squeeze", "gzhttp", "httpcompression", "chi", "chi-kp", "nytimes"}

// peersTable gives each implementation's time over the floor's from
// BenchmarkPeersVersusFloor, which serves the floor and every peer in
// alternation: squeeze's ratio is cpu-x-floor (x-floor in a run without
// thread CPU times), a peer's NAME-cpu-x-floor.
func peersTable(b *strings.Builder, rs []result) {
	ratio := func(r result, impl string) (float64, bool) {
		cpu := "cpu-"
		if _, ok := r.values["cpu-x-floor"]; !ok {
			cpu = ""
		}
		unit := cpu + "x-floor"
		if impl != "squeeze" {
			unit = impl + "-" + unit
		}
		x := r.values[unit]
		return 1 / x, x > 0
	}
	impls := []string{}
	for _, r := range rs {
		for unit := range r.values {
			name, ok := strings.CutSuffix(unit, "-x-floor")
			name = strings.TrimSuffix(name, "-cpu")
			if ok && name != "cpu" && !slices.Contains(impls, name) {
				impls = append(impls, name)
			}
		}
	}
	impls = append(impls, "squeeze")
	slices.SortFunc(impls, func(a, b string) int {
		ia, ib := slices.Index(peersOrder, a), slices.Index(peersOrder, b)
		if ia < 0 {
			ia = len(peersOrder)
		}
		if ib < 0 {
			ib = len(peersOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	b.WriteString("## squeeze and its peers, paired (BenchmarkPeersVersusFloor)\n\n")
	b.WriteString("Time per response relative to the floor's, the floor and every implementation served in alternation " +
		"(each response's thread CPU time, GOMAXPROCS 1), each at squeeze's level and encoder settings where it " +
		"takes them: median over the rounds. chi is `middleware.Compress` with the standard library's gzip, " +
		"chi-kp the same with klauspost's, nytimes is gziphandler.\n\n")
	fmt.Fprintf(b, "| coding | body | %s |\n| --- | --- |%s\n", strings.Join(impls, " | "), strings.Repeat(" ---: |", len(impls)))
	for _, coding := range order(rs, func(r result) string { return r.coding }) {
		for _, body := range order(rs, func(r result) string { return r.body }) {
			var row []result
			for _, r := range rs {
				if r.coding == coding && r.body == body {
					row = append(row, r)
				}
			}
			if len(row) == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s |", coding, body)
			for _, impl := range impls {
				var ratios []float64
				for _, r := range row {
					if v, ok := ratio(r, impl); ok {
						ratios = append(ratios, v)
					}
				}
				if len(ratios) == 0 {
					b.WriteString(" — |")
					continue
				}
				fmt.Fprintf(b, " %.3f |", median(ratios))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

func allocsTable(b *strings.Builder, rs []result) {
	impls := order(rs, func(r result) string { return r.impl })
	b.WriteString("## Allocations per response (BenchmarkResponse, fixed iterations)\n\n")
	b.WriteString("Objects and bytes allocated per response, over a fixed number of responses so that " +
		"an encoder rebuilt after a collection emptied its pool counts at its real rate.\n\n")
	fmt.Fprintf(b, "| coding | body | %s |\n| --- | --- |%s\n", strings.Join(impls, " | "), strings.Repeat(" ---: |", len(impls)))
	for _, coding := range order(rs, func(r result) string { return r.coding }) {
		for _, body := range order(rs, func(r result) string { return r.body }) {
			row := map[string]result{}
			for _, r := range rs {
				if r.coding == coding && r.body == body {
					row[r.impl] = r
				}
			}
			if len(row) == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s |", coding, body)
			for _, impl := range impls {
				r, ok := row[impl]
				if !ok {
					b.WriteString(" — |")
					continue
				}
				fmt.Fprintf(b, " %s · %s |", count(r.values["allocs/op"]), bytesOf(r.values["B/op"]))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

// exactLine is what TestSteadyStateAllocations logs for each coding and
// observer.
var exactLine = regexp.MustCompile(`(?m)^\s+\w+\.go:\d+: (\w+), ([^:]+): ([\d.]+) allocations, (\d+) bytes per response$`)

// exactTable gives squeeze's allocations per response as the root's
// allocation test counts them, fractions included: a benchmark rounds
// allocs/op and B/op down to whole numbers.
func exactTable(b *strings.Builder, log string) bool {
	ms := exactLine.FindAllStringSubmatch(log, -1)
	if len(ms) == 0 {
		return false
	}
	b.WriteString("squeeze's own count, with the fraction a benchmark rounds away " +
		"(`TestSteadyStateAllocations`: a 16 KiB page through a reused writer):\n\n")
	b.WriteString("| coding | observer | allocations per response | bytes per response |\n| --- | --- | ---: | ---: |\n")
	for _, m := range ms {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", m[1], m[2], m[3], m[4])
	}
	b.WriteString("\n")
	return true
}

func howToRead(b *strings.Builder) {
	b.WriteString(`## How to read it

- **The floor** is the bare encoder from squeeze's pool at the same level, writing into the same
  response writer: what compressing the body costs with no middleware at all. A ratio of 1.00 is
  the floor's time; 1.05 is 5% slower. squeeze's target is at most 1.03 (cmd/targets says
  0.97 in its x-floor, the inverse).
- **Paired** means the floor, squeeze and gzhttp serve the same body in turn inside one benchmark
  loop, each response timed by its thread's CPU clock, so the waits for a core that a shared
  machine adds to wall time (often more than the response itself) drop out; each round is a
  separate process, so each draws its own memory layout. The range is the spread over rounds:
  read a difference smaller than it as noise. The wall-time ratio, which earlier runs quote
  (docs/perf-history.md), is beside it, and is only as good as the machine is quiet.
- **Peers** are paired the same way, every implementation in one rotation with the floor.
  They are at squeeze's settings, not their own defaults, so the table compares the middleware,
  not the level; br rows have no gzhttp (it has no br).
- **Allocations** are per response. The benchmark's figures are whole numbers, rounded down;
  squeeze's own count keeps the fraction (0.028 is one object every 36 responses). Bytes are
  allocated, not held.
- **Fleet** figures are per call, from a few fixed iterations (wall time, so a busy machine
  inflates them; read them as orders of magnitude). A shared hit in the first table uses an
  in-memory store: over Redis, add the Get of the table below at the encoding's size (the
  encoding is smaller than the body). The delta sizes are exact. The fleet's delta share with
  and without the store (three replicas behind HAProxy) is measured by
  ` + "`cd example && go test -run Fleet -v ./fleet`" + `, which takes too long to run here.
- On 2 shared cores, ratios move by a few percent between runs; compare two commits by running
  the command on each, on the same machine, one after the other.
`)
}

func duration(sec float64) string {
	switch {
	case sec >= 1:
		return fmt.Sprintf("%.2f s", sec)
	case sec >= 1e-3:
		return fmt.Sprintf("%.2f ms", sec*1e3)
	default:
		return fmt.Sprintf("%.1f µs", sec*1e6)
	}
}

func count(n float64) string {
	if n == float64(int64(n)) {
		return fmt.Sprintf("%d", int64(n))
	}
	return fmt.Sprintf("%.2f", n)
}

func bytesOf(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", n)
	}
}

// fleetTables is the Fleet section: what a replica spends taking a variant
// another replica upgraded against encoding it itself
// (BenchmarkSharedUpgradeTake), delta sizes at the default and the best
// level on real release pairs (BenchmarkDeltaLevels), and the Redis store's
// calls on loopback (redisstore's BenchmarkStore), or a line saying they
// are missing when redis is nil. It fails when rs lacks either of the
// root's benchmarks, so that a -bench pattern gone wrong does not drop a
// table silently.
func fleetTables(b *strings.Builder, rs, redis []result) error {
	b.WriteString("## Fleet: shared encodings, deltas and the Redis store\n\n")
	if !sharedTable(b, rs) {
		return errors.New("no BenchmarkSharedUpgradeTake results with both encodes and a shared hit")
	}
	if !deltaTable(b, rs) {
		return errors.New("no BenchmarkDeltaLevels results at two levels")
	}
	redisTable(b, redis)
	return nil
}

func secPerOp(r result) float64 {
	return r.values["sec/op"]
}

// sharedTable reads BenchmarkSharedUpgradeTake/BODY/CODING/OP, where OP is
// encode-LEVEL (the default level first, then the best) or shared-hit,
// and reports whether every row had all three.
func sharedTable(b *strings.Builder, rs []result) bool {
	type row struct {
		body, coding string
		hit          float64
		levels       []string
		encode       []float64
	}
	var rows []*row
	for _, r := range rs {
		if r.bench != "SharedUpgradeTake" || len(r.parts) != 3 {
			continue
		}
		i := slices.IndexFunc(rows, func(x *row) bool { return x.body == r.parts[0] && x.coding == r.parts[1] })
		if i < 0 {
			rows = append(rows, &row{body: r.parts[0], coding: r.parts[1]})
			i = len(rows) - 1
		}
		x := rows[i]
		if level, ok := strings.CutPrefix(r.parts[2], "encode-"); ok {
			x.levels = append(x.levels, level)
			x.encode = append(x.encode, secPerOp(r))
		} else if r.parts[2] == "shared-hit" {
			x.hit = secPerOp(r)
		}
	}
	if len(rows) == 0 || slices.ContainsFunc(rows, func(x *row) bool { return x.hit == 0 || len(x.encode) < 2 }) {
		return false
	}
	b.WriteString("### A shared hit against encoding again (BenchmarkSharedUpgradeTake)\n\n")
	b.WriteString("Time for a replica to have a variant at the best level: take it from the store, " +
		"which another replica filled (a local miss, the fetch from an in-memory store, and the verification: " +
		"a decode and a SHA-256 of the plain body), or encode it itself at the default or at the best level. " +
		"Real bodies: the first 24 KiB of lodash.min.js and react-dom's production build; " +
		"dcb and dcz are deltas against the previous release.\n\n")
	b.WriteString("| body | coding | shared hit | encode, default level | encode, best level | best ÷ hit |\n" +
		"| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, x := range rows {
		enc := func(i int) string {
			if i >= len(x.encode) {
				return "—"
			}
			return fmt.Sprintf("%s (%s)", duration(x.encode[i]), x.levels[i])
		}
		gain := "—"
		if x.hit > 0 && len(x.encode) > 0 {
			gain = fmt.Sprintf("%.0f×", x.encode[len(x.encode)-1]/x.hit)
		}
		hit := "—"
		if x.hit > 0 {
			hit = duration(x.hit)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", x.body, x.coding, hit, enc(0), enc(1), gain)
	}
	b.WriteString("\n")
	return true
}

// deltaTable reads BenchmarkDeltaLevels/RELEASE/CODING-LEVEL, the default
// level first, with the delta's size in B/delta, and reports whether every
// row had both levels.
func deltaTable(b *strings.Builder, rs []result) bool {
	type row struct {
		release, coding string
		levels          []string
		size, cpu       []float64
	}
	var rows []*row
	for _, r := range rs {
		if r.bench != "DeltaLevels" || len(r.parts) != 2 {
			continue
		}
		coding, level, ok := strings.Cut(r.parts[1], "-")
		if !ok {
			continue
		}
		i := slices.IndexFunc(rows, func(x *row) bool { return x.release == r.parts[0] && x.coding == coding })
		if i < 0 {
			rows = append(rows, &row{release: r.parts[0], coding: coding})
			i = len(rows) - 1
		}
		x := rows[i]
		x.levels = append(x.levels, level)
		x.size = append(x.size, r.values["B/delta"])
		x.cpu = append(x.cpu, secPerOp(r))
	}
	if len(rows) == 0 || slices.ContainsFunc(rows, func(x *row) bool { return len(x.size) < 2 }) {
		return false
	}
	b.WriteString("### Delta sizes at the default and the best level (BenchmarkDeltaLevels)\n\n")
	b.WriteString("Real release pairs from npm, each new release encoded as a delta against the one before " +
		"(react-dom 18.2.0 → 18.3.1, 129 KiB; lodash 4.17.15 → 4.17.21, 72 KiB): the delta's size and the " +
		"time of one encode, at the Middleware's default level and at the level the cache upgrades to.\n\n")
	b.WriteString("| release | coding | default level | best level | smaller by | encode, default | encode, best |\n" +
		"| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, x := range rows {
		last := len(x.size) - 1
		smaller := "—"
		if x.size[0] > 0 {
			smaller = fmt.Sprintf("%.0f%%", 100*(1-x.size[last]/x.size[0]))
		}
		fmt.Fprintf(b, "| %s | %s | %.0f B (%s) | %.0f B (%s) | %s | %s | %s |\n", x.release, x.coding,
			x.size[0], x.levels[0], x.size[last], x.levels[last], smaller,
			duration(x.cpu[0]), duration(x.cpu[last]))
	}
	b.WriteString("\n")
	return true
}

// redisTable reads redisstore's BenchmarkStore/OP/SIZE (Get, RawGET,
// GetOverLimit, Set) and BenchmarkStore/Claim.
func redisTable(b *strings.Builder, rs []result) {
	b.WriteString("### The Redis store on loopback (redisstore's BenchmarkStore)\n\n")
	if len(rs) == 0 {
		b.WriteString("Not measured: redis-server was not installed when this ran. Install it " +
			"(Debian's `redis-server`) and run the command again.\n\n")
		return
	}
	b.WriteString("One call's latency against a redis-server on loopback, started for the run with " +
		"persistence off, per value size: the store's Get, a plain GET through the same client (the floor), " +
		"a Get of a value over the caller's limit (refused before it is read), and a Set.\n\n")
	ops := []string{"Get", "RawGET", "GetOverLimit", "Set"}
	var sizes []string
	at := map[[2]string]float64{}
	claim := 0.0
	for _, r := range rs {
		switch {
		case len(r.parts) == 1 && r.parts[0] == "Claim":
			claim = secPerOp(r)
		case len(r.parts) == 2:
			if !slices.Contains(sizes, r.parts[1]) {
				sizes = append(sizes, r.parts[1])
			}
			at[[2]string{r.parts[0], r.parts[1]}] = secPerOp(r)
		}
	}
	b.WriteString("| value | Get | plain GET | Get over the limit | Set |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, size := range sizes {
		fmt.Fprintf(b, "| %s |", size)
		for _, op := range ops {
			if t, ok := at[[2]string{op, size}]; ok && t > 0 {
				fmt.Fprintf(b, " %s |", duration(t))
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
	}
	if claim > 0 {
		fmt.Fprintf(b, "\nA Claim (set-if-absent, for fleet-wide single work): %s.\n", duration(claim))
	}
	b.WriteString("\n")
}
