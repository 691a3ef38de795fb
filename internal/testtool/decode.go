package testtool

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"
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

// DecodeDictionary decodes a dictionary-compressed body of RFC 9842 with
// dict: for "dcz" it checks the 8-byte skippable-frame header and the
// SHA-256 of dict, then decodes the zstd frame with klauspost/compress's
// decoder given dict as raw content and the window RFC 9842 obliges a client
// to accept (max(8 MB, 1.25 x the dictionary), at most 128 MB); for "dcb" it
// checks the 4-byte magic and the hash, then decodes with go-brrr's reader
// given dict as a compound dictionary (andybalholm/brotli has none).
func DecodeDictionary(coding string, b, dict []byte) ([]byte, error) {
	var magic []byte
	switch coding {
	case "dcz":
		magic = []byte{0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00}
	case "dcb":
		magic = []byte{0xFF, 0x44, 0x43, 0x42}
	default:
		return nil, fmt.Errorf("testtool: %q is not a dictionary coding", coding)
	}
	hash := sha256.Sum256(dict)
	header := append(magic, hash[:]...)
	if !bytes.HasPrefix(b, header) {
		return nil, fmt.Errorf("testtool: %s body starts % x, want % x", coding, b[:min(len(b), len(header))], header)
	}
	b = b[len(header):]
	if coding == "dcb" {
		r, err := brrr.NewReaderOptions(bytes.NewReader(b), brrr.ReaderOptions{Dictionaries: [][]byte{dict}})
		if err != nil {
			return nil, err
		}
		defer func() { _ = r.Close() }()
		return io.ReadAll(r)
	}
	window := min(max(8<<20, uint64(len(dict))*5/4), 128<<20)
	d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderDictRaw(0, dict), zstd.WithDecoderMaxWindow(window))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}

// Encode compresses b for coding ("gzip" or "x-gzip", "deflate", "zstd",
// "br") with the codec libraries used directly, not through squeeze's
// writers: what an independent peer would send.
func Encode(tb testing.TB, coding string, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip", "x-gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "zstd":
		e, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		w = e
	case "br":
		w = brotli.NewWriter(&buf)
	default:
		tb.Fatalf("testtool: no encoder for %q", coding)
	}
	if _, err := w.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
