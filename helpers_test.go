package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Helpers shared by the black-box response tests of package squeeze_test.

var bodyWords = []string{
	"squeeze", "middleware", "gzip", "zstd", "brotli", "deflate", "vary",
	"accept", "encoding", "response", "request", "buffer", "stream", "flush",
	"header", "handler", "content", "length", "chunked", "window",
}

// textBody returns n bytes of compressible text, different for every seed.
func textBody(seed, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	b := make([]byte, 0, n+32)
	for len(b) < n {
		b = append(b, bodyWords[r.IntN(len(bodyWords))]...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

// randomBody returns n incompressible bytes, different for every seed.
func randomBody(seed, n int) []byte {
	var s [32]byte
	s[0], s[1], s[2] = byte(seed), byte(seed>>8), byte(seed>>16)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// checkBody decodes raw per the response's Content-Encoding and compares it
// with want.
func checkBody(t *testing.T, h http.Header, raw, want []byte) {
	t.Helper()
	ce := h.Get("Content-Encoding")
	got, err := testtool.TryDecode(ce, raw)
	if err != nil {
		t.Fatalf("decoding %d-byte body with Content-Encoding %q: %v", len(raw), ce, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("decoded body (%q) differs: got %d bytes, want %d (prefix %q vs %q)",
			ce, len(got), len(want), prefix(got), prefix(want))
	}
}

func prefix(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// varyTokens returns the Vary field values split at commas.
func varyTokens(h http.Header) []string {
	var out []string
	for _, line := range h.Values("Vary") {
		for v := range strings.SplitSeq(line, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func countFold(list []string, s string) int {
	n := 0
	for _, v := range list {
		if strings.EqualFold(v, s) {
			n++
		}
	}
	return n
}

func newMiddleware(t testing.TB, opts ...squeeze.Option) *squeeze.Middleware {
	t.Helper()
	m, err := squeeze.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Its background work ends with the test, not during the next one.
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func request(method, ae string) *http.Request {
	r := httptest.NewRequest(method, "/", nil)
	if ae != "" {
		r.Header.Set("Accept-Encoding", ae)
	}
	return r
}

// record serves r through h with an httptest.ResponseRecorder and returns
// the headers as they were when the status line went out, and the body.
func record(h http.Handler, r *http.Request) (*http.Response, []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Result(), rec.Body.Bytes()
}

// writeText returns a handler that sets Content-Type ct (unless empty) and
// writes body in chunks of size chunk (all at once if chunk is 0).
func writeText(ct string, body []byte, chunk int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		writeChunks(w, body, chunk)
	}
}

func writeChunks(w io.Writer, body []byte, chunk int) {
	if chunk <= 0 {
		chunk = len(body)
	}
	for off := 0; off < len(body); off += chunk {
		end := min(off+chunk, len(body))
		if _, err := w.Write(body[off:end]); err != nil {
			return
		}
	}
}

// spyWriter is an http.ResponseWriter that records what reaches it, for
// checks made inside the handler while the response is in flight.
type spyWriter struct {
	header        http.Header
	informational []int
	status        int
	sent          http.Header // header snapshot at the final WriteHeader
	body          bytes.Buffer
	flushes       int
	readFroms     int
}

func newSpy() *spyWriter { return &spyWriter{header: http.Header{}} }

func (s *spyWriter) Header() http.Header { return s.header }

func (s *spyWriter) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		s.informational = append(s.informational, code)
		return
	}
	if s.status != 0 {
		return
	}
	s.status = code
	s.sent = s.header.Clone()
}

func (s *spyWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.body.Write(p)
}

func (s *spyWriter) Flush() {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	s.flushes++
}

func (s *spyWriter) ReadFrom(r io.Reader) (int64, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	s.readFroms++
	return s.body.ReadFrom(r)
}

// onlyReader hides every method but Read, so io.Copy must use the
// destination's ReadFrom or a plain loop.
type onlyReader struct{ io.Reader }

// protocol is an HTTP version the server-level tests run over.
type protocol struct {
	name  string // the subtest's name
	major int    // the ProtoMajor every response must have
}

var protocols = []protocol{{"HTTP/1.1", 1}, {"HTTP/2", 2}}

// startServer starts h on loopback speaking p (see testtool.StartServer):
// HTTP/1.1 in the clear or HTTP/2 over TLS, with a client that fails the
// test on a response of another version. quiet discards the server's error
// log, for handlers that panic and clients that leave.
func startServer(t *testing.T, p protocol, h http.Handler, quiet bool) (*httptest.Server, *http.Client) {
	t.Helper()
	return testtool.StartServer(t, p.name, p.major, h, quiet)
}

// forEachProtocol runs test as the subtests "HTTP/1.1" and "HTTP/2", each
// with its own server for h and a client for it (see startServer). A test
// that must tell them apart asks srv.EnableHTTP2 or res.ProtoMajor.
func forEachProtocol(t *testing.T, h http.Handler, test func(t *testing.T, srv *httptest.Server, c *http.Client)) {
	t.Helper()
	eachProtocol(t, h, false, test)
}

// forEachProtocolQuiet is forEachProtocol with the servers' error logs
// discarded, for handlers that panic and clients that leave mid-response.
func forEachProtocolQuiet(t *testing.T, h http.Handler, test func(t *testing.T, srv *httptest.Server, c *http.Client)) {
	t.Helper()
	eachProtocol(t, h, true, test)
}

func eachProtocol(t *testing.T, h http.Handler, quiet bool, test func(t *testing.T, srv *httptest.Server, c *http.Client)) {
	t.Helper()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, c := startServer(t, p, h, quiet)
			test(t, srv, c)
		})
	}
}

// fetch GETs url with the given Accept-Encoding (none if empty) and returns
// the response and its raw body (see testtool.Fetch).
func fetch(t *testing.T, c *http.Client, url, ae string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return testtool.Fetch(t, c, url, ae, hdr...)
}

var allCodings = []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate}

// serve records one response of h to a request with method and ae.
func serve(h http.Handler, method, ae string, hdr ...string) *httptest.ResponseRecorder {
	return serveMethod(h, method, "/x", ae, hdr...)
}

// serveAt records the response of h to a GET of path with ae and headers.
func serveAt(h http.Handler, path, ae string, hdr ...string) *httptest.ResponseRecorder {
	return serveMethod(h, http.MethodGet, path, ae, hdr...)
}

func serveMethod(h http.Handler, method, path, ae string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if ae != "" {
		r.Header.Set("Accept-Encoding", ae)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// availableFor returns the Available-Dictionary value naming dict.
func availableFor(dict []byte) string {
	h := sha256.Sum256(dict)
	return ":" + base64.StdEncoding.EncodeToString(h[:]) + ":"
}
