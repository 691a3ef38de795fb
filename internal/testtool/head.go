package testtool

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// CountBodyBytes wraps h so that the body bytes each request's handler
// wrote to the server's writer can be read once it returns, with the
// function it returns (one call per request, in order): net/http drops a
// HEAD's body unseen, so only a handler outside sees what was written.
func CountBodyBytes(h http.Handler) (http.Handler, func() int64) {
	counts := make(chan int64, 16)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n atomic.Int64
		defer func() { counts <- n.Load() }()
		h.ServeHTTP(countingWriter{w, &n}, r)
	}), func() int64 { return <-counts }
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}

func (c countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// CheckHead sends a GET and then a HEAD for url through c with
// Accept-Encoding coding, and fails t unless the GET comes in coding and
// decodes to want, and the HEAD has the GET's status and Content-Encoding,
// a Content-Length absent or the GET's (RFC 9110 §9.3.2, §8.6), and no body
// bytes written: written, when not nil, returns the body bytes the server
// wrote for each request, one call per request (see CountBodyBytes).
func CheckHead(t testing.TB, c *http.Client, url, coding string, want []byte, written func() int64) {
	t.Helper()
	get, raw := Fetch(t, c, url, coding)
	if written != nil {
		written()
	}
	if ce := get.Header.Get("Content-Encoding"); ce != coding {
		t.Fatalf("GET %s: Content-Encoding %q, want %s", url, ce, coding)
	}
	if got := Decode(t, coding, raw); !bytes.Equal(got, want) {
		t.Fatalf("GET %s: decoded %d bytes, want the %d written", url, len(got), len(want))
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", coding)
	head, _ := Do(t, c, req)
	if head.StatusCode != get.StatusCode {
		t.Errorf("HEAD %s (%s): status %d, the GET's %d", url, coding, head.StatusCode, get.StatusCode)
	}
	if a, b := head.Header.Get("Content-Encoding"), get.Header.Get("Content-Encoding"); a != b {
		t.Errorf("HEAD %s (%s): Content-Encoding %q, the GET's %q", url, coding, a, b)
	}
	if cl, ok := head.Header["Content-Length"]; ok && (get.ContentLength < 0 || len(cl) != 1 || cl[0] != strconv.FormatInt(get.ContentLength, 10)) {
		t.Errorf("HEAD %s (%s): Content-Length %q, the GET's %d (-1: none)", url, coding, cl, get.ContentLength)
	}
	if written != nil {
		if n := written(); n != 0 {
			t.Errorf("HEAD %s (%s): %d body bytes written", url, coding, n)
		}
	}
}
