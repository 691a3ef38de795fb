package squeeze

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// When no encoder can be had, a response goes out as the handler wrote it,
// with its Vary, and the observer hears ReasonNoEncoder: a body that ends
// within the buffer and a stream alike.
func TestNoEncoderSendsThePlainBody(t *testing.T) {
	body := bytes.Repeat([]byte("squeeze me if you can. "), 4<<10) // 92 KiB, past the buffer
	for _, tt := range []struct {
		name string
		n    int
	}{{"whole", 8 << 10}, {"stream", len(body)}} {
		t.Run(tt.name, func(t *testing.T) {
			var events []ResponseInfo
			m := MustNew(WithEncodings(Gzip), WithObserver(Observer{Response: func(e ResponseInfo) { events = append(events, e) }}))
			built := 0
			encoders, err := pool.NewEncodersFunc(Gzip, func() (writers.Encoder, error) {
				if built++; built > 1 {
					return nil, errors.New("no encoder to be had")
				}
				return writers.NewEncoder(Gzip, 1)
			})
			if err != nil {
				t.Fatal(err)
			}
			// Take the one encoder the pool built: every later Get fails.
			if e, err := encoders.Get(io.Discard); err == nil {
				defer encoders.Put(e)
			}
			m.offers[0].encoders = encoders
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = w.Write(body[:tt.n])
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if ce := rec.Header().Get("Content-Encoding"); ce != "" || !bytes.Equal(rec.Body.Bytes(), body[:tt.n]) {
				t.Errorf("Content-Encoding %q and %d bytes, want the %d plain bytes", ce, rec.Body.Len(), tt.n)
			}
			if v := rec.Header().Get("Vary"); v != "Accept-Encoding" {
				t.Errorf("Vary = %q, want Accept-Encoding", v)
			}
			if len(events) != 1 || events[0].Skipped != ReasonNoEncoder || events[0].Out != int64(tt.n) {
				t.Errorf("events %+v, want one skipped for %v with %d bytes out", events, ReasonNoEncoder, tt.n)
			}
		})
	}
}
