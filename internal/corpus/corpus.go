// Package corpus loads real text documents from the Go toolchain for
// squeeze's tests and benchmarks, so that ratios and speeds are measured on
// the kind of bodies an HTTP server sends rather than on synthetic bytes.
//
// The documents ship with every Go installation:
//
//   - HTML: doc/go_spec.html, the Go specification (about 290 KiB).
//   - JS: lib/wasm/wasm_exec.js (about 17 KiB).
//   - JSON: src/encoding/json/internal/jsontest/testdata/twitter_status.json.zst,
//     a Twitter API search response (about 620 KiB once decompressed).
//
// A missing document fails the test under CI=true and skips it otherwise, the
// same policy as internal/testtool. Each call reads the file again and returns
// a slice the caller owns, so there is no shared state to corrupt.
package corpus

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Doc is a named document.
type Doc struct {
	Name string // "html", "json" or "js"
	Data []byte
}

// HTML returns the Go specification, a large real-world HTML page.
func HTML(tb testing.TB) []byte {
	tb.Helper()
	return read(tb, "doc", "go_spec.html")
}

// JS returns wasm_exec.js, a real-world JavaScript file.
func JS(tb testing.TB) []byte {
	tb.Helper()
	return read(tb, "lib", "wasm", "wasm_exec.js")
}

// JSON returns a real-world JSON API response: a Twitter search result with
// mixed ASCII and non-ASCII text, numbers and nested objects.
func JSON(tb testing.TB) []byte {
	tb.Helper()
	z := read(tb, "src", "encoding", "json", "internal", "jsontest", "testdata", "twitter_status.json.zst")
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		tb.Fatalf("corpus: zstd decoder: %v", err)
	}
	defer d.Close()
	out, err := d.DecodeAll(z, nil)
	if err != nil {
		tb.Fatalf("corpus: decoding twitter_status.json.zst: %v", err)
	}
	return out
}

// All returns every document, in the order html, json, js.
func All(tb testing.TB) []Doc {
	tb.Helper()
	return []Doc{{"html", HTML(tb)}, {"json", JSON(tb)}, {"js", JS(tb)}}
}

// Prefix returns the first n bytes of data, or stops the test if data is
// shorter: a slice of a real document stands in for a typical response body.
func Prefix(tb testing.TB, data []byte, n int) []byte {
	tb.Helper()
	if len(data) < n {
		tb.Fatalf("corpus: document has %d bytes, want at least %d", len(data), n)
	}
	return data[:n:n]
}

func read(tb testing.TB, elem ...string) []byte {
	tb.Helper()
	root, err := goroot()
	if err != nil {
		missing(tb, "GOROOT: %v", err)
		return nil
	}
	path := filepath.Join(append([]string{root}, elem...)...)
	data, err := os.ReadFile(path)
	if err != nil {
		missing(tb, "%v", err)
		return nil
	}
	return data
}

// goroot asks the go command rather than runtime.GOROOT, which is deprecated
// and reports the toolchain that built the test binary only when it still
// sits where it was built. go test puts its own bin directory first on PATH.
func goroot() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		return root, nil
	}
	cmd := exec.Command("go", "env", "GOROOT")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("corpus: document required under CI=true: "+format, args...)
	}
	tb.Skipf("corpus: document not available: "+format, args...)
}
