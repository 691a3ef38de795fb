package writers_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// padded encodes plain with coding and n bytes of padding where it goes:
// in the header for gzip, after Close for zstd, between Flush and Close for
// br.
func padded(t *testing.T, coding string, plain []byte, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	e := newEncoder(t, coding, defaultLevel(t, coding))
	e.Reset(&out)
	if _, err := e.Write(plain); err != nil {
		t.Fatal(err)
	}
	if coding == writers.Brotli {
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
		out.Write(mustPadding(t, coding, n))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	switch coding {
	case writers.Zstd:
		out.Write(mustPadding(t, coding, n))
	case writers.Gzip:
		b := out.Bytes()
		p, err := writers.AppendGzipHeaderPadding(nil, b[:writers.GzipHeaderLen], n)
		if err != nil {
			t.Fatal(err)
		}
		return append(p, b[writers.GzipHeaderLen:]...)
	}
	return out.Bytes()
}

func mustPadding(t *testing.T, coding string, n int) []byte {
	t.Helper()
	p, err := writers.AppendPadding(nil, coding, n)
	if err != nil {
		t.Fatalf("AppendPadding(%s, %d): %v", coding, n, err)
	}
	if len(p) != n {
		t.Fatalf("AppendPadding(%s, %d) made %d bytes", coding, n, len(p))
	}
	return p
}

// paddingSizes are the lengths that take each of the shapes padding has:
// the shortest, the brotli lengths where the metadata header grows, the
// longest.
func paddingSizes(t *testing.T, coding string) []int {
	least, err := writers.MinPadding(coding)
	if err != nil {
		t.Fatal(err)
	}
	var ns []int
	for _, n := range []int{1, 2, 3, 4, 100, 256, 257, 258, 259, 260, 261, 4096, writers.MaxPadding} {
		if n >= least && (coding != writers.Gzip || n <= 1<<16) {
			ns = append(ns, n)
		}
	}
	return append(ns, least)
}

func TestPaddedStreamsDecodeToThePlainBytes(t *testing.T) {
	t.Parallel()
	plain := bytes.Repeat([]byte("padding hides a length, not a secret; "), 200)
	for _, coding := range []string{writers.Gzip, writers.Zstd, writers.Brotli} {
		for _, n := range paddingSizes(t, coding) {
			t.Run(fmt.Sprintf("%s/%d", coding, n), func(t *testing.T) {
				t.Parallel()
				body := padded(t, coding, plain, n)
				unpadded := padded(t, coding, plain, 0+mustMin(t, coding))
				if len(body)-len(unpadded) != n-mustMin(t, coding) {
					t.Errorf("%d bytes of padding made the body %d bytes longer than the shortest", n, len(body)-len(unpadded))
				}
				dec := newDecoder(t, coding)
				if err := dec.Reset(bytes.NewReader(body)); err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(dec)
				if err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("writers decoder: %d bytes, %v", len(got), err)
				}
				if got := testtool.DecodeCLI(t, coding, body); !bytes.Equal(got, plain) {
					t.Fatalf("reference program: %d bytes, want %d", len(got), len(plain))
				}
			})
		}
	}
}

func mustMin(t *testing.T, coding string) int {
	t.Helper()
	n, err := writers.MinPadding(coding)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAppendPaddingRefusesWhatItCannotMake(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		coding string
		n      int
	}{
		{writers.Gzip, 100}, {writers.Zstd, 7}, {writers.Brotli, 0},
		{writers.Zstd, writers.MaxPadding + 1}, {writers.Deflate, 100},
	} {
		dst := []byte("kept")
		got, err := writers.AppendPadding(dst, c.coding, c.n)
		if err == nil || !bytes.Equal(got, dst) {
			t.Errorf("AppendPadding(%s, %d) = %q, %v; want an error and dst unchanged", c.coding, c.n, got, err)
		}
	}
	header := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	for _, n := range []int{0, writers.MaxPadding + 1} {
		if _, err := writers.AppendGzipHeaderPadding(nil, header, n); err == nil {
			t.Errorf("AppendGzipHeaderPadding(%d): no error", n)
		}
	}
	named := append([]byte(nil), header...)
	named[3] = 0x08 // FNAME
	if _, err := writers.AppendGzipHeaderPadding(nil, named, 10); err == nil {
		t.Error("AppendGzipHeaderPadding padded a header with a name")
	}
	if _, err := writers.AppendPadding(nil, "compress", 100); !errors.Is(err, writers.ErrUnknownCoding) {
		t.Errorf("unknown coding: %v, want ErrUnknownCoding", err)
	}
}

// Deflate padding between a Flush and Close of a gzip and of a deflate
// stream, at every level, decodes to the plain bytes and adds exactly the
// bytes asked for, in Go's decoders and gzip's reference program (zlib has
// none).
func TestDeflatePaddingDecodesInsideGzipAndDeflateStreams(t *testing.T) {
	t.Parallel()
	plain := bytes.Repeat([]byte("padding hides a length, not a secret; "), 200)
	for _, coding := range []string{writers.Gzip, writers.Deflate} {
		for _, level := range []int{-3, -2, 1, 5, 9} {
			if writers.ValidateLevel(coding, level) != nil {
				continue
			}
			var ns []int
			for n := writers.MinDeflatePadding; n <= 30; n++ {
				ns = append(ns, n)
			}
			ns = append(ns, 4096+8, writers.MaxPadding)
			for _, n := range ns {
				var out bytes.Buffer
				e := newEncoder(t, coding, level)
				e.Reset(&out)
				if _, err := e.Write(plain); err != nil {
					t.Fatal(err)
				}
				if err := e.Flush(); err != nil {
					t.Fatal(err)
				}
				at := out.Len()
				pad, err := writers.AppendDeflatePadding(nil, n)
				if err != nil || len(pad) != n {
					t.Fatalf("AppendDeflatePadding(%d): %d bytes, %v", n, len(pad), err)
				}
				out.Write(pad)
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				b := out.Bytes()
				if got, err := testtool.TryDecode(coding, b); err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("%s level %d, %d bytes of padding after byte %d: Go read %d bytes, %v", coding, level, n, at, len(got), err)
				}
				if _, _, ok := testtool.DecodeCommand(coding); ok && (n <= 14 || n == writers.MaxPadding) {
					if got := testtool.DecodeCLI(t, coding, b); !bytes.Equal(got, plain) {
						t.Fatalf("%s level %d, %d bytes of padding: the reference program read %d bytes", coding, level, n, len(got))
					}
				}
			}
		}
	}
	for _, n := range []int{-1, 0, 1, 5, 8, writers.MaxPadding + 1} {
		if _, err := writers.AppendDeflatePadding(nil, n); err == nil {
			t.Errorf("AppendDeflatePadding(%d) made padding", n)
		}
	}
}
