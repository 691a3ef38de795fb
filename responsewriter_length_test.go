package squeeze_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

func TestDeclaredLengthWithinTheBufferIsBuffered(t *testing.T) {
	m := squeeze.MustNew()
	tests := []struct {
		name         string
		body         []byte
		wantEncoding string
	}{
		{"compressible body gets an encoded Content-Length", textBody(1, 6398), "zstd"},
		{"incompressible body goes out plain", randomBody(1, 20000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/javascript")
				w.Header().Set("Content-Length", strconv.Itoa(len(tt.body)))
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(tt.body)
			}))
			rec := serve(h, http.MethodGet, "zstd")
			if got := rec.Header().Get("Content-Encoding"); got != tt.wantEncoding {
				t.Fatalf("Content-Encoding = %q, want %q", got, tt.wantEncoding)
			}
			if got, want := rec.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()); got != want {
				t.Errorf("Content-Length = %q, want %s (the bytes sent)", got, want)
			}
			if tt.wantEncoding == "" && !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Errorf("plain body changed")
			}
		})
	}
}

func TestServeContentOverRealServerHasContentLength(t *testing.T) {
	// Hex compresses to half: past the 2 KiB under which net/http would
	// find the length itself.
	body := []byte(hex.EncodeToString(randomBody(1, 10000)))
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "app.js", time.Time{}, bytes.NewReader(body))
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		res, raw := fetch(t, c, srv.URL, "gzip")
		if res.Header.Get("Content-Encoding") != "gzip" || res.ContentLength != int64(len(raw)) || len(res.TransferEncoding) > 0 {
			t.Fatalf("Content-Encoding %q, Content-Length %d for %d bytes, Transfer-Encoding %q; want gzip with its length",
				res.Header.Get("Content-Encoding"), res.ContentLength, len(raw), res.TransferEncoding)
		}
	})
}

func TestDeclaredLengthBeyondTheBufferStreams(t *testing.T) {
	body := textBody(1, 100<<10)
	h := squeeze.MustNew(squeeze.WithBufferSize(8 << 10)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:100])
		if w.Header().Get("Content-Encoding") != "zstd" {
			t.Errorf("first write did not start the stream")
		}
		_, _ = w.Write(body[100:])
	}))
	rec := serve(h, http.MethodGet, "zstd")
	if rec.Header().Get("Content-Length") != "" {
		t.Errorf("Content-Length = %q on a stream", rec.Header().Get("Content-Length"))
	}
	if got := testtool.Decode(t, "zstd", rec.Body.Bytes()); !bytes.Equal(got, body) {
		t.Errorf("decoded %d bytes, want %d", len(got), len(body))
	}
}

// TestBodyShorterThanDeclaredIsNotAWholeStream pins the silent truncation
// fixed here: a handler that declares a length and writes less must not
// produce a complete, valid encoded stream.
func TestBodyShorterThanDeclaredIsNotAWholeStream(t *testing.T) {
	body := textBody(1, 200<<10)
	for _, size := range []int{10 << 10, 150 << 10} { // within, beyond the buffer
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Length", strconv.Itoa(size))
				_, _ = w.Write(body[:size/2])
			}))
			rec := serve(h, http.MethodGet, "zstd")
			switch rec.Header().Get("Content-Encoding") {
			case "":
				// Plain, with the declared length: net/http reports the
				// short body by closing the connection.
				if rec.Header().Get("Content-Length") != strconv.Itoa(size) {
					t.Errorf("plain short body lost its declared length: %q", rec.Header().Get("Content-Length"))
				}
			case "zstd":
				if _, err := testtool.TryDecode("zstd", rec.Body.Bytes()); err == nil {
					t.Errorf("a body cut to half its declared length decoded as a whole stream")
				}
			}
		})
	}
}

func TestBodyLongerThanDeclaredFailsWithErrContentLength(t *testing.T) {
	body := textBody(1, 200<<10)
	for _, size := range []int{10 << 10, 150 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			var werr error
			h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Length", strconv.Itoa(size))
				_, _ = w.Write(body[:size])
				_, werr = w.Write(body[size : size+10])
			}))
			rec := serve(h, http.MethodGet, "zstd")
			if !errors.Is(werr, http.ErrContentLength) {
				t.Errorf("write past the declared length: %v, want http.ErrContentLength", werr)
			}
			if got := testtool.Decode(t, "zstd", rec.Body.Bytes()); !bytes.Equal(got, body[:size]) {
				t.Errorf("decoded %d bytes, want the %d declared", len(got), size)
			}
		})
	}
}

func TestReadFromPastDeclaredLengthIsCut(t *testing.T) {
	body := textBody(1, 8<<10)
	var rerr error
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "4096")
		// A reader without WriteTo, so that io.Copy reaches ReadFrom.
		_, rerr = io.Copy(w, struct{ io.Reader }{bytes.NewReader(body)})
	}))
	rec := serve(h, http.MethodGet, "zstd")
	if !errors.Is(rerr, http.ErrContentLength) {
		t.Errorf("io.Copy past the declared length: %v, want http.ErrContentLength", rerr)
	}
	if got := testtool.Decode(t, "zstd", rec.Body.Bytes()); !bytes.Equal(got, body[:4096]) {
		t.Errorf("decoded %d bytes, want the 4096 declared", len(got))
	}
}

func TestTrailersAreNeverTurnedIntoHeaders(t *testing.T) {
	for _, declare := range []string{"Trailer field", "TrailerPrefix"} {
		t.Run(declare, func(t *testing.T) {
			h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				if declare == "Trailer field" {
					w.Header().Set("Trailer", "X-Sum")
				}
				_, _ = w.Write(textBody(1, 4096))
				if declare == "Trailer field" {
					w.Header().Set("X-Sum", "42")
				} else {
					w.Header().Set(http.TrailerPrefix+"X-Sum", "42")
				}
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "zstd")
				// HTTP/1.1 sends trailers only after a chunked body; an
				// HTTP/2 server may add a length, as trailers have a frame
				// of their own there.
				if res.ProtoMajor == 1 && res.ContentLength >= 0 || res.Header.Get("X-Sum") != "" {
					t.Errorf("Content-Length %d, header X-Sum %q: trailers became headers", res.ContentLength, res.Header.Get("X-Sum"))
				}
				if res.Trailer.Get("X-Sum") != "42" {
					t.Errorf("trailer X-Sum = %q, want 42", res.Trailer.Get("X-Sum"))
				}
				if got := testtool.Decode(t, res.Header.Get("Content-Encoding"), raw); !bytes.Equal(got, textBody(1, 4096)) {
					t.Errorf("body did not round-trip")
				}
			})
		})
	}
}

// A body of exactly the buffer size copied through ReadFrom
// (http.ServeContent copies with io.CopyN) is sent whole with its encoded
// Content-Length, as the same body written with Write is: a full buffer is
// not an overflowing one until the source says it has more. The README
// promises this for "a handler's declared Content-Length that fits in the
// buffer (http.ServeContent, http.FileServer)".
func TestServeContentOfExactlyTheBufferSizeHasContentLength(t *testing.T) {
	body := textBody(7, squeeze.DefaultBufferSize)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "app.js", time.Time{}, bytes.NewReader(body))
	}))
	rec := serve(h, "GET", "zstd")
	if rec.Header().Get("Content-Encoding") != "zstd" {
		t.Fatalf("Content-Encoding %q, want zstd", rec.Header().Get("Content-Encoding"))
	}
	if got, want := rec.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()); got != want {
		t.Errorf("Content-Length %q, want %s: a declared length that fits the buffer is sent whole", got, want)
	}
	checkBody(t, rec.Header(), rec.Body.Bytes(), body)
}
