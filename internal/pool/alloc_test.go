package pool_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
)

// Borrowing from a warm pool costs nothing: no allocation in Get or Put, and
// none in a whole pooled response (Get, Write 16 KiB of HTML, Close, Put)
// or pooled request body (Get, read it all, Put), except what the codecs
// themselves allocate, which writers' own tests bound: br decoding makes 3
// small allocations per meta-block inside andybalholm/brotli.
func TestWarmPoolDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	body := corpus.Prefix(t, corpus.HTML(t), 16<<10)
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			ep := newEncoders(t, coding)
			dp := newDecoders(t, coding)
			stream := compress(t, ep, body)
			var out bytes.Buffer
			out.Grow(64 << 10)
			respond := func() {
				out.Reset()
				e, err := ep.Get(&out)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Write(body); err != nil {
					t.Fatal(err)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				ep.Put(e)
			}
			src := bytes.NewReader(stream)
			read := func() {
				out.Reset()
				src.Reset(stream)
				d, err := dp.Get(src)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := out.ReadFrom(d); err != nil {
					t.Fatal(err)
				}
				dp.Put(d)
			}
			respond()
			read()
			if a := testing.AllocsPerRun(20, respond); a != 0 {
				t.Errorf("pooled response: %v allocations; want 0", a)
			}
			want := 0.0
			if coding == "br" {
				want = 3
			}
			if a := testing.AllocsPerRun(20, read); a > want {
				t.Errorf("pooled request body: %v allocations; want at most %v", a, want)
			}
			getPut := func() {
				e, err := ep.Get(io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				ep.Put(e)
			}
			if a := testing.AllocsPerRun(100, getPut); a != 0 {
				t.Errorf("Encoders Get+Put: %v allocations; want 0", a)
			}
		})
	}
	b := newBuffers(t, 32<<10)
	b.Put(b.Get())
	if a := testing.AllocsPerRun(100, func() { b.Put(b.Get()) }); a != 0 {
		t.Errorf("Buffers Get+Put: %v allocations; want 0", a)
	}
}
