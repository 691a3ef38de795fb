package writers_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// independentDecode decodes data with a decoder that shares no code with
// the package under test: the reference C program where one is installed,
// the standard library otherwise.
func independentDecode(t *testing.T, coding string, data []byte) []byte {
	t.Helper()
	if _, _, ok := testtool.DecodeCommand(coding); !ok {
		return testtool.Decode(t, coding, data) // deflate: compress/zlib
	}
	out := testtool.DecodeCLI(t, coding, data)
	if coding == writers.Gzip {
		std, err := testtool.TryDecode(coding, data)
		if err != nil || !bytes.Equal(std, out) {
			t.Fatalf("compress/gzip: %d bytes, %v; gzip -d gave %d bytes", len(std), err, len(out))
		}
	}
	return out
}

func TestEncoderOutputDecodedByReferenceDecoders(t *testing.T) {
	t.Parallel()
	html := corpus.HTML(t)
	small := corpus.Prefix(t, html, 16<<10)
	for _, coding := range codings {
		for _, level := range sampleLevels(t, coding) {
			t.Run(fmt.Sprintf("%s/%d", coding, level), func(t *testing.T) {
				in := small
				if level == defaultLevel(t, coding) {
					in = html
				}
				// A Flush in the middle puts sync markers (empty stored
				// blocks, zstd block ends, brotli empty metadata blocks)
				// into the stream; reference decoders must take them.
				var out bytes.Buffer
				e := newEncoder(t, coding, level)
				e.Reset(&out)
				half := len(in) / 2
				if _, err := e.Write(in[:half]); err != nil {
					t.Fatal(err)
				}
				if err := e.Flush(); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Write(in[half:]); err != nil {
					t.Fatal(err)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				if got := independentDecode(t, coding, out.Bytes()); !bytes.Equal(got, in) {
					t.Fatalf("independent decoder: %d bytes, want %d", len(got), len(in))
				}
			})
		}
	}
}

// zstdWindow returns the window a zstd frame declares (RFC 8878 §3.1.1.1).
func zstdWindow(frame []byte) (uint64, error) {
	if len(frame) < 6 || binary.LittleEndian.Uint32(frame) != 0xFD2FB528 {
		return 0, errors.New("not a zstd frame")
	}
	fhd := frame[4]
	if fhd&0x20 == 0 { // not single segment: a window descriptor follows
		exp, mantissa := uint64(frame[5]>>3), uint64(frame[5]&7)
		base := uint64(1) << (10 + exp)
		return base + base/8*mantissa, nil
	}
	// Single segment: the window is the frame content size.
	pos := 5 + []int{0, 1, 2, 4}[fhd&3]
	n := []int{1, 2, 4, 8}[fhd>>6]
	if len(frame) < pos+n {
		return 0, errors.New("short frame header")
	}
	var fcs uint64
	for i := n - 1; i >= 0; i-- {
		fcs = fcs<<8 | uint64(frame[pos+i])
	}
	if n == 2 {
		fcs += 256
	}
	return fcs, nil
}

// brotliWindowBits returns the WBITS a brotli stream declares (RFC 7932 §9.1).
func brotliWindowBits(stream []byte) (int, error) {
	if len(stream) < 1 {
		return 0, errors.New("empty stream")
	}
	bits := uint(stream[0])
	if len(stream) > 1 {
		bits |= uint(stream[1]) << 8
	}
	if bits&1 == 0 {
		return 16, nil
	}
	if n := bits >> 1 & 7; n != 0 {
		return 17 + int(n), nil
	}
	switch m := bits >> 4 & 7; m {
	case 0:
		return 17, nil
	case 1:
		return 0, errors.New("large-window brotli, not RFC 7932")
	default:
		return 8 + int(m), nil
	}
}

// RFC 9659 caps the zstd window at 8 MB for HTTP and browsers refuse more;
// the encoders must also stay at the small windows the package documents,
// which bound the memory each in-flight response holds.
func TestEncodersDeclareBoundedWindows(t *testing.T) {
	t.Parallel()
	doc := corpus.JSON(t) // 620 KiB: larger than either window
	for _, level := range sampleLevels(t, writers.Zstd) {
		if !slices.Contains([]int{1, 3, 7, 11, 19, 22}, level) {
			continue
		}
		out := encode(t, writers.Zstd, level, doc)
		w, err := zstdWindow(out)
		if err != nil {
			t.Fatal(err)
		}
		if w > 128<<10 || w > writers.ZstdMaxWindow {
			t.Errorf("zstd %d declares a %d-byte window; want at most 128 KiB", level, w)
		}
		// zstd -d --memory refuses frames that need a larger window.
		if got := tool(t, "zstd", out, "-d", "-c", "-q", "--memory=128KB"); !bytes.Equal(got, doc) {
			t.Errorf("zstd %d: zstd -d --memory=128KB gave %d bytes, want %d", level, len(got), len(doc))
		}
	}
	for _, level := range []int{0, 4, 5, 9, 11} {
		in := doc
		if level > 9 || reduced() {
			in = corpus.JS(t) // q 10-11 take seconds on 620 KiB
		}
		wbits, err := brotliWindowBits(encode(t, writers.Brotli, level, in))
		if err != nil {
			t.Fatal(err)
		}
		if wbits != 18 {
			t.Errorf("br %d declares WBITS %d; want 18", level, wbits)
		}
	}
}

func TestDecoderReadsReferenceEncoderOutput(t *testing.T) {
	t.Parallel()
	html := corpus.HTML(t)
	small := corpus.Prefix(t, html, 16<<10)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "spec.html")
	if err := os.WriteFile(htmlFile, html, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		coding string
		in     []byte
		tool   string
		args   []string
	}{
		{"gzip -1", writers.Gzip, html, "gzip", []string{"-c", "-1"}},
		{"gzip -6", writers.Gzip, html, "gzip", []string{"-c", "-6"}},
		{"gzip -9", writers.Gzip, html, "gzip", []string{"-c", "-9"}},
		{"gzip -9 file with name", writers.Gzip, html, "gzip", []string{"-c", "-9", "-N", htmlFile}},
		{"zstd -1", writers.Zstd, html, "zstd", []string{"-c", "-q", "-1"}},
		{"zstd -3", writers.Zstd, html, "zstd", []string{"-c", "-q", "-3"}},
		{"zstd -19 (8 MB window)", writers.Zstd, small, "zstd", []string{"-c", "-q", "-19"}},
		{"zstd -3 file (single segment, content size)", writers.Zstd, html, "zstd", []string{"-c", "-q", "-3", htmlFile}},
		{"zstd --no-check", writers.Zstd, html, "zstd", []string{"-c", "-q", "--no-check"}},
		// RFC 9659: recipients must support 8 MB windows.
		{"zstd --long=23 (8 MB window)", writers.Zstd, html, "zstd", []string{"-c", "-q", "--long=23"}},
		{"brotli -q 0", writers.Brotli, html, "brotli", []string{"-c", "-q", "0"}},
		{"brotli -q 5", writers.Brotli, html, "brotli", []string{"-c", "-q", "5"}},
		{"brotli -q 11", writers.Brotli, small, "brotli", []string{"-c", "-q", "11"}},
		// RFC 7932 allows windows up to 16 MiB (lgwin 24).
		{"brotli -w 24", writers.Brotli, html, "brotli", []string{"-c", "-q", "5", "-w", "24"}},
		{"brotli -w 10", writers.Brotli, html, "brotli", []string{"-c", "-q", "5", "-w", "10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if args := tt.args; args[len(args)-1] == htmlFile {
				in = nil
			}
			enc := tool(t, tt.tool, in, tt.args...)
			if tt.name == "zstd --long=23 (8 MB window)" {
				if w, err := zstdWindow(enc); err != nil || w != 8<<20 {
					t.Fatalf("the tool declared window %d, %v; the test wants exactly 8 MiB", w, err)
				}
			}
			got, err := decode(t, tt.coding, enc)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, tt.in) {
				t.Fatalf("decoded %d bytes, want %d", len(got), len(tt.in))
			}
		})
	}
}

// gzip -d and zstd -d decode concatenated members/frames as one stream; a
// decoder that stopped after the first would silently truncate the body.
func TestDecoderReadsConcatenatedMembersLikeReferenceTools(t *testing.T) {
	a, b := []byte("first member\n"), []byte("second member\n")
	for _, tt := range []struct {
		coding, tool string
		args         []string
	}{
		{writers.Gzip, "gzip", []string{"-c"}},
		{writers.Zstd, "zstd", []string{"-c", "-q"}},
	} {
		t.Run(tt.coding, func(t *testing.T) {
			stream := append(tool(t, tt.tool, a, tt.args...), tool(t, tt.tool, b, tt.args...)...)
			want := testtool.DecodeCLI(t, tt.coding, stream)
			if !bytes.Equal(want, append(bytes.Clone(a), b...)) {
				t.Fatalf("%s -d gave %q", tt.tool, want)
			}
			got, err := decode(t, tt.coding, stream)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("decode = %q, %v; want %q", got, err, want)
			}
		})
	}
}

func TestDecoderReadsStandardLibraryOutput(t *testing.T) {
	html := corpus.HTML(t)
	for _, level := range []int{-2, 1, 6, 9} {
		t.Run(fmt.Sprintf("gzip/%d", level), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := gzip.NewWriterLevel(&buf, level)
			if err != nil {
				t.Fatal(err)
			}
			w.Name, w.Comment = "spec.html", "with optional header fields"
			w.Extra = []byte("ex")
			mustWriteClose(t, w, html)
			got, err := decode(t, writers.Gzip, buf.Bytes())
			if err != nil || !bytes.Equal(got, html) {
				t.Fatalf("decode = %d bytes, %v", len(got), err)
			}
		})
	}
}

func mustWriteClose(t *testing.T, w io.WriteCloser, data []byte) {
	t.Helper()
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
