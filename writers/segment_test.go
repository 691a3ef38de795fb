package writers_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// isolating are the codings whose encoders implement writers.Isolator.
var isolating = []string{writers.Zstd, writers.Gzip, writers.Deflate}

// encodeSegments encodes before, then secret as an isolated segment, then
// after, with e.
func encodeSegments(t *testing.T, e writers.Encoder, before, secret, after []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	e.Reset(&out)
	if _, err := e.Write(before); err != nil {
		t.Fatal(err)
	}
	if n, err := writers.WriteIsolated(e, secret); err != nil || n != len(secret) {
		t.Fatalf("WriteIsolated: %d, %v", n, err)
	}
	if _, err := e.Write(after); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out.Bytes())
}

// TestIsolatedSegmentSharesNoContext pins what makes a secret safe from
// BREACH: with the secret isolated, the encoding of a page that repeats
// the secret's text around it is the same whichever secret it holds, but
// for the secret's own bytes (stored as they are) and gzip's and zlib's
// checksum; its length is the same byte for byte. Without isolation the
// page that repeats its secret compresses smaller, which the check
// against the plain Write shows the page is built to reveal.
func TestIsolatedSegmentSharesNoContext(t *testing.T) {
	t.Parallel()
	html := corpus.Prefix(t, corpus.HTML(t), 8<<10)
	secret := []byte("3f9a0c7e5b1d2a4c6e8f0b1d3f5a7c9e")
	guess := []byte("8b2e41d07c9f3a65e0d4b8c1f7a2936d")
	// The page holds the right secret's text (the attacker's reflected
	// guess), before and after where the secret goes.
	before := append(append(bytes.Clone(html[:4<<10]), "q="...), secret...)
	after := append(append([]byte("q="), secret...), html[4<<10:]...)
	for _, coding := range isolating {
		for _, level := range sampleLevels(t, coding) {
			t.Run(fmt.Sprintf("%s/%d", coding, level), func(t *testing.T) {
				e := newEncoder(t, coding, level)
				right := encodeSegments(t, e, before, secret, after)
				wrong := encodeSegments(t, e, before, guess, after)
				if len(right) != len(wrong) {
					t.Fatalf("the page with the secret its text repeats is %d bytes, with another %d", len(right), len(wrong))
				}
				at := bytes.Index(right, secret)
				if at < 0 || !bytes.Equal(wrong[at:at+len(guess)], guess) {
					t.Fatalf("the secret is not stored as it is at the same place in both encodings")
				}
				trailer := map[string]int{writers.Gzip: 8, writers.Deflate: 4}[coding]
				n := len(right) - trailer
				if !bytes.Equal(right[:at], wrong[:at]) || !bytes.Equal(right[at+len(secret):n], wrong[at+len(guess):n]) {
					t.Fatalf("the bytes around the secret depend on it")
				}
				want := append(append(bytes.Clone(before), secret...), after...)
				if got, err := decode(t, coding, right); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("decoded %d bytes, %v; want %d", len(got), err, len(want))
				}
				if got := independentDecode(t, coding, right); !bytes.Equal(got, want) {
					t.Fatalf("independent decoder: %d bytes, want %d", len(got), len(want))
				}
				// The instrument: written plainly, the right secret
				// compresses better than the wrong one.
				plainRight := encode(t, coding, level, before, secret, after)
				plainWrong := encode(t, coding, level, before, guess, after)
				if level > 0 { // stateless and Huffman-only levels match nothing across writes
					if len(plainRight) >= len(plainWrong) {
						t.Errorf("written plainly, the right secret gives %d bytes, a wrong one %d: the page reveals nothing to isolate", len(plainRight), len(plainWrong))
					}
				}
			})
		}
	}
}

// TestIsolatedSegmentsDecodeAnywhere writes segments first, last, back to
// back, after a Flush and longer than one stored or raw block, and checks
// every decoder reads the stream whole: ours and the reference programs.
func TestIsolatedSegmentsDecodeAnywhere(t *testing.T) {
	t.Parallel()
	html := corpus.Prefix(t, corpus.HTML(t), 32<<10)
	long := bytes.Repeat([]byte("0123456789abcdef"), 9000) // 144000: over a raw block and a stored one
	type step struct {
		isolated bool
		flush    bool
		p        []byte
	}
	sequences := map[string][]step{
		"first":      {{isolated: true, p: []byte("secret")}, {p: html}},
		"last":       {{p: html}, {isolated: true, p: []byte("secret")}},
		"only":       {{isolated: true, p: []byte("s")}},
		"twice":      {{p: html[:100]}, {isolated: true, p: []byte("a")}, {isolated: true, p: []byte("b")}, {p: html[100:]}},
		"flushed":    {{p: html[:5000]}, {flush: true}, {isolated: true, p: []byte("secret")}, {flush: true}, {p: html[5000:]}},
		"long":       {{p: html[:300]}, {isolated: true, p: long}, {p: html[300:]}},
		"empty":      {{p: html[:300]}, {isolated: true, p: nil}, {p: html[300:]}},
		"size-256":   {{isolated: true, p: bytes.Repeat([]byte("x"), 256)}, {p: html[:10]}},
		"size-65791": {{isolated: true, p: bytes.Repeat([]byte("y"), 65536+255)}, {p: html[:10]}},
		"size-65792": {{isolated: true, p: bytes.Repeat([]byte("z"), 65536+256)}, {p: html[:10]}},
	}
	for _, coding := range isolating {
		for _, level := range sampleLevels(t, coding) {
			e := newEncoder(t, coding, level)
			for name, seq := range sequences {
				var out bytes.Buffer
				var want []byte
				e.Reset(&out)
				for _, s := range seq {
					var err error
					switch {
					case s.flush:
						err = e.Flush()
					case s.isolated:
						_, err = writers.WriteIsolated(e, s.p)
					default:
						_, err = e.Write(s.p)
					}
					if err != nil {
						t.Fatalf("%s/%d/%s: %v", coding, level, name, err)
					}
					want = append(want, s.p...)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				if got, err := decode(t, coding, out.Bytes()); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s/%d/%s: decoded %d bytes, %v; want %d", coding, level, name, len(got), err, len(want))
				}
				if got := independentDecode(t, coding, out.Bytes()); !bytes.Equal(got, want) {
					t.Fatalf("%s/%d/%s: independent decoder: %d bytes, want %d", coding, level, name, len(got), len(want))
				}
			}
		}
	}
}

// TestIsolatedSegmentUnsupportedByBrotli: a br encoder refuses a segment
// and writes nothing, so that a caller can tell and choose.
func TestIsolatedSegmentUnsupportedByBrotli(t *testing.T) {
	t.Parallel()
	e := newEncoder(t, writers.Brotli, 5)
	var out bytes.Buffer
	e.Reset(&out)
	if n, err := writers.WriteIsolated(e, []byte("secret")); n != 0 || !errors.Is(err, writers.ErrIsolateUnsupported) {
		t.Fatalf("WriteIsolated on br: %d, %v", n, err)
	}
	if out.Len() != 0 {
		t.Fatalf("br wrote %d bytes for a refused segment", out.Len())
	}
	for _, c := range writers.Codings() {
		if got, want := writers.CanIsolate(c), c != writers.Brotli; got != want {
			t.Errorf("CanIsolate(%s) = %v", c, got)
		}
	}
}

// TestGzipAndZlibHeadersUnchanged: without a segment, the gzip and zlib
// encoders write the same bytes as klauspost/compress's writers they
// replaced, which the fleet's canonical check and the padding of a gzip
// header expect.
func TestGzipAndZlibHeadersUnchanged(t *testing.T) {
	t.Parallel()
	want := map[string]map[int]string{
		writers.Gzip:    {-3: "1f8b08000000000000ff", 1: "1f8b08000000000004ff", 5: "1f8b08000000000000ff", 9: "1f8b08000000000002ff"},
		writers.Deflate: {-3: "7801", -2: "7801", 1: "7801", 5: "785e", 6: "789c", 9: "78da"},
	}
	for coding, levels := range want {
		for level, hdr := range levels {
			out := encode(t, coding, level, []byte("hello, hello"))
			if got := fmt.Sprintf("%x", out[:len(hdr)/2]); got != hdr {
				t.Errorf("%s %d: header %s, want %s", coding, level, got, hdr)
			}
		}
	}
}

// FuzzIsolatedSegments runs an arbitrary sequence of writes, isolated
// writes and flushes through each isolating encoder and checks the stream
// decodes to what was written.
func FuzzIsolatedSegments(f *testing.F) {
	f.Add([]byte("hello, secret, hello"), uint8(0), uint8(1), []byte{0, 5, 1, 6, 2, 0, 0, 20})
	f.Add([]byte{}, uint8(1), uint8(0), []byte{1, 0})
	f.Add(bytes.Repeat([]byte("ab"), 500), uint8(2), uint8(3), []byte{1, 200, 1, 200, 0, 255, 2, 0, 1, 1})
	var mu sync.Mutex
	encoders := map[string]writers.Encoder{}
	f.Fuzz(func(t *testing.T, data []byte, codingIdx, levelIdx uint8, ops []byte) {
		coding := isolating[int(codingIdx)%len(isolating)]
		levels := sampleLevels(t, coding)
		level := levels[int(levelIdx)%len(levels)]
		k := fmt.Sprintf("%s/%d", coding, level)
		mu.Lock()
		e, ok := encoders[k]
		if !ok {
			e = newEncoder(t, coding, level)
			encoders[k] = e
		}
		mu.Unlock()
		var out bytes.Buffer
		var want []byte
		e.Reset(&out)
		for i := 0; i+1 < len(ops); i += 2 {
			n := min(int(ops[i+1]), len(data))
			p := data[:n]
			var err error
			switch ops[i] % 3 {
			case 0:
				_, err = e.Write(p)
			case 1:
				_, err = writers.WriteIsolated(e, p)
			case 2:
				err, p = e.Flush(), nil
			}
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p...)
			data = data[n:]
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := decode(t, coding, out.Bytes())
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: decoded %d bytes, %v; want %d", k, len(got), err, len(want))
		}
	})
}
