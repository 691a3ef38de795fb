package writers_test

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	kflate "github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

func TestDeflateDecoderAcceptsZlibAndRawDeflate(t *testing.T) {
	html := corpus.Prefix(t, corpus.HTML(t), 40<<10)
	zlibAt := func(level int) func([]byte) []byte {
		return func(in []byte) []byte {
			var buf bytes.Buffer
			w, err := zlib.NewWriterLevel(&buf, level)
			if err != nil {
				t.Fatal(err)
			}
			mustWriteClose(t, w, in)
			return buf.Bytes()
		}
	}
	rawAt := func(level int) func([]byte) []byte {
		return func(in []byte) []byte {
			var buf bytes.Buffer
			w, err := flate.NewWriter(&buf, level)
			if err != nil {
				t.Fatal(err)
			}
			mustWriteClose(t, w, in)
			return buf.Bytes()
		}
	}
	rawStateless := func(in []byte) []byte {
		var buf bytes.Buffer
		mustWriteClose(t, kflate.NewStatelessWriter(&buf), in)
		return buf.Bytes()
	}
	tests := []struct {
		name string
		enc  func([]byte) []byte
	}{
		{"zlib huffman-only", zlibAt(zlib.HuffmanOnly)},
		{"zlib stored", zlibAt(zlib.NoCompression)},
		{"zlib 1", zlibAt(1)},
		{"zlib 6", zlibAt(6)},
		{"zlib 9", zlibAt(9)},
		{"raw huffman-only", rawAt(flate.HuffmanOnly)},
		{"raw stored", rawAt(flate.NoCompression)},
		{"raw 1", rawAt(1)},
		{"raw 6", rawAt(6)},
		{"raw 9", rawAt(9)},
		{"raw stateless", rawStateless},
	}
	d := newDecoder(t, writers.Deflate)
	for _, tt := range tests {
		for _, in := range [][]byte{html, {}, []byte("x")} {
			t.Run(fmt.Sprintf("%s/%d bytes", tt.name, len(in)), func(t *testing.T) {
				// One decoder for all: switching between zlib and raw
				// streams is what a pooled decoder does.
				if err := d.Reset(bytes.NewReader(tt.enc(in))); err != nil {
					t.Fatalf("Reset: %v", err)
				}
				got, err := io.ReadAll(d)
				if err != nil || !bytes.Equal(got, in) {
					t.Fatalf("decoded %d bytes, %v; want %d", len(got), err, len(in))
				}
			})
		}
	}
}

// zstdFrame builds a frame with the given window descriptor byte holding
// content in one raw block, and no checksum.
func zstdFrame(windowDescriptor byte, content []byte) []byte {
	f := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, windowDescriptor}
	h := 1 | len(content)<<3 // last block, raw, size
	f = append(f, byte(h), byte(h>>8), byte(h>>16))
	return append(f, content...)
}

// zstdSingleSegmentFrame declares a 4-byte frame content size, which is the
// window of a single-segment frame.
func zstdSingleSegmentFrame(contentSize uint32, content []byte) []byte {
	f := []byte{0x28, 0xB5, 0x2F, 0xFD, 0xA0,
		byte(contentSize), byte(contentSize >> 8), byte(contentSize >> 16), byte(contentSize >> 24)}
	h := 1 | len(content)<<3
	f = append(f, byte(h), byte(h>>8), byte(h>>16))
	return append(f, content...)
}

// repetitive returns n bytes that compress well only with a long window:
// 1 MiB of noise repeated.
func repetitive(n int) []byte {
	block := make([]byte, 1<<20)
	r := rand.NewChaCha8([32]byte{2})
	_, _ = r.Read(block)
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, block[:min(len(block), n-len(out))]...)
	}
	return out
}

func TestZstdDecoderRefusesWindowsOver8MB(t *testing.T) {
	t.Parallel()
	hello := []byte("hello, window\n")
	refuse := func(t *testing.T, frame []byte) {
		t.Helper()
		d := newDecoder(t, writers.Zstd)
		var got []byte
		err := d.Reset(bytes.NewReader(frame))
		if err == nil {
			got, err = io.ReadAll(d)
		}
		if !errors.Is(err, zstd.ErrWindowSizeExceeded) && !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			t.Fatalf("err = %v; want the window refused", err)
		}
		if len(got) != 0 {
			t.Fatalf("decoded %d bytes before refusing; want none", len(got))
		}
	}
	accept := func(t *testing.T, frame, want []byte) {
		t.Helper()
		got, err := decode(t, writers.Zstd, frame)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("decode = %d bytes, %v; want %d bytes", len(got), err, len(want))
		}
	}
	crafted := []struct {
		name   string
		frame  []byte
		window uint64
		ok     bool
	}{
		{"1 KiB", zstdFrame(0x00, hello), 1 << 10, true},
		{"128 KiB", zstdFrame(0x38, hello), 128 << 10, true},
		{"8 MiB exactly", zstdFrame(0x68, hello), 8 << 20, true},
		{"9 MiB", zstdFrame(0x69, hello), 9 << 20, false},
		{"16 MiB", zstdFrame(0x70, hello), 16 << 20, false},
		{"128 MiB", zstdFrame(0x88, hello), 128 << 20, false},
		{"largest descriptor", zstdFrame(0xFF, hello), 15 << 38, false},
		{"single segment, 14 bytes", zstdSingleSegmentFrame(uint32(len(hello)), hello), uint64(len(hello)), true},
		// A single-segment frame's window is its content size.
		{"single segment, 9 MiB content size", zstdSingleSegmentFrame(9<<20, hello), 9 << 20, false},
	}
	for _, tt := range crafted {
		t.Run("crafted/"+tt.name, func(t *testing.T) {
			if w, err := zstdWindow(tt.frame); err != nil || w != tt.window {
				t.Fatalf("crafted frame declares %d, %v; want %d", w, err, tt.window)
			}
			if tt.ok {
				accept(t, tt.frame, hello)
			} else {
				refuse(t, tt.frame)
			}
			if tt.window <= 128<<20 && tt.name != "single segment, 9 MiB content size" {
				// The reference decoder takes every frame we refuse, so the
				// refusal is about the window, not a malformed frame.
				if got := testtool.DecodeCLI(t, writers.Zstd, tt.frame); !bytes.Equal(got, hello) {
					t.Fatalf("zstd -d decodes the crafted frame to %q", got)
				}
			}
		})
	}

	// The same from the reference encoder, as a hostile or careless client
	// would send it: --long asks for a window of 2^N bytes.
	small := corpus.Prefix(t, corpus.HTML(t), 16<<10)
	for _, long := range []string{"--long=24", "--long=27"} {
		t.Run("zstd "+long+" from a pipe", func(t *testing.T) {
			refuse(t, tool(t, "zstd", small, "-c", "-q", long))
		})
	}
	big := repetitive(9 << 20)
	file := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(file, big, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("zstd --long=27 of a 9 MiB file", func(t *testing.T) {
		frame := tool(t, "zstd", nil, "-c", "-q", "-1", "--long=27", file)
		if w, _ := zstdWindow(frame); w <= writers.ZstdMaxWindow {
			t.Fatalf("the tool declared a %d-byte window; the test needs more than 8 MB", w)
		}
		refuse(t, frame)
	})
	// The cap is on the window, not on the content: a 9 MiB body with a
	// small window must decode (size limits belong to the caller).
	t.Run("zstd -1 of a 9 MiB file", func(t *testing.T) {
		frame := tool(t, "zstd", nil, "-c", "-q", "-1", file)
		if w, _ := zstdWindow(frame); w > writers.ZstdMaxWindow {
			t.Fatalf("the tool declared a %d-byte window; the test needs at most 8 MB", w)
		}
		accept(t, frame, big)
	})
}

// validStreams returns, per coding, a stream of 16 KiB of HTML encoded at the
// default level.
func validStreams(t *testing.T) (plain []byte, streams map[string][]byte) {
	t.Helper()
	plain = corpus.Prefix(t, corpus.HTML(t), 16<<10)
	streams = map[string][]byte{}
	for _, coding := range codings {
		streams[coding] = encode(t, coding, defaultLevel(t, coding), plain)
	}
	return plain, streams
}

// decodeCapped decodes data, refusing to produce more than limit bytes, and
// turns a panic into a test failure naming the input.
func decodeCapped(t *testing.T, d writers.Decoder, data []byte, limit int64, what string) (out []byte, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v", what, p)
		}
	}()
	if err := d.Reset(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	out, err = io.ReadAll(io.LimitReader(d, limit))
	if err == nil && int64(len(out)) == limit {
		err = errors.New("output over the cap")
	}
	return out, err
}

func TestTruncatedStreamsGiveErrors(t *testing.T) {
	t.Parallel()
	plain, streams := validStreams(t)
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			stream := streams[coding]
			d := newDecoder(t, coding)
			for n := 0; n < len(stream); n++ {
				if n > 64 && n < len(stream)-64 && n%17 != 0 {
					continue // every length near the ends, a sample between
				}
				what := fmt.Sprintf("first %d of %d bytes", n, len(stream))
				out, err := decodeCapped(t, d, stream[:n], 2*int64(len(plain)), what)
				if err == nil {
					t.Fatalf("%s: decoded %d bytes with no error", what, len(out))
				}
				if err == io.EOF {
					t.Fatalf("%s: bare io.EOF; a truncated body must not look like a clean end", what)
				}
				if !bytes.HasPrefix(plain, out) {
					t.Fatalf("%s: decoded bytes that are not a prefix of the input", what)
				}
			}
			// The decoder that saw all those errors still works.
			if out, err := decodeCapped(t, d, stream, 2*int64(len(plain)), "whole stream"); err != nil || !bytes.Equal(out, plain) {
				t.Fatalf("after the errors: %d bytes, %v", len(out), err)
			}
		})
	}
}

// gzip (CRC-32 and length), zlib (Adler-32) and zstd (XXH64, which our
// encoder always writes) detect corruption. A flipped bit must give an error
// or, where it lands in a field that does not shape the content, exactly the
// original bytes: never other bytes and no error. br has no checksum, so it
// is only held to no panics and bounded output.
func TestBitFlippedStreamsGiveErrorsNotPanics(t *testing.T) {
	t.Parallel()
	plain, streams := validStreams(t)
	stride := 5
	if reduced() {
		stride = 29
	}
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			stream := streams[coding]
			d := newDecoder(t, coding)
			r := rand.New(rand.NewPCG(3, uint64(len(coding))))
			var flips, errs, silent int
			for pos := range stream {
				bitsAt := []int{r.IntN(8)}
				if pos < 32 || pos >= len(stream)-8 {
					bitsAt = []int{0, 1, 2, 3, 4, 5, 6, 7} // headers and trailers: every bit
				} else if pos%stride != 0 {
					continue
				}
				for _, bit := range bitsAt {
					bad := bytes.Clone(stream)
					bad[pos] ^= 1 << bit
					flips++
					what := fmt.Sprintf("bit %d of byte %d/%d flipped", bit, pos, len(stream))
					out, err := decodeCapped(t, d, bad, 4*int64(len(plain)), what)
					switch {
					case err != nil:
						errs++
					case bytes.Equal(out, plain):
						silent++
					case coding != writers.Brotli:
						t.Fatalf("%s: decoded %d different bytes with no error", what, len(out))
					}
				}
			}
			t.Logf("%d flips: %d errors, %d harmless, %d undetected", flips, errs, silent, flips-errs-silent)
			// br can only notice corruption that breaks its syntax.
			want := flips * 9 / 10
			if coding == writers.Brotli {
				want = flips / 4
			}
			if errs < want {
				t.Errorf("only %d of %d flips detected; want at least %d", errs, flips, want)
			}
		})
	}
}

func TestDecoderResetNilDetaches(t *testing.T) {
	plain, streams := validStreams(t)
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			d := newDecoder(t, coding)
			var buf [64]byte
			if n, err := d.Read(buf[:]); n != 0 || !errors.Is(err, writers.ErrDetached) {
				t.Fatalf("new decoder: Read = %d, %v; want 0, ErrDetached", n, err)
			}
			if err := d.Reset(bytes.NewReader(streams[coding])); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(d, buf[:]); err != nil {
				t.Fatal(err)
			}
			if err := d.Reset(nil); err != nil {
				t.Fatalf("Reset(nil) = %v", err)
			}
			for range 2 {
				if n, err := d.Read(buf[:]); n != 0 || !errors.Is(err, writers.ErrDetached) {
					t.Fatalf("after Reset(nil): Read = %d, %v; want 0, ErrDetached", n, err)
				}
			}
			if err := d.Reset(nil); err != nil {
				t.Fatalf("second Reset(nil) = %v", err)
			}
			if err := d.Reset(bytes.NewReader(streams[coding])); err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(d); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("Reset after detaching: %d bytes, %v", len(got), err)
			}
		})
	}
}

// A pooled decoder must not keep the last request body reachable: a body
// can be large, and its connection's buffers hang off it.
func TestDecoderResetNilReleasesSource(t *testing.T) {
	_, streams := validStreams(t)
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			d := newDecoder(t, coding)
			released := make(chan struct{})
			attach(t, d, streams[coding], released)
			if err := d.Reset(nil); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				runtime.GC()
				select {
				case <-released:
					runtime.KeepAlive(d)
					return
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the source is still reachable after Reset(nil)")
				}
			}
		})
	}
}

// attach points d at a fresh reader over data, reads a little, and arranges
// for released to close once that reader is garbage.
//
//go:noinline
func attach(t *testing.T, d writers.Decoder, data []byte, released chan struct{}) {
	src := &bytes.Reader{}
	src.Reset(data)
	runtime.AddCleanup(src, func(ch chan struct{}) { close(ch) }, released)
	if err := d.Reset(src); err != nil {
		t.Fatal(err)
	}
	var buf [100]byte
	if _, err := io.ReadFull(d, buf[:]); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyInputIsAnError(t *testing.T) {
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			out, err := decode(t, coding, nil)
			if err == nil || err == io.EOF {
				t.Fatalf("decode(empty) = %q, %v; want an error other than io.EOF: no stream is not an empty stream", out, err)
			}
		})
	}
}

// gzip and deflate read their header in Reset. A header cut short must be
// reported as io.ErrUnexpectedEOF there, so callers can tell a truncated
// body (400) from a clean end.
func TestTruncatedHeaderIsUnexpectedEOF(t *testing.T) {
	_, streams := validStreams(t)
	for coding, headerLen := range map[string]int{writers.Gzip: 10, writers.Deflate: 2} {
		d := newDecoder(t, coding)
		for n := range headerLen {
			err := d.Reset(bytes.NewReader(streams[coding][:n]))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: Reset on %d header bytes = %v; want io.ErrUnexpectedEOF", coding, n, err)
			}
		}
	}
}

// TestTrailingDataIsAnError appends bytes after a complete stream: every
// coding must refuse them rather than end cleanly with part of the body
// unread. deflate covers both the zlib-wrapped and the raw form.
func TestTrailingDataIsAnError(t *testing.T) {
	plain, streams := validStreams(t)
	var raw bytes.Buffer
	w, err := flate.NewWriter(&raw, 6)
	if err != nil {
		t.Fatal(err)
	}
	mustWriteClose(t, w, plain)
	cases := []struct {
		name   string
		coding string
		stream []byte
	}{
		{"gzip", writers.Gzip, streams[writers.Gzip]},
		{"deflate zlib", writers.Deflate, streams[writers.Deflate]},
		{"deflate raw", writers.Deflate, raw.Bytes()},
		{"zstd", writers.Zstd, streams[writers.Zstd]},
		{"br", writers.Brotli, streams[writers.Brotli]},
	}
	for _, tc := range cases {
		for _, trailer := range []string{"x", "garbage after the end", "\x00\x00\x00\x00"} {
			t.Run(tc.name+"/"+fmt.Sprintf("%q", trailer), func(t *testing.T) {
				d := newDecoder(t, tc.coding)
				out, err := decodeWith(d, append(bytes.Clone(tc.stream), trailer...))
				if err == nil {
					t.Fatalf("decoded %d bytes and ended cleanly; want an error for the trailing bytes", len(out))
				}
				// The same decoder still decodes a clean stream.
				if out, err := decodeWith(d, tc.stream); err != nil || !bytes.Equal(out, plain) {
					t.Fatalf("after the refusal, a clean stream: %d bytes, %v", len(out), err)
				}
			})
		}
	}
}

// TestDecoderWindowReportsTheLargestDeclared checks Window against streams
// whose windows are known: every brotli lgwin, zstd frames of several
// windows one after another (the largest may come last, after a skippable
// frame), single-segment frames sized by their content. Window keeps the
// largest across Reset, since the codecs keep their buffers.
func TestDecoderWindowReportsTheLargestDeclared(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 4<<10)
	brotliAt := func(lgwin int) []byte {
		var buf bytes.Buffer
		mustWriteClose(t, brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 5, LGWin: lgwin}), plain)
		return buf.Bytes()
	}
	zstdAt := func(window int, single bool) []byte {
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(single))
		if err != nil {
			t.Fatal(err)
		}
		mustWriteClose(t, w, plain)
		return buf.Bytes()
	}
	skippable := []byte{0x5e, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	type stream struct {
		data   []byte
		copies int   // of plain in the output; 0 means 1
		window int64 // the largest so far
	}
	// declared reads a frame's Window_Size with the codec's own parser.
	declared := func(frame []byte) int64 {
		var h zstd.Header
		if err := h.Decode(frame); err != nil {
			t.Fatal(err)
		}
		if h.WindowSize == 0 {
			return max(int64(h.FrameContentSize), 1<<10)
		}
		return int64(h.WindowSize)
	}
	// rawFrame is a frame with the given Window_Descriptor holding plain in
	// one last raw block: encoders shrink the window to small inputs.
	rawFrame := func(wd byte) []byte {
		frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, wd}
		v := 1 | uint32(len(plain))<<3
		frame = append(frame, byte(v), byte(v>>8), byte(v>>16))
		return append(frame, plain...)
	}
	small, mid, large := zstdAt(1<<10, false), rawFrame(0x48), rawFrame(0x68) // 1 KiB, 512 KiB, 8 MiB
	large = append(large, zstdAt(1<<23, false)...)
	single := zstdAt(1<<20, true)
	t.Logf("zstd windows: %d, %d, %d; single segment %d", declared(small), declared(mid), declared(large), declared(single))
	if declared(small) >= declared(large) {
		t.Fatal("the encoder declared no larger window for the larger setting")
	}
	cases := []struct {
		name    string
		coding  string
		streams []stream
	}{
		{"gzip", writers.Gzip, []stream{{encode(t, writers.Gzip, 9, plain), 0, 32 << 10}}},
		{"deflate", writers.Deflate, []stream{{encode(t, writers.Deflate, 9, plain), 0, 32 << 10}}},
		{"zstd single segment", writers.Zstd, []stream{{single, 0, declared(single)}}},
		{"zstd frames, the largest last", writers.Zstd, []stream{
			{slices.Concat(small, skippable, mid, skippable, large), 4, declared(large)},
			{small, 0, declared(large)}, // kept across Reset
		}},
		{"zstd windows, growing", writers.Zstd, []stream{
			{small, 0, declared(small)},
			{mid, 0, max(declared(small), declared(mid))},
			{slices.Concat(skippable, large), 2, declared(large)},
		}},
	}
	var grow []stream
	for lgwin := 10; lgwin <= 24; lgwin++ {
		grow = append(grow, stream{brotliAt(lgwin), 0, 1<<lgwin - 16})
	}
	cases = append(cases, struct {
		name    string
		coding  string
		streams []stream
	}{"br, every lgwin", writers.Brotli, grow})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDecoder(t, tc.coding)
			for i, s := range tc.streams {
				out, err := decodeWith(d, s.data)
				if err != nil || !bytes.Equal(out, bytes.Repeat(plain, max(s.copies, 1))) {
					t.Fatalf("stream %d: %d bytes, %v", i, len(out), err)
				}
				if got := d.Window(); got != s.window {
					t.Errorf("stream %d: Window() = %d, want %d", i, got, s.window)
				}
			}
		})
	}
}

func TestBrotliWindow(t *testing.T) {
	cases := []struct {
		first byte
		want  int64
	}{
		{0x00, 1<<16 - 16},
		{0x01, 1<<17 - 16}, // 1, then 000, then 000
		{0x0b, 1<<22 - 16}, // 1, then 101
		{0xcf, 1<<24 - 16}, // 1, then 111
		{0x21, 1<<10 - 16}, // 1, 000, then 010
		{0x71, 1<<15 - 16}, // 1, 000, then 111
		{0x11, 1<<24 - 16}, // 1, 000, then 001: reserved
	}
	for _, tc := range cases {
		if got := writers.BrotliWindow(tc.first); got != tc.want {
			t.Errorf("BrotliWindow(%#02x) = %d, want %d", tc.first, got, tc.want)
		}
	}
}
