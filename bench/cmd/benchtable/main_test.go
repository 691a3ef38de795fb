package main

import (
	"os"
	"path/filepath"
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
