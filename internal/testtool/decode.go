package testtool

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// The content-coding names, as squeeze and writers spell them. testtool
// repeats them rather than import the packages it checks.
const (
	gzipCoding    = "gzip"
	deflateCoding = "deflate"
	zstdCoding    = "zstd"
	brotliCoding  = "br"
)

// NewReader wraps r in a reference decoder for coding that shares no code
// with squeeze's own: compress/gzip for gzip, compress/zlib for deflate (the
// zlib wrapping RFC 9110 names deflate), klauspost/compress/zstd for zstd and
// andybalholm/brotli for br, each used directly rather than through writers.
// The empty coding is identity. Close releases the decoder; it does not
// close r. gzip and deflate read their stream header here, so a bad header
// is an error from NewReader.
func NewReader(coding string, r io.Reader) (io.ReadCloser, error) {
	switch coding {
	case "":
		return io.NopCloser(r), nil
	case gzipCoding:
		return gzip.NewReader(r)
	case deflateCoding:
		return zlib.NewReader(r)
	case zstdCoding:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return zstdReader{d}, nil
	case brotliCoding:
		return io.NopCloser(brotli.NewReader(r)), nil
	}
	return nil, fmt.Errorf("testtool: no reference decoder for Content-Encoding %q", coding)
}

// zstdReader gives a zstd.Decoder the io.Closer it lacks.
type zstdReader struct{ *zstd.Decoder }

func (z zstdReader) Close() error { z.Decoder.Close(); return nil }

// TryDecode decodes the complete stream b with the reference decoder for
// coding (see NewReader) and reports any error: for tests that expect one,
// and for goroutines that must not stop the test.
func TryDecode(coding string, b []byte) ([]byte, error) {
	r, err := NewReader(coding, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// Decode is TryDecode that stops the test on an error.
func Decode(tb testing.TB, coding string, b []byte) []byte {
	tb.Helper()
	out, err := TryDecode(coding, b)
	if err != nil {
		tb.Fatalf("reference decoder for %q, %d-byte stream: %v", coding, len(b), err)
	}
	return out
}

// DecodeCommand names the reference command-line program that decodes
// coding from standard input to standard output, with its arguments. deflate
// (zlib) has no such program installed; ok is false for it, and compress/zlib
// in NewReader stands in.
func DecodeCommand(coding string) (name string, args []string, ok bool) {
	switch coding {
	case gzipCoding:
		return "gzip", []string{"-d", "-c"}, true
	case zstdCoding:
		return "zstd", []string{"-d", "-c", "-q"}, true
	case brotliCoding:
		return "brotli", []string{"-d", "-c"}, true
	}
	return "", nil, false
}

// DecodeCLI decodes the complete stream b with the reference program for
// coding (see DecodeCommand), found with Require: a missing program skips
// the test, or fails it under CI=true. A coding without a program, or a
// failed run, fails the test.
func DecodeCLI(tb testing.TB, coding string, b []byte) []byte {
	tb.Helper()
	name, args, ok := DecodeCommand(coding)
	if !ok {
		tb.Fatalf("no reference program decodes %q", coding)
	}
	cmd := exec.Command(Require(tb, name), args...)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}
