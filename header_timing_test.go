package squeeze_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

func TestHeaderChangesAfterWriteHeaderDoNotGoOut(t *testing.T) {
	for _, size := range []int{10, 4096, 100 << 10} { // plain, buffered, streamed
		h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Before", "1")
			w.WriteHeader(http.StatusOK)
			w.Header().Set("X-After", "1")
			w.Header().Del("X-Before")
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(text(size))
		}))
		rec := serve(h, "GET", "zstd")
		if rec.Header().Get("X-After") != "" || rec.Header().Get("X-Before") != "1" || rec.Header().Get("Content-Type") != "text/plain" {
			t.Errorf("%d bytes: header %q, want the one at WriteHeader", size, rec.Header())
		}
	}
}

func TestWriteHeaderThenHijackSendsTheHeader(t *testing.T) {
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusOK)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("hello")
		_ = rw.Flush()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: zstd\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response header before the hijacked bytes: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "hello" {
		t.Errorf("got %d %q, want 200 hello", res.StatusCode, body)
	}
}

func TestZeroMiddlewareIsUsable(t *testing.T) {
	var m squeeze.Middleware
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(text(4096))
	}))
	rec := serve(h, "GET", "gzip")
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("zero Middleware sent Content-Encoding %q, want the defaults' gzip", rec.Header().Get("Content-Encoding"))
	}
	if got := decodeAs(t, "gzip", rec.Body.Bytes()); !strings.HasPrefix(string(got), "<p>") {
		t.Errorf("body did not round-trip")
	}
}
