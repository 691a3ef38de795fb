package squeeze_test

import (
	"fmt"
	"net/http"
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
