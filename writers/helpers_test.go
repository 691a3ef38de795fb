package writers_test

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// codings lists every coding the package implements, in a fixed order so
// failures are reproducible.
var codings = []string{writers.Gzip, writers.Deflate, writers.Zstd, writers.Brotli}

// reduced reports whether the data-heavy tests run a smaller sample: under
// -race, which slows the codecs tenfold and has nothing to find in their
// single-goroutine work, and under -short. The full sample runs in the plain
// go test that CI also runs.
func reduced() bool { return raceEnabled || testing.Short() }

// sampleLevels returns the levels a data-heavy test covers: every valid
// level normally; when reduced, one zstd level per encoder speed plus 22,
// and every other coding's levels.
func sampleLevels(tb testing.TB, coding string) []int {
	tb.Helper()
	if reduced() && coding == writers.Zstd {
		return append(slices.Clone(zstdSpeeds), 22)
	}
	return validLevels(tb, coding)
}

// validLevels returns every level ValidateLevel accepts for coding.
func validLevels(tb testing.TB, coding string) []int {
	tb.Helper()
	r, err := writers.Levels(coding)
	if err != nil {
		tb.Fatal(err)
	}
	var levels []int
	for l := r.Min; l <= r.Max; l++ {
		if writers.ValidateLevel(coding, l) == nil {
			levels = append(levels, l)
		}
	}
	return levels
}

func defaultLevel(tb testing.TB, coding string) int {
	tb.Helper()
	r, err := writers.Levels(coding)
	if err != nil {
		tb.Fatal(err)
	}
	return r.Default
}

func newEncoder(tb testing.TB, coding string, level int) writers.Encoder {
	tb.Helper()
	e, err := writers.NewEncoder(coding, level)
	if err != nil {
		tb.Fatalf("NewEncoder(%q, %d): %v", coding, level, err)
	}
	return e
}

func newDecoder(tb testing.TB, coding string) writers.Decoder {
	tb.Helper()
	d, err := writers.NewDecoder(coding)
	if err != nil {
		tb.Fatalf("NewDecoder(%q): %v", coding, err)
	}
	return d
}

// encode compresses the concatenation of chunks with a new encoder, writing
// each chunk with its own Write call.
func encode(tb testing.TB, coding string, level int, chunks ...[]byte) []byte {
	tb.Helper()
	return encodeWith(tb, newEncoder(tb, coding, level), chunks...)
}

// encodeWith is encode with an encoder the caller reuses: building the
// larger zstd and br encoders dominates the small tests under -race.
func encodeWith(tb testing.TB, e writers.Encoder, chunks ...[]byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	e.Reset(&buf)
	for _, c := range chunks {
		if n, err := e.Write(c); err != nil || n != len(c) {
			tb.Fatalf("Write = %d, %v; want %d, nil", n, err, len(c))
		}
	}
	if err := e.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

// decode decompresses data with a fresh writers.Decoder. An error from Reset
// or from Read is returned as is.
func decode(tb testing.TB, coding string, data []byte) ([]byte, error) {
	tb.Helper()
	return decodeWith(newDecoder(tb, coding), data)
}

// decodeWith is decode with a decoder the caller reuses.
func decodeWith(d writers.Decoder, data []byte) ([]byte, error) {
	if err := d.Reset(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return io.ReadAll(d)
}

// chunked splits data into pieces of irregular sizes, so encoders see writes
// that straddle their internal block boundaries.
func chunked(data []byte) [][]byte {
	sizes := []int{1, 7, 300, 4096, 65536 + 13}
	var out [][]byte
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// tool runs the reference program name with args, feeding it stdin, and
// returns its standard output. It stops the test if the program fails.
func tool(tb testing.TB, name string, stdin []byte, args ...string) []byte {
	tb.Helper()
	out, err := runTool(tb, name, stdin, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// runTool is tool without the verdict: err describes a failed run.
func runTool(tb testing.TB, name string, stdin []byte, args ...string) ([]byte, error) {
	tb.Helper()
	t, ok := tb.(*testing.T)
	if !ok {
		tb.Fatalf("reference tools are for tests")
	}
	path := testtool.Require(t, name)
	cmd := exec.Command(path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}
