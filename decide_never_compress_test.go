package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Responses that must never be compressed

func TestNeverCompresses(t *testing.T) {
	body := textBody(9, 5000)
	gz := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		return b.Bytes()
	}()
	plain := writeText("text/plain", body, 0)
	tests := []struct {
		name       string
		method     string
		reqHeader  []string
		handler    http.HandlerFunc
		wantStatus int
		wantBody   []byte
		wantHeader map[string]string
	}{
		{name: "204", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNoContent)
		}, wantStatus: 204},
		{name: "304", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("ETag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
			// No body, but the tag of the 200 it stands for, which would
			// be zstd (RFC 9110 §15.4.5).
		}, wantStatus: 304, wantHeader: map[string]string{"ETag": `"x-zstd"`}},
		{name: "already encoded (no double compression)", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz)
		}, wantStatus: 200, wantBody: gz, wantHeader: map[string]string{"Content-Encoding": "gzip"}},
		{name: "206 from ServeContent for a Range request", reqHeader: []string{"Range", "bytes=0-2047"},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
			}, wantStatus: 206, wantBody: body[:2048],
			wantHeader: map[string]string{"Content-Range": "bytes 0-2047/5000", "Accept-Ranges": "bytes"}},
		{name: "206 without a Range request", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Range", "bytes 0-4999/10000")
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(body)
		}, wantStatus: 206, wantBody: body},
		{name: "Content-Range on a 200", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Range", "bytes 0-4999/5000")
			_, _ = w.Write(body)
		}, wantStatus: 200, wantBody: body},
		{name: "Range request the handler ignores", reqHeader: []string{"Range", "bytes=0-99"},
			handler: plain, wantStatus: 200, wantBody: body},
		{name: "Cache-Control no-transform", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Cache-Control", "no-transform")
			_, _ = w.Write(body)
		}, wantStatus: 200, wantBody: body},
		{name: "Cache-Control no-transform among directives, any case", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Cache-Control", "public, max-age=60, No-Transform")
			_, _ = w.Write(body)
		}, wantStatus: 200, wantBody: body},
		{name: "protocol upgrade request", reqHeader: []string{"Connection", "Upgrade", "Upgrade", "websocket"},
			handler: plain, wantStatus: 200, wantBody: body},
		{name: "protocol upgrade request among connection options", reqHeader: []string{"Connection", "keep-alive, upgrade", "Upgrade", "h2c"},
			handler: plain, wantStatus: 200, wantBody: body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			req := request(method, "zstd, br, gzip")
			for i := 0; i+1 < len(tt.reqHeader); i += 2 {
				req.Header.Add(tt.reqHeader[i], tt.reqHeader[i+1])
			}
			res, raw := record(newMiddleware(t).Handler(tt.handler), req)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			wantCE := ""
			if v, ok := tt.wantHeader["Content-Encoding"]; ok {
				wantCE = v
			}
			if got := res.Header.Values("Content-Encoding"); strings.Join(got, ",") != wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, wantCE)
			}
			for k, v := range tt.wantHeader {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if !bytes.Equal(raw, tt.wantBody) {
				t.Errorf("body changed: got %d bytes %q, want %d bytes", len(raw), prefix(raw), len(tt.wantBody))
			}
		})
	}
}

// A 101 answer is final for net/http and hands the connection to another
// protocol: nothing may be encoded after it.
func TestSwitchingProtocolsIsNotCompressed(t *testing.T) {
	body := textBody(10, 4000)
	spy := newSpy()
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "squeeze-test")
		w.WriteHeader(http.StatusSwitchingProtocols)
		_, _ = w.Write(body)
	}))
	h.ServeHTTP(spy, request("GET", "zstd"))
	if spy.status != http.StatusSwitchingProtocols {
		t.Errorf("status = %d, want 101", spy.status)
	}
	if ce := spy.sent.Get("Content-Encoding"); ce != "" {
		t.Errorf("Content-Encoding = %q on a 101", ce)
	}
	if !bytes.Equal(spy.body.Bytes(), body) {
		t.Errorf("bytes after 101 changed: %d bytes, want %d", spy.body.Len(), len(body))
	}
}

// Field names are case-insensitive (RFC 9110 §5.1): a handler that assigns
// h["content-encoding"] (as it may assign h["ETag"], which etag.go honours)
// has its already-encoded body sent unchanged, with no second Content-
// Encoding line that no client could decode in order, as net/http sends it.
// FIELD-NOTES: "Double compression" is an incumbent bug squeeze must not
// have.
func TestNonCanonicalContentEncodingIsNotEncodedAgain(t *testing.T) {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression) // stored blocks: zstd would shrink them
	_, _ = zw.Write(textBody(6, 8000))
	_ = zw.Close()
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header()["content-encoding"] = []string{"gzip"} //nolint:staticcheck // the point
		_, _ = w.Write(gz.Bytes())
	}))
	rec := serve(h, "GET", "zstd, gzip")
	if ce := rec.Header()["Content-Encoding"]; len(ce) > 0 {
		t.Errorf("added Content-Encoding %q next to the handler's content-encoding: gzip", ce)
	}
	if !bytes.Equal(rec.Body.Bytes(), gz.Bytes()) {
		t.Errorf("the handler's gzip body was changed: %d bytes, want its %d", rec.Body.Len(), gz.Len())
	}
}
