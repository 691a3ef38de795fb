// Command testjson reads the events of `go test -json` on its standard
// input and prints what CI needs of them: each package's result, the
// output of every test that failed, the slowest tests, and a closing line
// of counts. It writes the top-level tests that were skipped, or that had a
// skipped subtest, to the file named by -skipped, one "package<TAB>test" a
// line, so that .ci/run can run them again without -race.
//
//	go test -race -short -json ./... | testjson -skipped skipped.txt -slowest 20
//
// It exits 1 when a test or a package failed, or when a line that is not an
// event says the build failed; lines that are not events are printed as
// they come.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // of build-output and build-fail events
	Test       string
	Elapsed    float64
	Output     string
}

type testKey struct{ pkg, name string }

type report struct {
	out      *bufio.Writer
	output   map[testKey]*strings.Builder // a test's output, kept until it ends
	pkgOut   map[string]*strings.Builder  // output outside any test
	durs     []timed
	skipped  map[testKey]bool // top-level tests to run again
	passed   int
	failed   int
	skips    int
	failures []string // packages or tests that failed, in order
}

type timed struct {
	key testKey
	d   time.Duration
}

func main() {
	skippedPath := flag.String("skipped", "", "write the skipped top-level tests to this file")
	slowest := flag.Int("slowest", 20, "print this many of the slowest tests")
	flag.Parse()
	r := &report{
		out:     bufio.NewWriter(os.Stdout),
		output:  map[testKey]*strings.Builder{},
		pkgOut:  map[string]*strings.Builder{},
		skipped: map[testKey]bool{},
	}
	if err := r.read(os.Stdin); err != nil {
		fail(err)
	}
	r.printSlowest(*slowest)
	if *skippedPath != "" {
		if err := r.writeSkipped(*skippedPath); err != nil {
			fail(err)
		}
	}
	if len(r.failures) > 0 {
		r.printf("\nfailed: %s\n", strings.Join(r.failures, ", "))
	}
	r.printf("tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skips)
	if err := r.out.Flush(); err != nil {
		fail(err)
	}
	if len(r.failures) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testjson:", err)
	os.Exit(2)
}

// printf writes to standard output through r.out, whose Flush at the end
// reports the first error of any write.
func (r *report) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.out, format, args...)
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: a build error printed as text, or a tool's
			// own output. Say it as it came.
			r.printf("%s\n", line)
			if strings.Contains(string(line), "[build failed]") || strings.HasPrefix(string(line), "FAIL") {
				r.failures = append(r.failures, strings.TrimSpace(string(line)))
			}
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	if e.Package == "" {
		e.Package = e.ImportPath
	}
	if e.Test == "" {
		r.packageEvent(e)
		return
	}
	k := testKey{e.Package, e.Test}
	top := testKey{e.Package, strings.SplitN(e.Test, "/", 2)[0]}
	switch e.Action {
	case "output":
		b := r.output[k]
		if b == nil {
			b = new(strings.Builder)
			r.output[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if k == top {
			r.durs = append(r.durs, timed{k, time.Duration(e.Elapsed * float64(time.Second))})
		}
		switch e.Action {
		case "pass":
			if k == top {
				r.passed++
			}
		case "fail":
			// A parent fails with its subtest: print each one's own output,
			// count the top-level test once.
			r.printf("--- FAIL: %s (%s)\n%s", e.Test, e.Package, r.output[k])
			if k == top {
				r.failed++
				r.failures = append(r.failures, e.Package+"."+e.Test)
			}
		case "skip":
			if k == top {
				r.skips++
			}
			r.skipped[top] = true
		}
		delete(r.output, k)
	}
}

func (r *report) packageEvent(e event) {
	// A package's end shows in the log as it comes; a write error sticks
	// in r.out for the last Flush to report.
	defer func() { _ = r.out.Flush() }()
	switch e.Action {
	case "output", "build-output":
		b := r.pkgOut[e.Package]
		if b == nil {
			b = new(strings.Builder)
			r.pkgOut[e.Package] = b
		}
		b.WriteString(e.Output)
	case "pass", "skip":
		r.printf("ok   %s\t%.1fs\n", e.Package, e.Elapsed)
		delete(r.pkgOut, e.Package)
	case "fail", "build-fail":
		// What the package printed outside its tests says why (a build
		// error), or what the tests that never ended printed (a panic, a
		// timeout).
		r.printf("FAIL %s\t%.1fs\n", e.Package, e.Elapsed)
		for k, b := range r.output {
			if k.pkg == e.Package {
				r.printf("--- unfinished: %s\n%s", k.name, b)
				delete(r.output, k)
			}
		}
		r.printf("%s", r.pkgOut[e.Package])
		r.failures = append(r.failures, e.Package)
		delete(r.pkgOut, e.Package)
	}
}

func (r *report) printSlowest(n int) {
	if n <= 0 || len(r.durs) == 0 {
		return
	}
	slices.SortFunc(r.durs, func(a, b timed) int { return int(b.d - a.d) })
	r.printf("\nslowest tests:\n")
	for _, t := range r.durs[:min(n, len(r.durs))] {
		r.printf("%8.1fs  %s %s\n", t.d.Seconds(), t.key.pkg, t.key.name)
	}
}

func (r *report) writeSkipped(path string) error {
	var lines []string
	for k := range r.skipped {
		lines = append(lines, k.pkg+"\t"+k.name+"\n")
	}
	slices.Sort(lines)
	return os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
}
