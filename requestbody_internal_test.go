package squeeze

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// decodeAllocs is what the Middleware's request decoding adds to the
// codec's own allocations with warm pools: the request copy with its body
// (one), the cloned header (three), the release func (one). Reading the
// Content-Encoding lines allocates nothing.
const decodeAllocs = 5

func TestMiddlewareRequestDecodingAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops Puts under -race, so allocation counts mean nothing")
	}
	plain := corpus.Prefix(t, corpus.JSON(t), 16<<10)
	m := MustNew()
	rec := httptest.NewRecorder()
	buf := make([]byte, 32<<10)
	for _, coding := range []string{Zstd, Gzip} {
		body := testtool.Encode(t, coding, plain)
		src := bytes.NewReader(body)
		decoders, err := pool.NewDecoders(coding)
		if err != nil {
			t.Fatal(err)
		}
		floor := testing.AllocsPerRun(100, func() {
			src.Reset(body)
			d, err := decoders.Get(src)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.CopyBuffer(io.Discard, struct{ io.Reader }{d}, buf)
			decoders.Put(d)
		})
		r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(src))
		r.ContentLength = int64(len(body))
		r.Header["Content-Encoding"] = []string{" identity, " + coding + " "}
		allocs := testing.AllocsPerRun(100, func() {
			src.Reset(body)
			r2, release, ok := m.decodeRequest(rec, r, r.Header["Content-Encoding"])
			if !ok {
				t.Fatal("refused")
			}
			n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r2.Body}, buf)
			if err != nil || n != int64(len(plain)) {
				t.Fatalf("decoded %d bytes, %v", n, err)
			}
			release()
		})
		if allocs > floor+decodeAllocs {
			t.Errorf("%s: %v allocations, want at most the codec's %v + %d", coding, allocs, floor, decodeAllocs)
		}
	}
}

// The names users check are the internal packages' own values, so that
// errors.Is finds them in whatever decode returns and the codings match.
func TestExportedNamesAreTheInternalPackagesOwn(t *testing.T) {
	if ErrInvalidBody != decode.ErrInvalidBody || ErrDecoderBusy != decode.ErrBusy {
		t.Error("the errors are not decode's")
	}
	if defaultDecoderMemory != decode.DefaultMemory {
		t.Errorf("defaultDecoderMemory %d, decode's default %d", defaultDecoderMemory, decode.DefaultMemory)
	}
	for _, pair := range [][2]string{{DCZ, cdt.DCZ}, {DCZ, decode.DCZ}, {DCB, cdt.DCB}, {DCB, decode.DCB}} {
		if pair[0] != pair[1] {
			t.Errorf("coding %q here, %q inside", pair[0], pair[1])
		}
	}
}
