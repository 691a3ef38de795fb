package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/squeezehttp/squeeze"
)

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
		opts    []squeeze.Option
		size    int
		random  bool
		chunk   int
		flushAt int // Flush after this many bytes (0: never)
		setCL   bool
		want    expect
	}{
		{name: "empty body", size: 0, want: plainLength},
		{name: "below min size goes out plain", size: squeeze.DefaultMinSize - 1, want: plainLength},
		{name: "below min size in small writes", size: squeeze.DefaultMinSize - 1, chunk: 10, want: plainLength},
		{name: "below a min size larger than net/http's own buffer", opts: []squeeze.Option{squeeze.WithMinSize(8000)}, size: 7000, chunk: 100, want: plainLength},
		{name: "at min size is compressed", size: squeeze.DefaultMinSize, want: compressedLength},
		{name: "body ending inside the buffer is compressed with a length", size: 20000, chunk: 1000, want: compressedLength},
		{name: "body of one byte less than the buffer", size: squeeze.DefaultBufferSize - 1, want: compressedLength},
		{name: "body outgrowing the buffer streams", size: 100000, want: compressedChunked},
		{name: "body outgrowing the buffer in small writes", size: 100000, chunk: 777, want: compressedChunked},
		{name: "flush commits to streaming", size: 8000, flushAt: 4000, chunk: 4000, want: compressedChunked},
		{name: "incompressible body is sent plain", size: 4096, random: true, want: plainLength},
		{name: "incompressible body with min size 0", opts: []squeeze.Option{squeeze.WithMinSize(0)}, size: 1, random: true, want: plainLength},
		{name: "handler Content-Length within the buffer is buffered", size: 20000, setCL: true, want: compressedLength},
		{name: "handler Content-Length beyond the buffer streams at once", size: 40000, setCL: true, want: compressedChunked},
		{name: "handler Content-Length below min size stays", size: 500, setCL: true, want: plainLength},
		{name: "small buffer is raised to min size: below", opts: []squeeze.Option{squeeze.WithBufferSize(100), squeeze.WithMinSize(2000)}, size: 1500, chunk: 50, want: plainLength},
		// Streaming cases keep the encoded size above net/http's own 2 KiB
		// buffer, which would otherwise add a Content-Length itself.
		{name: "small buffer is raised to min size: above", opts: []squeeze.Option{squeeze.WithBufferSize(100), squeeze.WithMinSize(2000)}, size: 10000, chunk: 50, want: compressedChunked},
		{name: "custom buffer: ends inside", opts: []squeeze.Option{squeeze.WithBufferSize(4096)}, size: 3000, want: compressedLength},
		{name: "custom buffer: outgrows", opts: []squeeze.Option{squeeze.WithBufferSize(4096)}, size: 12000, want: compressedChunked},
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
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "zstd")
				ce := res.Header.Get("Content-Encoding")
				// HTTP/1.1 streams a body of unknown length chunked. HTTP/2
				// has no Transfer-Encoding: there a streamed body is one
				// without a Content-Length.
				chunked := slices.Contains(res.TransferEncoding, "chunked")
				if srv.EnableHTTP2 {
					if len(res.TransferEncoding) != 0 {
						t.Errorf("Transfer-Encoding %q over HTTP/2", res.TransferEncoding)
					}
					chunked = res.ContentLength == -1
				}
				switch tt.want {
				case plainLength:
					if ce != "" || res.ContentLength != int64(len(body)) || chunked {
						t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want plain with Content-Length %d",
							ce, res.ContentLength, res.TransferEncoding, len(body))
					}
				case compressedLength:
					if ce != squeeze.Zstd || res.ContentLength != int64(len(raw)) || chunked {
						t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want zstd in one piece with Content-Length %d",
							ce, res.ContentLength, res.TransferEncoding, len(raw))
					}
				case compressedChunked:
					if srv.EnableHTTP2 && tt.flushAt == 0 && len(raw) <= 4096 {
						// The HTTP/2 server holds 4 KiB of a response before
						// it commits, and adds a Content-Length of its own to
						// a body that ends inside: only the coding and any
						// length can be checked for cases sized for HTTP/1.1.
						if ce != squeeze.Zstd || (res.ContentLength != -1 && res.ContentLength != int64(len(raw))) {
							t.Errorf("got Content-Encoding %q, Content-Length %d; want zstd, streamed or with Content-Length %d",
								ce, res.ContentLength, len(raw))
						}
						break
					}
					if tt.flushAt == 0 && len(raw) <= 2048 {
						t.Fatalf("test body encodes to %d bytes, inside net/http's 2 KiB buffer: framing cannot tell", len(raw))
					}
					if ce != squeeze.Zstd || res.ContentLength != -1 || !chunked {
						t.Errorf("got Content-Encoding %q, Content-Length %d, Transfer-Encoding %q; want zstd, chunked",
							ce, res.ContentLength, res.TransferEncoding)
					}
				}
				if n := countFold(varyTokens(res.Header), "Accept-Encoding"); n != 1 {
					t.Errorf("Vary = %q, want Accept-Encoding once on eligible content", res.Header.Values("Vary"))
				}
				checkBody(t, res.Header, raw, body)
			})
		})
	}
}

// The recorder shows the header map as it was when the status went out: the
// Content-Length of a buffered compressed body must already be the encoded
// length there.
func TestBufferedCompressedBodyHasEncodedLength(t *testing.T) {
	for _, coding := range allCodings {
		t.Run(coding, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
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
