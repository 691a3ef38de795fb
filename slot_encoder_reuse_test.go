package squeeze_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// TestEncoderKeptBetweenResponsesStartsClean pins down that the encoder a
// slot keeps from one whole body to the next (slot.go, slot.encoder)
// starts every response afresh: after a body that did not pay (its encoder
// stopped mid-stream), after a body in another coding, and after a stream,
// each response decodes to exactly its own body. Responses are served one
// after another from one goroutine, so that they share a slot.
func TestEncoderKeptBetweenResponsesStartsClean(t *testing.T) {
	m := squeeze.MustNew()
	bodies := map[string][]byte{
		"text":   textBody(1, 4<<10),
		"random": randomBody(2, 4<<10),
		"text2":  textBody(3, 3<<10),
		"stream": textBody(4, 2<<20), // past the buffer: a stream
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(bodies[r.URL.Query().Get("b")])
	}))
	seq := []struct{ body, coding string }{
		{"text", "gzip"}, {"random", "gzip"}, {"text", "gzip"},
		{"text", "zstd"}, {"random", "zstd"}, {"text2", "zstd"},
		{"text", "br"}, {"random", "br"}, {"text2", "br"},
		{"text", "gzip"}, {"stream", "gzip"}, {"text2", "gzip"},
		{"text", "zstd"}, {"stream", "br"}, {"text2", "zstd"},
		{"text", "gzip"},
	}
	for round := range 3 {
		for i, c := range seq {
			rec := serveAt(h, "/x?b="+c.body, c.coding)
			name := fmt.Sprintf("round %d step %d (%s as %s)", round, i, c.body, c.coding)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: status %d", name, rec.Code)
			}
			want := c.coding
			if c.body == "random" {
				want = "" // no gain: sent plain
			}
			if got := rec.Header().Get("Content-Encoding"); got != want {
				t.Fatalf("%s: Content-Encoding %q, want %q", name, got, want)
			}
			checkBody(t, rec.Header(), rec.Body.Bytes(), bodies[c.body])
		}
	}
}

// A slot keeps its encoder from one whole body to the next and resets it
// once, when it hands it out again, and may keep one that failed mid-body
// with errNoGain. The codecs reset differently at some levels: the stateless
// gzip and deflate levels (-3; -2 is Huffman only), brotli's one- and two-
// pass compressors (0 and 1) and its parallel match finder (10 and 11 with
// GOMAXPROCS >= 2), and zstd's strongest level.
// TestEncoderKeptBetweenResponsesStartsClean runs only the default levels,
// and no deflate. Every response, after a failed or a finished body in the
// same slot, whole or streamed, must decode to exactly its own body.
// Responses are served one after another from one goroutine, so that they
// share a slot.
func TestKeptEncoderStartsCleanAtEveryLevel(t *testing.T) {
	bodies := map[string][]byte{
		"text":     textBody(51, 6<<10),
		"random":   randomBody(52, 6<<10),                                 // the encoder fails at the cap
		"textrand": append(textBody(53, 5<<10), randomBody(54, 9<<10)...), // some gain
		"full":     textBody(55, squeeze.DefaultBufferSize),               // fills the buffer exactly
		"stream":   append(textBody(56, squeeze.DefaultBufferSize), randomBody(57, 3<<10)...),
	}
	// plain is the body that goes out as it is: encoding it would not make
	// it smaller.
	const plain = "random"
	steps := []string{"textrand", "text", "random", "stream", "text", "textrand", "full", "random", "text", "textrand?flush", "text"}
	levels := map[string][]int{
		squeeze.Gzip:    {-3, -2, 1, 9},
		squeeze.Deflate: {-3, -2, 1, 9},
		squeeze.Zstd:    {1, 22},
		squeeze.Brotli:  {0, 1, 10, 11},
	}
	for _, coding := range allCodings {
		for _, level := range levels[coding] {
			t.Run(fmt.Sprintf("%s-%d", coding, level), func(t *testing.T) {
				m := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLevel(coding, level))
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/plain")
					b := bodies[r.URL.Query().Get("b")]
					if r.URL.Query().Has("flush") {
						_, _ = w.Write(b[:len(b)/2])
						w.(http.Flusher).Flush()
						b = b[len(b)/2:]
					}
					_, _ = w.Write(b)
				}))
				for i, step := range steps {
					name, flush := strings.CutSuffix(step, "?flush")
					path := "/x?b=" + name
					if flush {
						path += "&flush"
					}
					rec := serveAt(h, path, coding)
					if rec.Code != http.StatusOK {
						t.Fatalf("step %d (%s): status %d", i, step, rec.Code)
					}
					want := coding
					if name == plain {
						want = ""
					}
					if got := rec.Header().Get("Content-Encoding"); got != want {
						t.Fatalf("step %d (%s): Content-Encoding %q, want %q", i, step, got, want)
					}
					checkBody(t, rec.Header(), rec.Body.Bytes(), bodies[name])
				}
			})
		}
	}
}
