package squeeze

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// ---------------------------------------------------------------------------
// Helpers

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

// newDecoder wraps r in an independent decoder for coding: the standard
// library for gzip and deflate (zlib), klauspost/compress for zstd and
// andybalholm/brotli for br. The empty coding is identity.
func newDecoder(coding string, r io.Reader) (io.Reader, func(), error) {
	switch coding {
	case "":
		return r, func() {}, nil
	case Gzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { _ = zr.Close() }, nil
	case Deflate:
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { _ = zr.Close() }, nil
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	case Brotli:
		return brotli.NewReader(r), func() {}, nil
	}
	return nil, nil, fmt.Errorf("unexpected Content-Encoding %q", coding)
}

// decode decodes a complete body with the Go decoders.
func decode(coding string, b []byte) ([]byte, error) {
	r, done, err := newDecoder(coding, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer done()
	return io.ReadAll(r)
}

// decodeCLI decodes a complete body with the reference C tool for coding.
func decodeCLI(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var name string
	args := []string{"-d", "-c"}
	switch coding {
	case Gzip:
		name = "gzip"
	case Zstd:
		name = "zstd"
		args = append(args, "-q")
	case Brotli:
		name = "brotli"
	default:
		t.Fatalf("no reference tool for %q", coding)
	}
	cmd := exec.Command(testtool.Require(t, name), args...)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -d: %v: %s", name, err, stderr.String())
	}
	return out
}

// checkBody decodes raw per the response's Content-Encoding and compares it
// with want.
func checkBody(t *testing.T, h http.Header, raw, want []byte) {
	t.Helper()
	ce := h.Get("Content-Encoding")
	got, err := decode(ce, raw)
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

func newMiddleware(t testing.TB, opts ...Option) *Middleware {
	t.Helper()
	m, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
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

// newServer starts an HTTP/1.1 server on loopback and returns a client that
// leaves Accept-Encoding and the body alone.
func newServer(t *testing.T, h http.Handler, quiet bool) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if quiet {
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// fetch GETs url with the given Accept-Encoding (none if empty) and returns
// the response and its raw body.
func fetch(t *testing.T, c *http.Client, url, ae string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading body of %s: %v", url, err)
	}
	return res, raw
}

var allCodings = []string{Zstd, Brotli, Gzip, Deflate}

// ---------------------------------------------------------------------------
// API

func TestCodingNamesAreTheRegisteredTokens(t *testing.T) {
	for got, want := range map[string]string{Zstd: "zstd", Brotli: "br", Gzip: "gzip", Deflate: "deflate"} {
		if got != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
}

func TestNewValidatesEveryOption(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{"defaults", nil, false},
		{"all four codings", []Option{WithEncodings(Deflate, Gzip, Brotli, Zstd)}, false},
		{"x-gzip is gzip", []Option{WithEncodings("x-gzip")}, false},
		{"coding names ignore case", []Option{WithEncodings("GZIP", "Br", "ZSTD")}, false},
		{"unknown coding", []Option{WithEncodings(Gzip, "compress")}, true},
		{"identity is not an encoding", []Option{WithEncodings("identity")}, true},
		{"empty encodings", []Option{WithEncodings()}, true},
		{"duplicate coding", []Option{WithEncodings(Gzip, Zstd, Gzip)}, true},
		{"duplicate through x-gzip alias", []Option{WithEncodings(Gzip, "x-gzip")}, true},
		{"gzip level -3 (stateless)", []Option{WithLevel(Gzip, -3)}, false},
		{"gzip level -2 (huffman)", []Option{WithLevel(Gzip, -2)}, false},
		{"gzip level 1", []Option{WithLevel(Gzip, 1)}, false},
		{"gzip level 9", []Option{WithLevel(Gzip, 9)}, false},
		{"gzip level 0", []Option{WithLevel(Gzip, 0)}, true},
		{"gzip level -1", []Option{WithLevel(Gzip, -1)}, true},
		{"gzip level 10", []Option{WithLevel(Gzip, 10)}, true},
		{"gzip level -4", []Option{WithLevel(Gzip, -4)}, true},
		{"deflate level 9", []Option{WithEncodings(Deflate), WithLevel(Deflate, 9)}, false},
		{"deflate level 10", []Option{WithEncodings(Deflate), WithLevel(Deflate, 10)}, true},
		{"zstd level 1", []Option{WithLevel(Zstd, 1)}, false},
		{"zstd level 22", []Option{WithLevel(Zstd, 22)}, false},
		{"zstd level 0", []Option{WithLevel(Zstd, 0)}, true},
		{"zstd level 23", []Option{WithLevel(Zstd, 23)}, true},
		{"br level 0", []Option{WithLevel(Brotli, 0)}, false},
		{"br level 11", []Option{WithLevel(Brotli, 11)}, false},
		{"br level -1", []Option{WithLevel(Brotli, -1)}, true},
		{"br level 12", []Option{WithLevel(Brotli, 12)}, true},
		{"level for unknown coding", []Option{WithLevel("lzma", 1)}, true},
		{"level for coding off by default", []Option{WithLevel(Deflate, 5)}, true},
		{"level for coding WithEncodings dropped", []Option{WithEncodings(Gzip), WithLevel(Zstd, 3)}, true},
		{"level given before its encoding", []Option{WithLevel(Deflate, 5), WithEncodings(Deflate)}, false},
		{"negative min size", []Option{WithMinSize(-1)}, true},
		{"zero min size", []Option{WithMinSize(0)}, false},
		{"zero buffer size", []Option{WithBufferSize(0)}, true},
		{"negative buffer size", []Option{WithBufferSize(-5)}, true},
		{"buffer below min size is allowed", []Option{WithBufferSize(16), WithMinSize(4096)}, false},
		{"empty content types", []Option{WithContentTypes()}, true},
		{"content type patterns", []Option{WithContentTypes("text/html", "image/*", "application/*+json", "*/*+xml")}, false},
		{"content type with parameters", []Option{WithContentTypes("text/html; charset=utf-8")}, true},
		{"content type without subtype", []Option{WithContentTypes("text")}, true},
		{"partial wildcard subtype", []Option{WithContentTypes("text/ht*")}, true},
		{"wildcard type with concrete subtype", []Option{WithContentTypes("*/json")}, true},
		{"duplicate content type", []Option{WithContentTypes("text/html", "TEXT/HTML")}, true},
		{"nil option", []Option{nil}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.opts...)
			if tt.wantErr {
				if err == nil {
					t.Fatal("New succeeded, want an error")
				}
				if m != nil {
					t.Error("New returned a Middleware along with its error")
				}
				return
			}
			if err != nil || m == nil {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

func TestMustNewPanicsOnInvalidOption(t *testing.T) {
	if m := MustNew(WithMinSize(10)); m == nil {
		t.Fatal("MustNew returned nil for valid options")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew(WithLevel(Brotli, 12)) did not panic")
		}
	}()
	MustNew(WithLevel(Brotli, 12))
}

func TestPackageHandlerUsesDefaults(t *testing.T) {
	tests := []struct {
		name   string
		ae     string
		size   int
		wantCE string
	}{
		{"zstd preferred", "gzip, br, zstd", 4000, Zstd},
		{"deflate is off by default", "deflate", 4000, ""},
		{"gzip when asked", "gzip, deflate", 4000, Gzip},
		{"below the default min size", "gzip", DefaultMinSize - 1, ""},
		{"at the default min size", "gzip", DefaultMinSize, Gzip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(1, tt.size)
			res, raw := record(Handler(writeText("text/plain", body, 0)), request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// ---------------------------------------------------------------------------
// Negotiation, end to end (the parser has its own tests in negotiate_test.go)

func TestNegotiationEndToEnd(t *testing.T) {
	defaults := newMiddleware(t)
	withDeflate := newMiddleware(t, WithEncodings(Zstd, Brotli, Gzip, Deflate))
	tests := []struct {
		name string
		m    *Middleware
		ae   string
		want string
	}{
		{"no Accept-Encoding means identity", defaults, "", ""},
		{"single coding", defaults, "gzip", Gzip},
		{"q=0 refuses a coding", defaults, "gzip;q=0", ""},
		{"q=0 refuses only that coding", defaults, "br;q=0, gzip", Gzip},
		{"ties go to server order", defaults, "gzip, br, zstd", Zstd},
		{"ties go to server order without zstd", defaults, "gzip, br", Brotli},
		{"equal explicit q ties too", defaults, "gzip;q=0.5, br;q=0.5", Brotli},
		{"higher q beats server order", defaults, "zstd;q=0.8, gzip", Gzip},
		{"x-gzip is gzip", defaults, "x-gzip", Gzip},
		{"coding names ignore case", defaults, "GZIP", Gzip},
		{"star takes the server's favourite", defaults, "*", Zstd},
		{"star with zstd refused", defaults, "zstd;q=0, *", Brotli},
		{"star q=0 leaves identity", defaults, "*;q=0", ""},
		{"identity only", defaults, "identity", ""},
		{"unknown codings only", defaults, "compress, lzma", ""},
		{"deflate not offered by default", defaults, "deflate", ""},
		{"deflate when enabled", withDeflate, "deflate", Deflate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(2, 5000)
			res, raw := record(tt.m.Handler(writeText("text/plain", body, 0)), request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.want {
				t.Errorf("Accept-Encoding %q: Content-Encoding = %q, want %q", tt.ae, got, tt.want)
			}
			if n := countFold(varyTokens(res.Header), "Accept-Encoding"); n != 1 {
				t.Errorf("Vary = %q, want Accept-Encoding once", res.Header.Values("Vary"))
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// ---------------------------------------------------------------------------
// Buffering, MinSize and framing, over a real server where net/http decides
// between Content-Length and chunked.

func TestFramingOverRealServer(t *testing.T) {
	type expect int
	const (
		plainLength       expect = iota // unencoded, Content-Length of the body
		compressedLength                // encoded, Content-Length of the encoded bytes
		compressedChunked               // encoded, no Content-Length, chunked
	)
	tests := []struct {
		name    string
		opts    []Option
		size    int
		random  bool
		chunk   int
		flushAt int // Flush after this many bytes (0: never)
		setCL   bool
		want    expect
	}{
		{name: "empty body", size: 0, want: plainLength},
		{name: "below min size goes out plain", size: DefaultMinSize - 1, want: plainLength},
		{name: "below min size in small writes", size: DefaultMinSize - 1, chunk: 10, want: plainLength},
		{name: "below a min size larger than net/http's own buffer", opts: []Option{WithMinSize(8000)}, size: 7000, chunk: 100, want: plainLength},
		{name: "at min size is compressed", size: DefaultMinSize, want: compressedLength},
		{name: "body ending inside the buffer is compressed with a length", size: 20000, chunk: 1000, want: compressedLength},
		{name: "body of one byte less than the buffer", size: DefaultBufferSize - 1, want: compressedLength},
		{name: "body outgrowing the buffer streams", size: 100000, want: compressedChunked},
		{name: "body outgrowing the buffer in small writes", size: 100000, chunk: 777, want: compressedChunked},
		{name: "flush commits to streaming", size: 8000, flushAt: 4000, chunk: 4000, want: compressedChunked},
		{name: "incompressible body is sent plain", size: 4096, random: true, want: plainLength},
		{name: "incompressible body with min size 0", opts: []Option{WithMinSize(0)}, size: 1, random: true, want: plainLength},
		{name: "handler Content-Length at min size streams at once", size: 20000, setCL: true, want: compressedChunked},
		{name: "handler Content-Length below min size stays", size: 500, setCL: true, want: plainLength},
		{name: "small buffer is raised to min size: below", opts: []Option{WithBufferSize(100), WithMinSize(2000)}, size: 1500, chunk: 50, want: plainLength},
		// Streaming cases keep the encoded size above net/http's own 2 KiB
		// buffer, which would otherwise add a Content-Length itself.
		{name: "small buffer is raised to min size: above", opts: []Option{WithBufferSize(100), WithMinSize(2000)}, size: 10000, chunk: 50, want: compressedChunked},
		{name: "custom buffer: ends inside", opts: []Option{WithBufferSize(4096)}, size: 3000, want: compressedLength},
		{name: "custom buffer: outgrows", opts: []Option{WithBufferSize(4096)}, size: 12000, want: compressedChunked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(3, tt.size)
			if tt.random {
				body = randomBody(3, tt.size)
			}
			h := newMiddleware(t, tt.opts...).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				if tt.setCL {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				if tt.flushAt > 0 {
					writeChunks(w, body[:tt.flushAt], tt.chunk)
					http.NewResponseController(w).Flush()
					writeChunks(w, body[tt.flushAt:], tt.chunk)
					return
				}
				writeChunks(w, body, tt.chunk)
			}))
			srv, c := newServer(t, h, false)
			res, raw := fetch(t, c, srv.URL, "zstd")
			ce := res.Header.Get("Content-Encoding")
			chunked := slices.Contains(res.TransferEncoding, "chunked")
			switch tt.want {
			case plainLength:
				if ce != "" || res.ContentLength != int64(len(body)) || chunked {
					t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want plain with Content-Length %d",
						ce, res.ContentLength, res.TransferEncoding, len(body))
				}
			case compressedLength:
				if ce != Zstd || res.ContentLength != int64(len(raw)) || chunked {
					t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want zstd in one piece with Content-Length %d",
						ce, res.ContentLength, res.TransferEncoding, len(raw))
				}
			case compressedChunked:
				if tt.flushAt == 0 && len(raw) <= 2048 {
					t.Fatalf("test body encodes to %d bytes, inside net/http's 2 KiB buffer: framing cannot tell", len(raw))
				}
				if ce != Zstd || res.ContentLength != -1 || !chunked {
					t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want zstd, chunked",
						ce, res.ContentLength, res.TransferEncoding)
				}
			}
			if n := countFold(varyTokens(res.Header), "Accept-Encoding"); n != 1 {
				t.Errorf("Vary = %q, want Accept-Encoding once on eligible content", res.Header.Values("Vary"))
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// The recorder shows the header map as it was when the status went out: the
// Content-Length of a buffered compressed body must already be the encoded
// length there.
func TestBufferedCompressedBodyHasEncodedLength(t *testing.T) {
	for _, coding := range allCodings {
		t.Run(coding, func(t *testing.T) {
			m := newMiddleware(t, WithEncodings(allCodings...))
			body := textBody(4, 10000)
			res, raw := record(m.Handler(writeText("text/plain", body, 1000)), request("GET", coding))
			if got := res.Header.Get("Content-Encoding"); got != coding {
				t.Fatalf("Content-Encoding = %q, want %q", got, coding)
			}
			if got, want := res.Header.Get("Content-Length"), strconv.Itoa(len(raw)); got != want {
				t.Errorf("Content-Length = %q, want %q (encoded length)", got, want)
			}
			if len(raw) >= len(body) {
				t.Errorf("encoded %d bytes into %d", len(body), len(raw))
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// ---------------------------------------------------------------------------
// Eligible content

func TestContentTypeEligibility(t *testing.T) {
	custom := []Option{WithContentTypes("application/x-custom", "image/*", "application/*+json")}
	tests := []struct {
		name string
		opts []Option
		ct   string
		want bool
	}{
		{"html", nil, "text/html", true},
		{"html with charset", nil, "text/html; charset=utf-8", true},
		{"type ignores case", nil, "TEXT/HTML; Charset=UTF-8", true},
		{"css", nil, "text/css", true},
		{"plain text", nil, "text/plain", true},
		{"event stream", nil, "text/event-stream", true},
		{"json", nil, "application/json", true},
		{"problem+json", nil, "application/problem+json", true},
		{"vendor +json", nil, "application/vnd.api+json", true},
		{"javascript", nil, "application/javascript", true},
		{"text/javascript", nil, "text/javascript; charset=utf-8", true},
		{"xml", nil, "application/xml", true},
		{"atom+xml", nil, "application/atom+xml", true},
		{"svg", nil, "image/svg+xml", true},
		{"wasm", nil, "application/wasm", true},
		{"ttf", nil, "font/ttf", true},
		{"otf", nil, "font/otf", true},
		{"png", nil, "image/png", false},
		{"jpeg", nil, "image/jpeg", false},
		{"webp", nil, "image/webp", false},
		{"audio", nil, "audio/mpeg", false},
		{"video", nil, "video/mp4", false},
		{"zip", nil, "application/zip", false},
		{"gzip archive", nil, "application/gzip", false},
		{"woff", nil, "font/woff", false},
		{"woff2", nil, "font/woff2", false},
		{"octet-stream", nil, "application/octet-stream", false},
		{"malformed type", nil, "text", false},
		{"custom list: exact", custom, "application/x-custom", true},
		{"custom list: type wildcard", custom, "image/png", true},
		{"custom list: suffix wildcard", custom, "application/ld+json", true},
		{"custom list replaces defaults", custom, "text/html", false},
		{"custom list: suffix needs a prefix", custom, "application/json", false},
		{"star suffix pattern", []Option{WithContentTypes("*/*+json")}, "text/x-thing+json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(5, 4000)
			m := newMiddleware(t, tt.opts...)
			res, raw := record(m.Handler(writeText(tt.ct, body, 0)), request("GET", "gzip"))
			got := res.Header.Get("Content-Encoding") == Gzip
			if got != tt.want {
				t.Errorf("Content-Type %q: compressed = %v, want %v", tt.ct, got, tt.want)
			}
			if tt.want && countFold(varyTokens(res.Header), "Accept-Encoding") != 1 {
				t.Errorf("Vary = %q, want Accept-Encoding", res.Header.Values("Vary"))
			}
			if ct := res.Header.Get("Content-Type"); ct != tt.ct {
				t.Errorf("Content-Type changed to %q", ct)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// Without a Content-Type the middleware sniffs the plain bytes, and the type
// must be set before compressed bytes go out (net/http does not sniff a
// response that has a Content-Encoding).
func TestSniffsMissingContentType(t *testing.T) {
	html := append([]byte("<!DOCTYPE html><html><body>"), textBody(6, 100000)...)
	png := append([]byte("\x89PNG\r\n\x1a\n"), textBody(7, 4000)...)
	tests := []struct {
		name   string
		body   []byte
		wantCT string
		wantCE string
	}{
		{"buffered html", html[:5000], "text/html; charset=utf-8", Zstd},
		{"streamed html", html, "text/html; charset=utf-8", Zstd},
		{"plain text", textBody(8, 5000), "text/plain; charset=utf-8", Zstd},
		{"png is not compressed", png, "image/png", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newMiddleware(t).Handler(writeText("", tt.body, 1000))
			srv, c := newServer(t, h, false)
			res, raw := fetch(t, c, srv.URL, "zstd")
			if got := res.Header.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("over a server: Content-Type = %q, want %q", got, tt.wantCT)
			}
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("over a server: Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			checkBody(t, res.Header, raw, tt.body)

			res, raw = record(h, request("GET", "zstd"))
			if got := res.Header.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("recorder: Content-Type = %q, want %q", got, tt.wantCT)
			}
			checkBody(t, res.Header, raw, tt.body)
		})
	}
}

// ---------------------------------------------------------------------------
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
		{name: "HEAD", method: "HEAD", handler: plain, wantStatus: 200, wantBody: body},
		{name: "204", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNoContent)
		}, wantStatus: 204},
		{name: "304", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("ETag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
		}, wantStatus: 304, wantHeader: map[string]string{"ETag": `"x"`}},
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

// ---------------------------------------------------------------------------
// Vary

func TestVaryAcceptEncoding(t *testing.T) {
	tests := []struct {
		name     string
		ae       string
		existing []string
		size     int
		wantCE   string
		want     []string // exact Vary tokens, in order
	}{
		{name: "compressed", ae: "gzip", size: 4000, wantCE: Gzip, want: []string{"Accept-Encoding"}},
		{name: "request without Accept-Encoding", size: 4000, want: []string{"Accept-Encoding"}},
		{name: "identity only", ae: "identity", size: 4000, want: []string{"Accept-Encoding"}},
		{name: "below min size", ae: "gzip", size: 100, want: []string{"Accept-Encoding"}},
		{name: "merged with Origin", ae: "gzip", existing: []string{"Origin"}, size: 4000, wantCE: Gzip, want: []string{"Origin", "Accept-Encoding"}},
		{name: "merged with Origin, not compressed", existing: []string{"Origin"}, size: 4000, want: []string{"Origin", "Accept-Encoding"}},
		{name: "already there in lower case", ae: "gzip", existing: []string{"accept-encoding"}, size: 4000, wantCE: Gzip, want: []string{"accept-encoding"}},
		{name: "already in a list", ae: "gzip", existing: []string{"Origin, Accept-Encoding"}, size: 4000, wantCE: Gzip, want: []string{"Origin", "Accept-Encoding"}},
		{name: "already on a second line", ae: "gzip", existing: []string{"Origin", "ACCEPT-ENCODING"}, size: 4000, wantCE: Gzip, want: []string{"Origin", "ACCEPT-ENCODING"}},
		{name: "star", ae: "gzip", existing: []string{"*"}, size: 4000, wantCE: Gzip, want: []string{"*"}},
		{name: "star in a list", ae: "gzip", existing: []string{"Origin, *"}, size: 4000, wantCE: Gzip, want: []string{"Origin", "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(11, tt.size)
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				for _, v := range tt.existing {
					w.Header().Add("Vary", v)
				}
				_, _ = w.Write(body)
			}))
			res, raw := record(h, request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			if got := varyTokens(res.Header); !slices.Equal(got, tt.want) {
				t.Errorf("Vary = %q (tokens %q), want tokens %q", res.Header.Values("Vary"), got, tt.want)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// A handler may reuse one header-value slice for many responses. Merging
// Accept-Encoding into Vary must not write into that slice's spare capacity:
// concurrent responses would race on it, and whatever the handler kept there
// would be overwritten.
func TestVaryMergeLeavesHandlerSliceAlone(t *testing.T) {
	backing := []string{"Origin", "Keep"}
	shared := backing[:1:2]
	body := textBody(24, 4000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header()["Vary"] = shared
		_, _ = w.Write(body)
	}))
	res, raw := record(h, request("GET", "gzip"))
	if got := varyTokens(res.Header); !slices.Equal(got, []string{"Origin", "Accept-Encoding"}) {
		t.Errorf("Vary tokens = %q, want Origin, Accept-Encoding", got)
	}
	if backing[1] != "Keep" || len(shared) != 1 || shared[0] != "Origin" {
		t.Errorf("the handler's Vary slice was written through: backing array now %q", backing)
	}
	checkBody(t, res.Header, raw, body)
}

// ---------------------------------------------------------------------------
// ETag, Accept-Ranges and conditional requests

func TestETagAndAcceptRanges(t *testing.T) {
	m := newMiddleware(t, WithEncodings(allCodings...))
	tests := []struct {
		name     string
		ae       string
		etag     string
		size     int
		wantCE   string
		wantETag string
		wantAR   string
	}{
		{"strong tag gets zstd suffix", "zstd", `"abc"`, 4000, Zstd, `"abc-zstd"`, ""},
		{"strong tag gets br suffix", "br", `"abc"`, 4000, Brotli, `"abc-br"`, ""},
		{"strong tag gets gzip suffix", "gzip", `"abc"`, 4000, Gzip, `"abc-gzip"`, ""},
		{"strong tag gets deflate suffix", "deflate", `"abc"`, 4000, Deflate, `"abc-deflate"`, ""},
		{"x-gzip request still gets gzip suffix", "x-gzip", `"abc"`, 4000, Gzip, `"abc-gzip"`, ""},
		{"empty strong tag", "zstd", `""`, 4000, Zstd, `"-zstd"`, ""},
		{"weak tag untouched", "zstd", `W/"abc"`, 4000, Zstd, `W/"abc"`, ""},
		{"not compressed: no Accept-Encoding", "", `"abc"`, 4000, "", `"abc"`, "bytes"},
		{"not compressed: below min size", "zstd", `"abc"`, 100, "", `"abc"`, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(12, tt.size)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("ETag", tt.etag)
				w.Header().Set("Accept-Ranges", "bytes")
				_, _ = w.Write(body)
			}))
			res, raw := record(h, request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			if got := res.Header.Get("ETag"); got != tt.wantETag {
				t.Errorf("ETag = %s, want %s", got, tt.wantETag)
			}
			if got := res.Header.Get("Accept-Ranges"); got != tt.wantAR {
				t.Errorf("Accept-Ranges = %q, want %q", got, tt.wantAR)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// The coding suffix is stripped from validators on the way in, so
// http.ServeContent still answers conditional requests, and the 304 carries
// the tag the 200 did (Caddy's 304 carries the plain tag: caddy #7096).
func TestConditionalRequestsThroughServeContent(t *testing.T) {
	content := textBody(13, 5000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	}))
	tests := []struct {
		name       string
		ae         string
		hdr        []string
		wantStatus int
		wantCE     string
		wantETag   string
	}{
		{"plain GET", "zstd", nil, 200, Zstd, `"v1-zstd"`},
		{"If-None-Match with the zstd tag", "zstd", []string{"If-None-Match", `"v1-zstd"`}, 304, "", `"v1-zstd"`},
		{"If-None-Match with the br tag", "br", []string{"If-None-Match", `"v1-br"`}, 304, "", `"v1-br"`},
		{"If-None-Match list", "gzip", []string{"If-None-Match", `"nope", "v1-gzip"`}, 304, "", `"v1-gzip"`},
		{"If-None-Match for identity", "", []string{"If-None-Match", `"v1"`}, 304, "", `"v1"`},
		{"If-None-Match with another version", "zstd", []string{"If-None-Match", `"v0-zstd"`}, 200, Zstd, `"v1-zstd"`},
		{"If-Match with the zstd tag", "zstd", []string{"If-Match", `"v1-zstd"`}, 200, Zstd, `"v1-zstd"`},
		{"If-Match with another version", "zstd", []string{"If-Match", `"v0-zstd"`}, 412, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("GET", tt.ae)
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				req.Header.Set(tt.hdr[i], tt.hdr[i+1])
			}
			res, raw := record(h, req)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			if tt.wantETag != "" {
				if got := res.Header.Get("ETag"); got != tt.wantETag {
					t.Errorf("ETag = %s, want %s", got, tt.wantETag)
				}
			}
			if tt.wantStatus == 200 {
				if ar := res.Header.Get("Accept-Ranges"); ar != "" {
					t.Errorf("Accept-Ranges = %q on a compressed response", ar)
				}
				checkBody(t, res.Header, raw, content)
			} else if len(raw) != 0 {
				t.Errorf("%d response has a %d-byte body", res.StatusCode, len(raw))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// WriteHeader and 1xx

func TestWriteHeader(t *testing.T) {
	body := textBody(14, 3000)
	tests := []struct {
		name        string
		handler     func(w http.ResponseWriter, spy *spyWriter) error
		wantStatus  int
		wantInfo    []int
		wantEncoded bool
	}{
		{"first final status wins", func(w http.ResponseWriter, _ *spyWriter) error {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			w.WriteHeader(http.StatusOK)
			_, err := w.Write(body)
			return err
		}, 404, nil, true},
		{"write implies 200", func(w http.ResponseWriter, _ *spyWriter) error {
			w.Header().Set("Content-Type", "text/plain")
			_, err := w.Write(body)
			w.WriteHeader(http.StatusInternalServerError)
			return err
		}, 200, nil, true},
		{"103 goes out at once, then the final status", func(w http.ResponseWriter, spy *spyWriter) error {
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
			if !slices.Equal(spy.informational, []int{103}) {
				return fmt.Errorf("after WriteHeader(103) the writer saw 1xx %v", spy.informational)
			}
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			_, err := w.Write(body)
			return err
		}, 404, []int{103}, true},
		{"two 1xx then final", func(w http.ResponseWriter, spy *spyWriter) error {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Content-Type", "text/plain")
			_, err := w.Write(body)
			return err
		}, 200, []int{103, 103}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := newSpy()
			var herr error
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				herr = tt.handler(w, spy)
			}))
			h.ServeHTTP(spy, request("GET", "zstd"))
			if herr != nil {
				t.Fatal(herr)
			}
			if spy.status != tt.wantStatus {
				t.Errorf("status = %d, want %d", spy.status, tt.wantStatus)
			}
			if !slices.Equal(spy.informational, tt.wantInfo) {
				t.Errorf("1xx = %v, want %v", spy.informational, tt.wantInfo)
			}
			if got := spy.sent.Get("Content-Encoding") == Zstd; got != tt.wantEncoded {
				t.Errorf("encoded = %v, want %v", got, tt.wantEncoded)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), body)
		})
	}
}

// httpcompression turns 103 then 404 into a final 200.
func TestEarlyHintsOverRealServer(t *testing.T) {
	body := textBody(15, 3000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(body)
	}))
	srv, c := newServer(t, h, false)
	var got1xx []int
	var link string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, header textproto.MIMEHeader) error {
		got1xx = append(got1xx, code)
		link = header.Get("Link")
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got1xx, []int{103}) || !strings.Contains(link, "style.css") {
		t.Errorf("1xx = %v with Link %q, want one 103 with the Link", got1xx, link)
	}
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("final status = %d, want 404", res.StatusCode)
	}
	if ce := res.Header.Get("Content-Encoding"); ce != Gzip {
		t.Errorf("Content-Encoding = %q, want gzip", ce)
	}
	checkBody(t, res.Header, raw, body)
}

// ---------------------------------------------------------------------------
// Flush

// prefixDecodes checks that the bytes sent so far decode to at least want.
func prefixDecodes(coding string, sent, want []byte) error {
	r, done, err := newDecoder(coding, bytes.NewReader(sent))
	if err != nil {
		return fmt.Errorf("%s header: %w", coding, err)
	}
	defer done()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		return fmt.Errorf("decoding the %d bytes sent so far: %w", len(sent), err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("bytes sent so far decode to %q, want %q", got, want)
	}
	return nil
}

func TestFlush(t *testing.T) {
	type step struct {
		write string
		flush string // "", "flusher" or "controller"
	}
	tests := []struct {
		name   string
		ct     string
		ae     string
		steps  []step
		wantCE string
	}{
		{"flush commits compression below min size", "text/plain", "zstd",
			[]step{{write: "hello"}, {flush: "flusher"}, {write: " world"}, {flush: "flusher"}}, Zstd},
		{"flush through ResponseController", "text/plain", "br",
			[]step{{write: "hello"}, {flush: "controller"}, {write: " world"}, {flush: "controller"}}, Brotli},
		{"flush before the first write", "text/plain", "gzip",
			[]step{{flush: "flusher"}, {write: "hello"}, {flush: "flusher"}}, Gzip},
		{"controller flush before the first write", "application/json", "zstd",
			[]step{{flush: "controller"}, {write: `{"a":1}`}, {flush: "controller"}}, Zstd},
		{"flush on ineligible content passes through", "image/png", "zstd",
			[]step{{write: "\x89PNG"}, {flush: "flusher"}, {write: "more"}, {flush: "controller"}}, ""},
		{"flush without Accept-Encoding passes through", "text/plain", "",
			[]step{{write: "hello"}, {flush: "flusher"}, {write: " world"}, {flush: "controller"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := newSpy()
			var written []byte
			var errs []error
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				for _, s := range tt.steps {
					if s.write != "" {
						_, _ = io.WriteString(w, s.write)
						written = append(written, s.write...)
						continue
					}
					before := spy.flushes
					switch s.flush {
					case "flusher":
						w.(http.Flusher).Flush()
					case "controller":
						if err := http.NewResponseController(w).Flush(); err != nil {
							errs = append(errs, fmt.Errorf("ResponseController.Flush: %w", err))
						}
					}
					if spy.status != http.StatusOK {
						errs = append(errs, fmt.Errorf("after Flush the status has not gone out"))
						continue
					}
					if spy.flushes == before {
						errs = append(errs, fmt.Errorf("Flush did not reach the underlying writer"))
					}
					if ce := spy.sent.Get("Content-Encoding"); ce != tt.wantCE {
						errs = append(errs, fmt.Errorf("headers sent with Content-Encoding %q, want %q", ce, tt.wantCE))
					} else if err := prefixDecodes(ce, spy.body.Bytes(), written); err != nil {
						errs = append(errs, err)
					}
				}
			}))
			h.ServeHTTP(spy, request("GET", tt.ae))
			for _, err := range errs {
				t.Error(err)
			}
			if cl := spy.sent.Get("Content-Length"); cl != "" && tt.wantCE != "" {
				t.Errorf("flushed compressed response has Content-Length %s", cl)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), written)
		})
	}
}

// chi sends the headers without Content-Encoding on a Flush before the first
// write, then a gzip body.
func TestFlushBeforeFirstWriteOverRealServer(t *testing.T) {
	for _, ct := range []string{"text/plain", ""} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			body := textBody(16, 3000)
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if ct != "" {
					w.Header().Set("Content-Type", ct)
				}
				w.(http.Flusher).Flush()
				_, _ = w.Write(body)
			}))
			srv, c := newServer(t, h, false)
			res, raw := fetch(t, c, srv.URL, "gzip")
			if ct != "" && res.Header.Get("Content-Encoding") != Gzip {
				t.Errorf("Content-Encoding = %q, want gzip", res.Header.Get("Content-Encoding"))
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// Each server-sent event must reach the client, decodable, while the handler
// is still blocked before the next one (httpcompression #58, nytimes #87).
func TestServerSentEventsStreamPerEvent(t *testing.T) {
	m := newMiddleware(t, WithEncodings(allCodings...))
	for _, coding := range allCodings {
		t.Run(coding, func(t *testing.T) {
			release := make(chan struct{})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				_, _ = io.WriteString(w, "data: event 1\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, "data: event 2\n\n")
				_ = http.NewResponseController(w).Flush()
			}))
			srv, c := newServer(t, h, false)
			// Bounds a response that holds event 1 back (the handler waits
			// for the client); a few seconds is ample even under -race.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			req.Header.Set("Accept-Encoding", coding)
			res, err := c.Do(req)
			if err != nil {
				close(release)
				t.Fatal(err)
			}
			defer res.Body.Close()
			if ce := res.Header.Get("Content-Encoding"); ce != coding {
				close(release)
				t.Fatalf("Content-Encoding = %q, want %q", ce, coding)
			}
			dec, done, err := newDecoder(coding, res.Body)
			if err != nil {
				close(release)
				t.Fatalf("decoder: %v", err)
			}
			defer done()
			ev := make([]byte, len("data: event 1\n\n"))
			_, err = io.ReadFull(dec, ev)
			close(release)
			if err != nil || string(ev) != "data: event 1\n\n" {
				t.Fatalf("first event before the second was written: %q, %v", ev, err)
			}
			rest, err := io.ReadAll(dec)
			if err != nil || string(rest) != "data: event 2\n\n" {
				t.Fatalf("rest of stream: %q, %v", rest, err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Hijack, Unwrap, ResponseController, ReaderFrom

func TestHijackPassesThrough(t *testing.T) {
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "hijack: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		_, _ = brw.WriteString(line)
		_ = brw.Flush()
	}))
	srv, c := newServer(t, h, false)
	c.Timeout = 0 // a client timeout wraps the 101 body, hiding its Write
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "zstd, gzip")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status = %d (%s), want 101", res.StatusCode, b)
	}
	rw, ok := res.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("101 body is %T, not writable", res.Body)
	}
	if _, err := io.WriteString(rw, "ping\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil || got != "ping\n" {
		t.Fatalf("echo over hijacked connection = %q, %v", got, err)
	}
}

func TestUnwrapAndResponseController(t *testing.T) {
	t.Run("Unwrap returns the underlying writer", func(t *testing.T) {
		spy := newSpy()
		var got http.ResponseWriter
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if ok {
				got = u.Unwrap()
			}
		}))
		h.ServeHTTP(spy, request("GET", "zstd"))
		if got != http.ResponseWriter(spy) {
			t.Fatalf("Unwrap() = %T %p, want the spy %p", got, got, spy)
		}
	})
	t.Run("Hijack is refused when the underlying writer cannot", func(t *testing.T) {
		var err error
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _, err = http.NewResponseController(w).Hijack()
		}))
		h.ServeHTTP(newSpy(), request("GET", "zstd"))
		if !errors.Is(err, http.ErrNotSupported) {
			t.Fatalf("Hijack over a writer without it: %v, want http.ErrNotSupported", err)
		}
	})
	t.Run("deadlines over a real server", func(t *testing.T) {
		body := textBody(17, 4000)
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				http.Error(w, "SetWriteDeadline: "+err.Error(), http.StatusInternalServerError)
				return
			}
			if err := rc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
				http.Error(w, "SetReadDeadline: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		}))
		srv, c := newServer(t, h, false)
		res, raw := fetch(t, c, srv.URL, "zstd")
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, raw)
		}
		checkBody(t, res.Header, raw, body)
	})
}

// When the response is not being encoded, io.Copy must reach the underlying
// writer's ReadFrom (sendfile and splice live there); when it is, the bytes
// must go through the encoder.
func TestReadFrom(t *testing.T) {
	tests := []struct {
		name     string
		ae       string
		header   map[string]string
		size     int
		serve    bool // through http.ServeContent (declares Content-Length) rather than io.Copy
		wantPass bool
	}{
		{"ineligible content type", "zstd", map[string]string{"Content-Type": "image/png"}, 100000, false, true},
		{"no Accept-Encoding", "", map[string]string{"Content-Type": "text/plain"}, 100000, false, true},
		{"already encoded", "zstd", map[string]string{"Content-Type": "text/plain", "Content-Encoding": "gzip"}, 100000, false, true},
		{"no-transform", "zstd", map[string]string{"Content-Type": "text/plain", "Cache-Control": "no-transform"}, 100000, false, true},
		{"compressing", "zstd", map[string]string{"Content-Type": "text/plain"}, 100000, false, false},
		{"small static image through ServeContent", "zstd", map[string]string{"Content-Type": "image/png"}, 10000, true, true},
		{"small static text without Accept-Encoding through ServeContent", "", map[string]string{"Content-Type": "text/plain"}, 10000, true, true},
		{"static text compressed through ServeContent", "zstd", map[string]string{"Content-Type": "text/plain"}, 10000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(18, tt.size)
			spy := newSpy()
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				if tt.serve {
					http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
					return
				}
				if _, err := io.Copy(w, onlyReader{bytes.NewReader(body)}); err != nil {
					t.Errorf("io.Copy: %v", err)
				}
			}))
			h.ServeHTTP(spy, request("GET", tt.ae))
			if pass := spy.readFroms > 0; pass != tt.wantPass {
				t.Errorf("underlying ReadFrom called %d times, want passthrough %v", spy.readFroms, tt.wantPass)
			}
			if tt.wantPass {
				if !bytes.Equal(spy.body.Bytes(), body) {
					t.Errorf("body changed: %d bytes, want %d", spy.body.Len(), len(body))
				}
				return
			}
			if ce := spy.sent.Get("Content-Encoding"); ce != Zstd {
				t.Errorf("Content-Encoding = %q, want zstd", ce)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), body)
		})
	}
}

// ---------------------------------------------------------------------------
// Round trips through every coding and level, checked by the Go decoders and
// the reference C tools.

func TestRoundTripEveryCodingAndLevel(t *testing.T) {
	small, large := textBody(19, 8000), textBody(20, 64<<10+123)
	tests := []struct {
		coding string
		levels []int
		large  []int // levels also run on a body that outgrows the buffer
	}{
		{Gzip, []int{-3, -2, 1, 5, 9}, []int{-3, -2, 1, 5, 9}},
		{Deflate, []int{-3, -2, 1, 5, 9}, []int{-3, 1, 9}},
		{Zstd, []int{1, 3, 7, 11, 19, 22}, []int{1, 3, 11}},
		{Brotli, []int{0, 1, 4, 6, 9, 11}, []int{0, 4, 6}},
	}
	for _, tt := range tests {
		for _, level := range tt.levels {
			for _, body := range [][]byte{small, large} {
				if len(body) == len(large) && !slices.Contains(tt.large, level) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%d", tt.coding, level, len(body)), func(t *testing.T) {
					m := newMiddleware(t, WithEncodings(tt.coding), WithLevel(tt.coding, level))
					res, raw := record(m.Handler(writeText("text/html", body, 5000)), request("GET", tt.coding))
					if ce := res.Header.Get("Content-Encoding"); ce != tt.coding {
						t.Fatalf("Content-Encoding = %q, want %q", ce, tt.coding)
					}
					checkBody(t, res.Header, raw, body)
					if tt.coding == Deflate {
						return // compress/zlib in checkBody is the independent decoder
					}
					if got := decodeCLI(t, tt.coding, raw); !bytes.Equal(got, body) {
						t.Fatalf("reference tool decoded %d bytes, want %d", len(got), len(body))
					}
				})
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Concurrency, allocations, goroutines, panics, departed clients

// Each of 400 parallel requests over a real server gets its own body back,
// across codings and across the min-size and buffer boundaries.
func TestConcurrentRequestsGetTheirOwnBodies(t *testing.T) {
	sizes := []int{0, 1, DefaultMinSize - 1, DefaultMinSize, DefaultMinSize + 1, 8000,
		DefaultBufferSize - 1, DefaultBufferSize, DefaultBufferSize + 1, 45000}
	accepts := []struct{ ae, coding string }{
		{"zstd", Zstd}, {"br", Brotli}, {"gzip", Gzip}, {"deflate", Deflate}, {"", ""},
		{"gzip;q=0.5, br;q=0.9", Brotli}, {"*", Zstd}, {"identity", ""}, {"x-gzip, zstd;q=0", Gzip},
	}
	bodyFor := func(id, n int) []byte {
		if id%11 == 0 {
			return randomBody(id, n)
		}
		return textBody(id, n)
	}
	m := newMiddleware(t, WithEncodings(allCodings...))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := bodyFor(id, n)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		chunk := 1 + (id*7919)%9000
		for off := 0; off < len(body); off += chunk {
			if _, err := w.Write(body[off:min(off+chunk, len(body))]); err != nil {
				return
			}
			if id%5 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	}))
	srv, c := newServer(t, h, false)
	c.Timeout = 2 * time.Minute // generous: -race on a loaded 2-core machine; a hang still ends
	const requests = 400
	var wg sync.WaitGroup
	for id := range requests {
		wg.Go(func() {
			n := sizes[id%len(sizes)]
			a := accepts[(id/len(sizes))%len(accepts)]
			req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/?id=%d&n=%d", srv.URL, id, n), nil)
			if a.ae != "" {
				req.Header.Set("Accept-Encoding", a.ae)
			}
			res, err := c.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", id, err)
				return
			}
			raw, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Errorf("request %d: reading: %v", id, err)
				return
			}
			ce := res.Header.Get("Content-Encoding")
			if ce != "" && ce != a.coding {
				t.Errorf("request %d (Accept-Encoding %q): Content-Encoding %q, want %q or none", id, a.ae, ce, a.coding)
				return
			}
			got, err := decode(ce, raw)
			if err != nil {
				t.Errorf("request %d (%q, %d bytes): decoding: %v", id, ce, n, err)
				return
			}
			if want := bodyFor(id, n); !bytes.Equal(got, want) {
				t.Errorf("request %d (%q, %d bytes): got %d bytes not its own body", id, ce, n, len(got))
			}
		})
	}
	wg.Wait()
}

// allocWriter is the smallest reusable http.ResponseWriter: the test clears
// its header map between runs, so only the middleware's allocations count.
type allocWriter struct {
	h http.Header
	n int
}

func (w *allocWriter) Header() http.Header         { return w.h }
func (w *allocWriter) WriteHeader(int)             {}
func (w *allocWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts need warm pools")
	}
	// A compressed 16 KiB response that ends inside the buffer gets three
	// header values from the middleware: Content-Encoding, Vary and
	// Content-Length. Their []string backing arrays live in the one
	// per-response writer (1 allocation, kept per response so a goroutine
	// the handler leaves behind can never write into a later response), and
	// the Content-Length digits are a new string (1 allocation). Buffers and
	// encoders come from pools. Anything above two is a per-response cost
	// that pooling or backing arrays should remove.
	const maxAllocs = 2
	page := textBody(21, 16<<10)
	ct := []string{"text/html; charset=utf-8"}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct // a shared slice: the handler itself allocates nothing
		_, _ = w.Write(page)
	})
	for _, coding := range allCodings {
		t.Run(coding, func(t *testing.T) {
			h := newMiddleware(t, WithEncodings(coding)).Handler(next)
			req := request("GET", coding)
			w := &allocWriter{h: make(http.Header, 8)}
			serve := func() {
				clear(w.h)
				w.n = 0
				h.ServeHTTP(w, req)
			}
			serve()
			if ce := w.h.Get("Content-Encoding"); ce != coding || w.n == 0 || w.n >= len(page) {
				t.Fatalf("warm-up response: Content-Encoding %q, %d bytes; want %s and fewer than %d", ce, w.n, coding, len(page))
			}
			allocs := testing.AllocsPerRun(200, serve)
			t.Logf("%s: %.1f allocations per response", coding, allocs)
			if allocs > maxAllocs {
				t.Errorf("%s: %.1f allocations per response, want at most %d", coding, allocs, maxAllocs)
			}
		})
	}
}

// waitGoroutines waits, bounded, for the goroutine count to fall back to at
// most want, and returns the last count seen.
func waitGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > want; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func TestNoGoroutineOutlivesAResponse(t *testing.T) {
	m := newMiddleware(t, WithEncodings(allCodings...))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		writeChunks(w, textBody(n, n), 4000)
		if n%3 == 0 {
			w.(http.Flusher).Flush()
		}
	}))
	sizes := []int{10, 2000, 20000, 40000}

	t.Run("in process", func(t *testing.T) {
		before := runtime.NumGoroutine()
		for i := range 100 {
			n := sizes[i%len(sizes)]
			req := request("GET", allCodings[i%len(allCodings)])
			req.URL.RawQuery = "n=" + strconv.Itoa(n)
			res, raw := record(h, req)
			checkBody(t, res.Header, raw, textBody(n, n))
		}
		if after := waitGoroutines(before); after > before {
			t.Errorf("goroutines: %d before, %d after 100 in-process responses", before, after)
		}
	})
	t.Run("over a real server", func(t *testing.T) {
		before := runtime.NumGoroutine()
		srv := httptest.NewServer(h)
		tr := &http.Transport{DisableCompression: true}
		c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
		for i := range 100 {
			n := sizes[i%len(sizes)]
			res, raw := fetch(t, c, srv.URL+"/?n="+strconv.Itoa(n), allCodings[i%len(allCodings)])
			checkBody(t, res.Header, raw, textBody(n, n))
		}
		tr.CloseIdleConnections()
		srv.Close()
		if after := waitGoroutines(before); after > before {
			t.Errorf("goroutines: %d before, %d after 100 served requests and shutdown", before, after)
		}
	})
}

type handlerPanic struct{ stage string }

// A handler that panics must not end with a valid end-of-stream: the client
// has to see a broken response, not a short body that looks complete. The
// panic propagates, and the pools serve correct responses afterwards.
func TestPanickingHandler(t *testing.T) {
	m := newMiddleware(t, WithEncodings(allCodings...))
	body := textBody(22, 40000)
	panicky := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch stage := r.URL.Query().Get("stage"); stage {
		case "buffered":
			_, _ = w.Write(body[:2000])
			panic(handlerPanic{stage})
		case "flushed":
			_, _ = w.Write(body[:100])
			w.(http.Flusher).Flush()
			panic(handlerPanic{stage})
		case "streaming":
			_, _ = w.Write(body)
			panic(handlerPanic{stage})
		case "abort":
			_, _ = w.Write(body)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}))
	checkHealthy := func(t *testing.T, coding string) {
		t.Helper()
		for _, size := range []int{3000, len(body), 3000, len(body)} {
			h := m.Handler(writeText("text/plain", body[:size], 3000))
			res, raw := record(h, request("GET", coding))
			if ce := res.Header.Get("Content-Encoding"); ce != coding {
				t.Fatalf("after panics: Content-Encoding %q, want %q", ce, coding)
			}
			checkBody(t, res.Header, raw, body[:size])
		}
	}

	for _, coding := range allCodings {
		for _, stage := range []string{"buffered", "flushed", "streaming"} {
			t.Run(coding+"/"+stage+"/recorder", func(t *testing.T) {
				req := request("GET", coding)
				req.URL.RawQuery = "stage=" + stage
				rec := httptest.NewRecorder()
				func() {
					defer func() {
						if p := recover(); p != (handlerPanic{stage}) {
							t.Errorf("recovered %v, want the handler's panic to propagate", p)
						}
					}()
					panicky.ServeHTTP(rec, req)
				}()
				raw := rec.Body.Bytes()
				if ce := rec.Header().Get("Content-Encoding"); ce != "" && len(raw) > 0 {
					if got, err := decode(ce, raw); err == nil {
						t.Errorf("%d bytes sent before the panic decode as a complete %s stream of %d bytes", len(raw), ce, len(got))
					}
				}
			})
		}
		t.Run(coding+"/server", func(t *testing.T) {
			srv, c := newServer(t, panicky, true)
			for _, stage := range []string{"streaming", "abort"} {
				req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/?stage="+stage, nil)
				req.Header.Set("Accept-Encoding", coding)
				res, err := c.Do(req)
				if err != nil {
					continue // the server gave up before the headers: broken, as it should be
				}
				raw, rerr := io.ReadAll(res.Body)
				res.Body.Close()
				if rerr == nil {
					if got, err := decode(res.Header.Get("Content-Encoding"), raw); err == nil {
						t.Errorf("%s: client read a complete, valid response of %d bytes from a panicking handler", stage, len(got))
					}
				}
			}
			checkHealthy(t, coding)
		})
	}
}

// A client that goes away mid-stream leaves the handler writing into a dead
// connection; the handler returns and the pools stay healthy.
func TestClientGoneMidStream(t *testing.T) {
	m := newMiddleware(t, WithEncodings(allCodings...))
	chunk := textBody(23, 16<<10)
	for _, coding := range []string{Zstd, Brotli, Gzip} {
		t.Run(coding, func(t *testing.T) {
			started := make(chan struct{})
			finished := make(chan int, 1)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("gone") == "" {
					writeText("text/plain", chunk, 0)(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/plain")
				errs, i := 0, 0
				// Bounded: stop after enough failed writes to show the
				// connection is gone, or after ~32 MiB.
				for ; i < 2000 && errs < 20; i++ {
					if _, err := w.Write(chunk); err != nil {
						errs++
					}
					if err := http.NewResponseController(w).Flush(); err != nil {
						errs++
					}
					if i == 0 {
						close(started)
					}
				}
				finished <- errs
			}))
			srv, c := newServer(t, h, true)
			ctx, cancel := context.WithCancel(t.Context())
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?gone=1", nil)
			req.Header.Set("Accept-Encoding", coding)
			res, err := c.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			<-started
			_, _ = io.ReadFull(res.Body, make([]byte, 100))
			cancel()
			res.Body.Close()
			select {
			case errs := <-finished:
				if errs == 0 {
					t.Errorf("handler saw no write errors on a dead connection")
				}
			case <-time.After(15 * time.Second):
				t.Fatal("handler still writing 15s after the client left")
			}
			for range 3 {
				res, raw := fetch(t, c, srv.URL, coding)
				if ce := res.Header.Get("Content-Encoding"); ce != coding {
					t.Fatalf("after the client left: Content-Encoding %q, want %q", ce, coding)
				}
				checkBody(t, res.Header, raw, chunk)
			}
		})
	}
}
