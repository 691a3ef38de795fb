package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tables quote the paired ratios of each round's benchmark line, as
// times relative to the floor's (the inverse of x-floor), median over the
// rounds; the thread CPU ratios where the line has them.
func TestTablesQuotePairedRatiosOverRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	versus := write("versus.txt", `BenchmarkVersusFloor/coding=gzip/body=html-2K/mode=serial 	100	1 ns/op	0.5 x-floor	0.8 gzhttp-x-floor	0.00001 floor-sec/op
BenchmarkVersusFloor/coding=gzip/body=html-2K/mode=serial 	100	1 ns/op	1.0 x-floor	1.0 gzhttp-x-floor	0.00001 floor-sec/op
BenchmarkVersusFloor/coding=gzip/body=html-2K/mode=serial 	100	1 ns/op	0.8 x-floor	0.8 gzhttp-x-floor	0.00001 floor-sec/op
BenchmarkVersusFloor/coding=gzip/body=html-16K/mode=serial 	100	1 ns/op	0.5 x-floor	0.5 cpu-x-floor	0.25 gzhttp-cpu-x-floor	0.00001 floor-sec/op	0.00002 floor-cpu-sec/op
`)
	// Three rounds of every peer in one rotation with the floor: the table
	// gives the medians of the inverse ratios, squeeze's from cpu-x-floor.
	peers := write("peers.txt", `BenchmarkPeersVersusFloor/coding=gzip/body=html-2K 	100	1 ns/op	0.5 cpu-x-floor	0.9 x-floor	0.25 gzhttp-cpu-x-floor	0.9 gzhttp-x-floor	1 chi-kp-cpu-x-floor
BenchmarkPeersVersusFloor/coding=gzip/body=html-2K 	100	1 ns/op	1 cpu-x-floor	0.9 x-floor	0.5 gzhttp-cpu-x-floor	0.9 gzhttp-x-floor	1 chi-kp-cpu-x-floor
BenchmarkPeersVersusFloor/coding=gzip/body=html-2K 	100	1 ns/op	0.8 cpu-x-floor	0.9 x-floor	0.5 gzhttp-cpu-x-floor	0.9 gzhttp-x-floor	0.5 chi-kp-cpu-x-floor
`)
	var b strings.Builder
	rs, err := read(versus)
	if err != nil {
		t.Fatal(err)
	}
	versusTable(&b, rs)
	if want := "| gzip | html-2K | 1.250 | 1.000–2.000 | 1.250 | 1.250 | 10.0 µs |"; !strings.Contains(b.String(), want) {
		t.Errorf("versus table lacks %q:\n%s", want, b.String())
	}
	// Where the thread CPU ratios are there, they are the figures.
	if want := "| gzip | html-16K | 2.000 | 2.000–2.000 | 2.000 | 4.000 | 20.0 µs |"; !strings.Contains(b.String(), want) {
		t.Errorf("versus table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if rs, err = read(peers); err != nil {
		t.Fatal(err)
	}
	peersTable(&b, rs)
	if want := "| coding | body | squeeze | gzhttp | chi-kp |"; !strings.Contains(b.String(), want) {
		t.Errorf("peers table lacks %q:\n%s", want, b.String())
	}
	if want := "| gzip | html-2K | 1.250 | 2.000 | 1.000 |"; !strings.Contains(b.String(), want) {
		t.Errorf("peers table lacks %q:\n%s", want, b.String())
	}
}

// The Fleet section reads sub-benchmarks named by plain parts, not
// key=value: a shared hit against encoding at the default and the best
// level, the delta sizes at both levels and what the best one saves, and
// the Redis store's calls per value size; without redisstore's output it
// says Redis was not measured instead of failing.
func TestFleetTablesQuoteSharedHitsDeltaSizesAndRedis(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(fleet, []byte(`goos: linux
pkg: github.com/squeezehttp/squeeze
BenchmarkSharedUpgradeTake/lodash-24K/br/encode-5 	3	2000000 ns/op	12.29 MB/s
BenchmarkSharedUpgradeTake/lodash-24K/br/encode-11 	3	40000000 ns/op	0.61 MB/s
BenchmarkSharedUpgradeTake/lodash-24K/br/shared-hit 	3	200000 ns/op	122.9 MB/s
BenchmarkSharedUpgradeTake/react-dom-129K/dcz/encode-3 	3	1500000 ns/op	88.1 MB/s
BenchmarkSharedUpgradeTake/react-dom-129K/dcz/encode-19 	3	1200000000 ns/op	0.11 MB/s
BenchmarkSharedUpgradeTake/react-dom-129K/dcz/shared-hit 	3	1000000 ns/op	132.1 MB/s
pkg: github.com/squeezehttp/squeeze_test
BenchmarkDeltaLevels/react-dom/dcb-5 	3	9000000 ns/op	14.69 MB/s	10240 B/delta
BenchmarkDeltaLevels/react-dom/dcb-11 	3	300000000 ns/op	0.44 MB/s	8192 B/delta
`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "redis.txt")
	if err := os.WriteFile(store, []byte(`BenchmarkStore/Get/1KiB 	300	50000 ns/op	20.48 MB/s
BenchmarkStore/RawGET/1KiB 	300	40000 ns/op	25.60 MB/s
BenchmarkStore/GetOverLimit/1KiB 	300	45000 ns/op
BenchmarkStore/Set/1KiB 	300	60000 ns/op	17.07 MB/s
BenchmarkStore/Claim 	300	55000 ns/op
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := read(fleet)
	if err != nil {
		t.Fatal(err)
	}
	redis, err := read(store)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := fleetTables(&b, rs, redis); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| lodash-24K | br | 200.0 µs | 2.00 ms (5) | 40.00 ms (11) | 200× |",
		"| react-dom-129K | dcz | 1.00 ms | 1.50 ms (3) | 1.20 s (19) | 1200× |",
		"| react-dom | dcb | 10240 B (5) | 8192 B (11) | 20% | 9.00 ms | 300.00 ms |",
		"| 1KiB | 50.0 µs | 40.0 µs | 45.0 µs | 60.0 µs |",
		"A Claim (set-if-absent, for fleet-wide single work): 55.0 µs.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("fleet section lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := fleetTables(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	if want := "Not measured: redis-server was not installed"; !strings.Contains(b.String(), want) {
		t.Errorf("fleet section without Redis lacks %q:\n%s", want, b.String())
	}
	// A run whose pattern matched no shared hit is an error, not a
	// section without its table.
	var hitless []result
	for _, r := range rs {
		if !slices.Contains(r.parts, "shared-hit") {
			hitless = append(hitless, r)
		}
	}
	if err := fleetTables(&b, hitless, nil); err == nil {
		t.Error("fleetTables took a run without shared hits")
	}
}
