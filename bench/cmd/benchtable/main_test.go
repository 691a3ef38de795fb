package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tables divide each figure by the floor's of the same round: the nth
// result of an implementation goes with the nth result of the floor, and
// the median is taken over the rounds' ratios, not over the raw times.
func TestTablesTakeRatiosWithinARound(t *testing.T) {
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
	// Rounds of different speeds: the paired ratios are 2, 1.5 and 30,
	// median 2; the raw medians (floor 2, squeeze 20) would say 10.
	peers := write("peers.txt", `BenchmarkResponse/coding=gzip/body=html-2K/impl=floor 	100	10 ns/op	10 cpu-sec/op
BenchmarkResponse/coding=gzip/body=html-2K/impl=squeeze 	100	20 ns/op	20 cpu-sec/op
BenchmarkResponse/coding=gzip/body=html-2K/impl=floor 	100	2 ns/op	2 cpu-sec/op
BenchmarkResponse/coding=gzip/body=html-2K/impl=squeeze 	100	3 ns/op	3 cpu-sec/op
BenchmarkResponse/coding=gzip/body=html-2K/impl=floor 	100	1 ns/op	1 cpu-sec/op
BenchmarkResponse/coding=gzip/body=html-2K/impl=squeeze 	100	30 ns/op	30 cpu-sec/op
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
	if want := "| gzip | html-2K | 2.00 |"; !strings.Contains(b.String(), want) {
		t.Errorf("peers table lacks %q:\n%s", want, b.String())
	}
}
