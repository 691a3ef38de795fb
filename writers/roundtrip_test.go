package writers_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// smallInputs are bodies every level must round-trip: the edge sizes, text,
// and bytes that do not compress (so stored/raw blocks are exercised).
func smallInputs(tb testing.TB) map[string][]byte {
	tb.Helper()
	noise := make([]byte, 5000)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(noise)
	return map[string][]byte{
		"empty":     {},
		"one byte":  {'x'},
		"short":     []byte("Hello, Gophers! Hello, Gophers! Hello, Gophers!\n"),
		"html 4KiB": corpus.Prefix(tb, corpus.HTML(tb), 4<<10),
		"random":    noise,
		"zeros":     make([]byte, 70000), // longer than one zstd/deflate block
	}
}

func TestRoundTripEveryLevelSmallInputs(t *testing.T) {
	t.Parallel()
	inputs := smallInputs(t)
	for _, coding := range codings {
		for _, level := range sampleLevels(t, coding) {
			t.Run(fmt.Sprintf("%s/%d", coding, level), func(t *testing.T) {
				e, d := newEncoder(t, coding, level), newDecoder(t, coding)
				for name, in := range inputs {
					if reduced() && coding == writers.Brotli && level >= 10 && len(in) > 100 {
						continue
					}
					enc := encodeWith(t, e, chunked(in)...)
					got, err := decodeWith(d, enc)
					if err != nil {
						t.Fatalf("%s: decode: %v", name, err)
					}
					if !bytes.Equal(got, in) {
						t.Fatalf("%s: round trip changed the data: got %d bytes, want %d", name, len(got), len(in))
					}
				}
			})
		}
	}
}

// largeDocLevels is a representative subset for the 290 KiB document: the
// extremes, the default, and each zstd speed. br 10 and 11 take seconds on
// it and are covered by the small inputs.
var largeDocLevels = map[string][]int{
	writers.Gzip:    {-3, -2, 1, 5, 6, 9},
	writers.Deflate: {-3, 1, 5, 9},
	writers.Zstd:    {1, 3, 7, 11, 22},
	writers.Brotli:  {0, 4, 5, 6, 9},
}

func TestRoundTripLargeDocument(t *testing.T) {
	t.Parallel()
	docs := corpus.All(t)
	for _, coding := range codings {
		levels := largeDocLevels[coding]
		if reduced() {
			docs = docs[:1] // the 290 KiB HTML
			levels = []int{defaultLevel(t, coding)}
		}
		for _, level := range levels {
			t.Run(fmt.Sprintf("%s/%d", coding, level), func(t *testing.T) {
				e, d := newEncoder(t, coding, level), newDecoder(t, coding)
				for _, doc := range docs {
					enc := encodeWith(t, e, chunked(doc.Data)...)
					got, err := decodeWith(d, enc)
					if err != nil {
						t.Fatalf("%s: decode: %v", doc.Name, err)
					}
					if !bytes.Equal(got, doc.Data) {
						t.Fatalf("%s: round trip changed the data", doc.Name)
					}
					// Any level that expands real text is broken, not slow.
					if len(enc) >= len(doc.Data)/2 && level != -2 {
						t.Errorf("%s: %d -> %d bytes; real text should at least halve", doc.Name, len(doc.Data), len(enc))
					}
				}
			})
		}
	}
}

// decodePrefix decodes what an encoder has written so far, as a client
// would while the response is still streaming.
func decodePrefix(t *testing.T, coding string, written []byte, n int) []byte {
	t.Helper()
	d := newDecoder(t, coding)
	// A copy, so later writes by the encoder cannot change what we decode.
	if err := d.Reset(bytes.NewReader(bytes.Clone(written))); err != nil {
		t.Fatalf("Reset on the flushed prefix: %v", err)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(d, got); err != nil {
		t.Fatalf("decoding the %d bytes written before Flush: %v", n, err)
	}
	// Nothing beyond what was written may come out, and the stream is not
	// over: the decoder must not report a clean end.
	var extra [1]byte
	if k, err := d.Read(extra[:]); k != 0 || err == nil || err == io.EOF {
		t.Fatalf("after the flushed data: Read = %d, %v; want 0 and a truncation error", k, err)
	}
	return got
}

func TestFlushProducesDecodablePrefix(t *testing.T) {
	t.Parallel()
	html := corpus.HTML(t)
	parts := [][]byte{
		corpus.Prefix(t, html, 10),     // smaller than any block
		html[10 : 20<<10],              // spans blocks
		[]byte("data: event 3\n\n"),    // an SSE-sized write
		html[20<<10 : 200<<10],         // larger than the zstd window
		[]byte(strings.Repeat("z", 1)), // one byte
	}
	for _, coding := range codings {
		levels := []int{defaultLevel(t, coding)}
		r, _ := writers.Levels(coding)
		levels = append(levels, r.Min, r.Max)
		for _, level := range levels {
			if coding == writers.Brotli && level > 9 {
				continue // seconds per run; the small-input tests cover it
			}
			t.Run(fmt.Sprintf("%s/%d", coding, level), func(t *testing.T) {
				var out bytes.Buffer
				e := newEncoder(t, coding, level)
				e.Reset(&out)
				var want []byte
				for i, p := range parts {
					if _, err := e.Write(p); err != nil {
						t.Fatal(err)
					}
					if err := e.Flush(); err != nil {
						t.Fatalf("Flush: %v", err)
					}
					want = append(want, p...)
					if got := decodePrefix(t, coding, out.Bytes(), len(want)); !bytes.Equal(got, want) {
						t.Fatalf("after part %d: the flushed prefix decodes to different bytes", i)
					}
				}
				before := out.Len()
				if err := e.Flush(); err != nil {
					t.Fatalf("second Flush: %v", err)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				if out.Len() == before && coding != writers.Deflate {
					t.Errorf("Close wrote nothing; the stream needs its end marker")
				}
				got, err := decode(t, coding, out.Bytes())
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("whole stream: %d bytes, %v; want %d bytes", len(got), err, len(want))
				}
			})
		}
	}
}

func TestEmptyStreamIsDecodable(t *testing.T) {
	for _, coding := range codings {
		for _, flushFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/flush=%v", coding, flushFirst), func(t *testing.T) {
				var out bytes.Buffer
				e := newEncoder(t, coding, defaultLevel(t, coding))
				e.Reset(&out)
				if flushFirst {
					if err := e.Flush(); err != nil {
						t.Fatalf("Flush: %v", err)
					}
				}
				if err := e.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if out.Len() == 0 {
					// A Content-Encoding header over an empty body is a
					// corrupt response: the encoder must emit a frame.
					t.Fatal("Close on an empty stream wrote nothing")
				}
				got, err := decode(t, coding, out.Bytes())
				if err != nil || len(got) != 0 {
					t.Fatalf("decode = %q, %v; want empty, nil", got, err)
				}
				if name, _, ok := testtool.DecodeCommand(coding); ok {
					if got := testtool.DecodeCLI(t, coding, out.Bytes()); len(got) != 0 {
						t.Fatalf("%s decodes the empty stream to %q", name, got)
					}
				}
			})
		}
	}
}

// An encoder abandoned mid-stream (a client that went away) and Reset onto
// a new destination must start a clean stream: no bytes, no dictionary, no
// checksum state from the old one.
func TestResetMidStreamStartsCleanStream(t *testing.T) {
	html := corpus.HTML(t)
	first, second := html[:50<<10], html[100<<10:116<<10]
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			e := newEncoder(t, coding, defaultLevel(t, coding))
			var abandoned, out bytes.Buffer
			e.Reset(&abandoned)
			if _, err := e.Write(first); err != nil {
				t.Fatal(err)
			}
			e.Reset(&out)
			if _, err := e.Write(second); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := decode(t, coding, out.Bytes())
			if err != nil || !bytes.Equal(got, second) {
				t.Fatalf("decode = %d bytes, %v; want exactly the %d bytes written after Reset", len(got), err, len(second))
			}
			if want := encode(t, coding, defaultLevel(t, coding), second); !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output after Reset differs from a fresh encoder's (%d vs %d bytes)", out.Len(), len(want))
			}
		})
	}
}

func TestEncoderIsReusableAfterClose(t *testing.T) {
	t.Parallel()
	docs := corpus.All(t)
	if reduced() {
		docs = []corpus.Doc{{Name: "js", Data: corpus.JS(t)}}
	}
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			e := newEncoder(t, coding, defaultLevel(t, coding))
			d := newDecoder(t, coding)
			var out bytes.Buffer
			for round := range 3 {
				for _, doc := range docs {
					out.Reset()
					e.Reset(&out)
					if _, err := e.Write(doc.Data); err != nil {
						t.Fatal(err)
					}
					if err := e.Close(); err != nil {
						t.Fatal(err)
					}
					if err := d.Reset(&out); err != nil {
						t.Fatalf("round %d %s: Reset: %v", round, doc.Name, err)
					}
					got, err := io.ReadAll(d)
					if err != nil || !bytes.Equal(got, doc.Data) {
						t.Fatalf("round %d %s: %d bytes, %v", round, doc.Name, len(got), err)
					}
				}
			}
		})
	}
}
