package squeeze_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The Middleware's side of request decoding: internal/decode pins the
// decoding itself; these tests pin what Handler and the options make of it.

// encodedPost is a POST carrying body with the given Content-Encoding field
// lines and its Content-Length.
func encodedPost(body []byte, lines ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if len(lines) > 0 {
		r.Header["Content-Encoding"] = lines
	}
	r.Header.Set("Content-Type", "text/html")
	return r
}

func TestHandlerRefusesWhatItCannotDecodeWith415(t *testing.T) {
	body := testtool.Encode(t, squeeze.Gzip, []byte("hello"))
	m := newMiddleware(t)
	for _, lines := range [][]string{{"compress"}, {"dcz"}, {"*"}, {"gzip;q=1"}, {"gzip, snappy"}, {"identity, foo"}, {"gzip, br, zstd"}, {"gzip", "gzip", "gzip"}} {
		t.Run(strings.Join(lines, "|"), func(t *testing.T) {
			called := false
			rec := httptest.NewRecorder()
			m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).ServeHTTP(rec, encodedPost(body, lines...))
			if called || rec.Code != http.StatusUnsupportedMediaType {
				t.Errorf("handler called %v, status %d; want 415 without the handler", called, rec.Code)
			}
			if got := rec.Header().Get("Accept-Encoding"); got != "zstd, br, gzip, deflate" {
				t.Errorf("Accept-Encoding %q, want the codings squeeze decodes", got)
			}
		})
	}
}

func TestHandlers415HasNoAcceptEncoding(t *testing.T) {
	m := newMiddleware(t)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
	}))
	body := testtool.Encode(t, squeeze.Gzip, []byte("<p>not json</p>"))
	for _, lines := range [][]string{nil, {"gzip"}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, encodedPost(body, lines...))
		if rec.Code != http.StatusUnsupportedMediaType {
			t.Fatalf("%q: status %d, want the handler's 415", lines, rec.Code)
		}
		if v, ok := rec.Header()["Accept-Encoding"]; ok {
			t.Errorf("%q: a 415 for another reason carries Accept-Encoding %q", lines, v)
		}
	}
}

// Handler hands decoding the server's own ResponseWriter, so a body past
// the cap has the connection closed: the rest of it is never read.
func TestHandlerClosesTheConnectionOfABodyOverTheCap(t *testing.T) {
	m := newMiddleware(t, squeeze.WithMaxDecompressedSize(64<<10))
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tooLarge *http.MaxBytesError
		if _, err := io.Copy(io.Discard, r.Body); errors.As(err, &tooLarge) {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		}
	})))
	defer srv.Close()
	bomb := testtool.Encode(t, squeeze.Zstd, make([]byte, 1<<20))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(bytes.NewReader(bomb)))
	req.Header.Set("Content-Encoding", squeeze.Zstd)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("status %d, Close %v; want 413 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestWithRequestDecodingOffPassesBodiesThrough covers a service that wants
// compressed request bodies as they came: none of the limits applies.
func TestWithRequestDecodingOffPassesBodiesThrough(t *testing.T) {
	gz := testtool.Encode(t, squeeze.Gzip, []byte("hello, hello, hello"))
	cases := []struct {
		name  string
		body  []byte
		lines []string
	}{
		{"gzip", gz, []string{"gzip"}},
		{"unknown coding", []byte("LZ4 bytes"), []string{"lz4"}},
		{"three layers", gz, []string{"gzip, gzip, gzip"}},
		{"empty body", nil, []string{"zstd"}},
		{"corrupt", []byte("not zstd"), []string{"zstd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithRequestDecoding(false), squeeze.WithMaxDecompressedSize(4))
			r := encodedPost(tc.body, tc.lines...)
			r.Header.Set("Content-Length", fmt.Sprint(len(tc.body)))
			var (
				called bool
				header http.Header
				length int64
				body   []byte
				err    error
			)
			rec := httptest.NewRecorder()
			m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called, header, length = true, r.Header.Clone(), r.ContentLength
				body, err = io.ReadAll(r.Body)
			})).ServeHTTP(rec, r)
			if !called || err != nil || !bytes.Equal(body, tc.body) {
				t.Fatalf("status %d, called %v, err %v, body %q; want the bytes as sent", rec.Code, called, err, body)
			}
			if got := header["Content-Encoding"]; !slices.Equal(got, tc.lines) {
				t.Errorf("Content-Encoding %q, want %q", got, tc.lines)
			}
			if length != int64(len(tc.body)) || header.Get("Content-Length") != fmt.Sprint(len(tc.body)) {
				t.Errorf("ContentLength %d, Content-Length %q; want %d", length, header.Get("Content-Length"), len(tc.body))
			}
		})
	}
}

func TestWithDecoderMemoryValidates(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if _, err := squeeze.New(squeeze.WithDecoderMemory(n)); err == nil || !strings.Contains(err.Error(), "WithDecoderMemory") {
			t.Errorf("WithDecoderMemory(%d): %v, want an error naming the option", n, err)
		}
	}
	if _, err := squeeze.New(squeeze.WithDecoderMemory(1)); err != nil {
		t.Errorf("WithDecoderMemory(1): %v", err)
	}
}

// Handler decodes compressed request bodies for the handler behind it, which
// needs nothing squeeze-specific: a body over the cap fails as
// http.MaxBytesReader would, and a corrupt one with ErrInvalidBody.
func ExampleErrInvalidBody() {
	m := squeeze.MustNew(squeeze.WithMaxDecompressedSize(1000))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		case errors.Is(err, squeeze.ErrInvalidBody):
			http.Error(w, "malformed body", http.StatusBadRequest)
		case err != nil:
			return // the client went away
		default:
			fmt.Fprintf(w, "read %d bytes", len(body))
		}
	}))
	gzipped := func(n int) []byte {
		var buf bytes.Buffer
		zw := stdgzip.NewWriter(&buf)
		zw.Write(bytes.Repeat([]byte("squeeze "), n/8))
		zw.Close()
		return buf.Bytes()
	}
	send := func(coding string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", coding)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s: %d %s\n", coding, rec.Code, strings.TrimSpace(rec.Body.String()))
		if ae := rec.Header().Get("Accept-Encoding"); ae != "" {
			fmt.Println("Accept-Encoding:", ae)
		}
	}
	body := gzipped(800)
	send("gzip", body)
	send("gzip", body[:len(body)-4]) // cut short
	send("gzip", gzipped(2000))      // over the cap
	send("compress", body)
	// Output:
	// gzip: 200 read 800 bytes
	// gzip: 400 malformed body
	// gzip: 413 too large
	// compress: 415 unsupported Content-Encoding
	// Accept-Encoding: zstd, br, gzip, deflate
}
