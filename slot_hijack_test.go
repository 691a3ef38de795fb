package squeeze_test

import (
	"io"
	"net/http"
	"testing"
)

// A Hijack that fails (the underlying writer has no Hijacker; the wrapper
// always has the method, so w.(http.Hijacker) is true even there) changes
// nothing, as without the middleware: the bytes written before it and after
// it all go out.
func TestFailedHijackLosesNoBufferedBytes(t *testing.T) {
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello ")
		if _, _, err := http.NewResponseController(w).Hijack(); err == nil {
			t.Error("Hijack on a ResponseRecorder succeeded")
			return
		}
		_, _ = io.WriteString(w, "world")
	}))
	res, raw := record(h, request("GET", "zstd"))
	checkBody(t, res.Header, raw, []byte("hello world"))
}

// The same over HTTP/2, where Hijack is not supported: a handler that tries
// it (a WebSocket library probing) and falls back to streaming loses nothing
// it wrote before.
func TestFailedHijackOverHTTP2LosesNoBufferedBytes(t *testing.T) {
	body := textBody(4, 3000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body[:1000])
		if r.ProtoMajor == 2 {
			if _, _, err := http.NewResponseController(w).Hijack(); err == nil {
				t.Error("Hijack over HTTP/2 succeeded")
				return
			}
		}
		_, _ = w.Write(body[1000:])
	}))
	srv, c := startServer(t, protocol{"HTTP/2", 2}, h, false)
	res, raw := fetch(t, c, srv.URL, "zstd")
	checkBody(t, res.Header, raw, body)
}
