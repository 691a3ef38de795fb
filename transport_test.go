package squeeze_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// encodeRef compresses b for coding with the codec libraries used directly,
// not through squeeze's writers: what an independent server would send.
func encodeRef(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	return testtool.Encode(t, coding, b)
}

// encodeStack applies codings in the order listed, as Content-Encoding
// lists them.
func encodeStack(t testing.TB, b []byte, codings ...string) []byte {
	t.Helper()
	for _, c := range codings {
		b = encodeRef(t, c, b)
	}
	return b
}

// rawServer answers every request with body and the Content-Encoding ce
// (none if empty), exactly as given, and records the last request's header.
type rawServer struct {
	*httptest.Server
	mu   sync.Mutex
	last http.Header
}

func newRawServer(t *testing.T, ce string, body []byte) *rawServer {
	t.Helper()
	s := &rawServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.last = r.Header.Clone()
		s.mu.Unlock()
		if ce != "" {
			w.Header().Set("Content-Encoding", ce)
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rawServer) lastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// newTransport returns a Transport over a fresh http.Transport whose idle
// connections are closed when the test ends.
func newTransport(t testing.TB, tr *squeeze.Transport) *squeeze.Transport {
	t.Helper()
	if tr == nil {
		tr = &squeeze.Transport{}
	}
	if tr.Base == nil {
		tr.Base = &http.Transport{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// get sends a GET for url through rt with the header fields given in pairs.
func get(t testing.TB, rt http.RoundTripper, method, url string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	return resp
}

// readAll reads and closes resp.Body.
func readAll(t testing.TB, resp *http.Response) ([]byte, error) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); cerr != nil && err == nil {
		t.Errorf("Close: %v", cerr)
	}
	return b, err
}

func TestTransportDecodesEachCoding(t *testing.T) {
	want := textBody(1, 100<<10)
	tests := []struct {
		name      string
		encodings []string
		ce        string   // the response's Content-Encoding
		stack     []string // applied in this order
		wantAE    string
	}{
		{"zstd", nil, "zstd", []string{"zstd"}, "zstd, br, gzip"},
		{"br", nil, "br", []string{"br"}, "zstd, br, gzip"},
		{"gzip", nil, "gzip", []string{"gzip"}, "zstd, br, gzip"},
		{"x-gzip is gzip", nil, "x-gzip", []string{"gzip"}, "zstd, br, gzip"},
		{"upper case coding", nil, "ZSTD", []string{"zstd"}, "zstd, br, gzip"},
		{"deflate when offered", []string{"deflate", "gzip"}, "deflate", []string{"deflate"}, "deflate, gzip"},
		{"identity around a coding", nil, "identity, br", []string{"br"}, "zstd, br, gzip"},
		{"stacked gzip then zstd", nil, "gzip, zstd", []string{"gzip", "zstd"}, "zstd, br, gzip"},
		{"stacked br then gzip", nil, "br,gzip", []string{"br", "gzip"}, "zstd, br, gzip"},
		{"stacked in two field lines", nil, "zstd\ngzip", []string{"zstd", "gzip"}, "zstd, br, gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodeStack(t, want, tt.stack...)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Accept-Encoding"); got != tt.wantAE {
					t.Errorf("server saw Accept-Encoding %q, want %q", got, tt.wantAE)
				}
				for v := range strings.SplitSeq(tt.ce, "\n") {
					w.Header().Add("Content-Encoding", v)
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
				_, _ = w.Write(raw)
			}))
			defer srv.Close()
			tr := newTransport(t, &squeeze.Transport{Encodings: tt.encodings})
			resp := get(t, tr, http.MethodGet, srv.URL)
			got, err := readAll(t, resp)
			if err != nil {
				t.Fatalf("reading the body: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("decoded %d bytes, want %d", len(got), len(want))
			}
			if ce, cl := resp.Header.Values("Content-Encoding"), resp.Header.Get("Content-Length"); ce != nil || cl != "" {
				t.Errorf("response kept Content-Encoding %q, Content-Length %q", ce, cl)
			}
			if resp.ContentLength != -1 || !resp.Uncompressed {
				t.Errorf("ContentLength %d, Uncompressed %v; want -1, true", resp.ContentLength, resp.Uncompressed)
			}
		})
	}
}

func TestTransportLeavesResponsesAlone(t *testing.T) {
	plain := textBody(2, 8<<10)
	gz := encodeRef(t, "gzip", plain)
	tests := []struct {
		name    string
		ce      string
		body    []byte
		method  string
		hdr     []string
		wantAE  string // what the server sees
		wantRaw []byte
	}{
		{"caller set Accept-Encoding", "gzip", gz, "GET", []string{"Accept-Encoding", "gzip"}, "gzip", gz},
		{"caller asked for identity", "", plain, "GET", []string{"Accept-Encoding", "identity"}, "identity", plain},
		{"Range request", "gzip", gz, "GET", []string{"Range", "bytes=0-"}, "", gz},
		{"HEAD request", "gzip", nil, "HEAD", nil, "", nil},
		{"unknown coding", "compress", []byte("lzw bytes"), "GET", nil, "zstd, br, gzip", []byte("lzw bytes")},
		{"three layers", "gzip, gzip, gzip", encodeStack(t, plain, "gzip", "gzip", "gzip"), "GET", nil, "zstd, br, gzip", encodeStack(t, plain, "gzip", "gzip", "gzip")},
		{"dcz with no dictionary offered", "dcz", []byte("not for us"), "GET", nil, "zstd, br, gzip", []byte("not for us")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, tt.ce, tt.body)
			tr := newTransport(t, nil)
			resp := get(t, tr, tt.method, srv.URL, tt.hdr...)
			got, err := readAll(t, resp)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.wantRaw) {
				t.Errorf("body: %d bytes, want the %d bytes sent", len(got), len(tt.wantRaw))
			}
			if ae := srv.lastHeader().Get("Accept-Encoding"); ae != tt.wantAE {
				t.Errorf("server saw Accept-Encoding %q, want %q", ae, tt.wantAE)
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != tt.ce {
				t.Errorf("Content-Encoding %q, want %q kept", ce, tt.ce)
			}
			if resp.Uncompressed {
				t.Error("Uncompressed is true on a response left alone")
			}
		})
	}
}

func TestTransportCapsDecodedSize(t *testing.T) {
	const limit = 64 << 10
	for _, coding := range []string{"zstd", "br", "gzip"} {
		for _, tt := range []struct {
			name string
			size int
			ok   bool
		}{
			{"at the cap", limit, true},
			{"one byte over", limit + 1, false},
			{"a bomb", 50 << 20, false},
		} {
			t.Run(coding+"/"+tt.name, func(t *testing.T) {
				raw := encodeRef(t, coding, make([]byte, tt.size))
				srv := newRawServer(t, coding, raw)
				tr := newTransport(t, &squeeze.Transport{MaxDecompressedSize: limit})
				got, err := readAll(t, get(t, tr, "GET", srv.URL))
				var mbe *http.MaxBytesError
				switch {
				case tt.ok && err != nil:
					t.Fatalf("read failed: %v", err)
				case tt.ok && len(got) != tt.size:
					t.Fatalf("decoded %d bytes, want %d", len(got), tt.size)
				case !tt.ok && !errors.As(err, &mbe):
					t.Fatalf("error %v, want *http.MaxBytesError", err)
				case !tt.ok && (mbe.Limit != limit || len(got) > limit):
					t.Fatalf("MaxBytesError limit %d after %d bytes; want %d, at most the cap", mbe.Limit, len(got), limit)
				}
			})
		}
	}
}

// zstdWindowFrame returns a zstd frame header declaring a 16 MiB window,
// over the 8 MB the decoders grant, followed by one raw block.
func zstdWindowFrame() []byte {
	// Magic, Frame_Header_Descriptor (no single segment, no checksum),
	// Window_Descriptor exponent 14 (16 MiB), then a last raw block of 1.
	return []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 14 << 3, 0x09, 0x00, 0x00, 'x'}
}

func TestTransportRefusesInvalidBodies(t *testing.T) {
	plain := textBody(3, 32<<10)
	for _, coding := range []string{"zstd", "br", "gzip", "deflate"} {
		enc := encodeRef(t, coding, plain)
		corrupt := bytes.Clone(enc)
		for i := len(corrupt) / 3; i < len(corrupt)/3+16; i++ {
			corrupt[i] ^= 0x5a
		}
		for _, tt := range []struct {
			name string
			body []byte
		}{
			{"corrupt", corrupt},
			{"truncated", enc[:len(enc)/2]},
			{"trailing bytes", append(bytes.Clone(enc), "trailer"...)},
			{"empty but for one byte", enc[:1]},
		} {
			t.Run(coding+"/"+tt.name, func(t *testing.T) {
				srv := newRawServer(t, coding, tt.body)
				tr := newTransport(t, &squeeze.Transport{Encodings: []string{"zstd", "br", "gzip", "deflate"}})
				_, err := readAll(t, get(t, tr, "GET", srv.URL))
				if !errors.Is(err, squeeze.ErrInvalidBody) {
					t.Fatalf("error %v, want one matching ErrInvalidBody", err)
				}
				if !strings.Contains(err.Error(), "response body") {
					t.Errorf("error %q does not say it is about a response body", err)
				}
			})
		}
	}
	t.Run("zstd window over 8 MB", func(t *testing.T) {
		srv := newRawServer(t, "zstd", zstdWindowFrame())
		tr := newTransport(t, nil)
		_, err := readAll(t, get(t, tr, "GET", srv.URL))
		if !errors.Is(err, squeeze.ErrInvalidBody) || !errors.Is(err, zstd.ErrWindowSizeExceeded) {
			t.Fatalf("error %v, want ErrInvalidBody wrapping zstd.ErrWindowSizeExceeded", err)
		}
	})
}

func TestTransportRejectsInvalidFields(t *testing.T) {
	for _, tr := range []*squeeze.Transport{
		{Encodings: []string{"lzma"}},
		{RequestEncoding: "compress"},
		{MaxDecompressedSize: -1},
		{DictionaryStoreSize: -1},
	} {
		body := &closeSpy{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest("POST", "http://example.invalid/", body)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Errorf("%+v: RoundTrip succeeded", tr)
		}
		if !body.closed {
			t.Errorf("%+v: the request body was not closed", tr)
		}
	}
}

// Each invalid field is reported by its name and the value written, and a
// coding listed twice, under one name or two, is refused before anything is
// sent, in the words WithEncodings uses.
func TestTransportFieldErrorsNameTheFieldAndValue(t *testing.T) {
	tests := []struct {
		name string
		tr   *squeeze.Transport
		msg  string
		is   error // nil: no sentinel to match
	}{
		{"negative MaxDecompressedSize", &squeeze.Transport{MaxDecompressedSize: -1},
			"squeeze: Transport: MaxDecompressedSize -1 must not be negative", nil},
		{"negative DecoderMemory", &squeeze.Transport{DecoderMemory: -2},
			"squeeze: Transport: DecoderMemory -2 must not be negative", nil},
		{"negative RequestMinSize", &squeeze.Transport{RequestMinSize: -5},
			"squeeze: Transport: RequestMinSize -5 must not be negative", nil},
		{"negative DictionaryStoreSize", &squeeze.Transport{DictionaryStoreSize: -4096},
			"squeeze: Transport: DictionaryStoreSize -4096 must not be negative", nil},
		{"the first negative field", &squeeze.Transport{DecoderMemory: -1, RequestMinSize: -1},
			"squeeze: Transport: DecoderMemory -1 must not be negative", nil},
		{"unknown coding", &squeeze.Transport{Encodings: []string{"zstd", "lzma"}},
			`squeeze: Transport: Encodings []string{"zstd", "lzma"}: unknown coding "lzma" (want zstd, br, gzip or deflate)`, writers.ErrUnknownCoding},
		{"coding twice", &squeeze.Transport{Encodings: []string{"gzip", "gzip"}},
			`squeeze: Transport: Encodings []string{"gzip", "gzip"}: coding "gzip" is listed twice`, nil},
		{"coding twice under an alias", &squeeze.Transport{Encodings: []string{"gzip", "br", "x-gzip"}},
			`squeeze: Transport: Encodings []string{"gzip", "br", "x-gzip"}: coding "x-gzip" repeats "gzip"`, nil},
		{"coding twice in two cases", &squeeze.Transport{Encodings: []string{"ZSTD", "zstd"}},
			`squeeze: Transport: Encodings []string{"ZSTD", "zstd"}: coding "zstd" repeats "ZSTD"`, nil},
		{"unknown request coding", &squeeze.Transport{RequestEncoding: "compress"},
			`squeeze: Transport: RequestEncoding "compress" is not a coding squeeze implements (want zstd, br, gzip or deflate)`, writers.ErrUnknownCoding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
				t.Errorf("request sent with Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
				return nil, errors.New("not sent")
			})
			req, _ := http.NewRequest("GET", "http://example.invalid/", nil)
			resp, err := tt.tr.RoundTrip(req)
			if err == nil || resp != nil {
				t.Fatalf("RoundTrip = %v, %v; want nil and an error", resp, err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if tt.is == nil && errors.Is(err, writers.ErrUnknownCoding) {
				t.Errorf("error %v matches %v", err, writers.ErrUnknownCoding)
			}
		})
	}
}

// closeSpy records whether it was closed.
type closeSpy struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func (c *closeSpy) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

func TestTransportAgainstMiddleware(t *testing.T) {
	page := textBody(4, 200<<10)
	for _, coding := range []string{"zstd", "br", "gzip"} {
		t.Run(coding, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithEncodings(coding))
			var mu sync.Mutex
			var sawAE string
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				sawAE = r.Header.Get("Accept-Encoding")
				mu.Unlock()
				w.Header().Set("Content-Type", "text/plain")
				_, _ = w.Write(page)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				var ce string
				tr := newTransport(t, &squeeze.Transport{Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := c.Transport.RoundTrip(r)
					if err == nil {
						ce = resp.Header.Get("Content-Encoding")
					}
					return resp, err
				})})
				got, err := readAll(t, get(t, tr, "GET", srv.URL))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, page) {
					t.Fatalf("decoded %d bytes, want %d", len(got), len(page))
				}
				mu.Lock()
				defer mu.Unlock()
				if ce != coding || sawAE != "zstd, br, gzip" {
					t.Errorf("the wire carried Content-Encoding %q after Accept-Encoding %q; want %s after zstd, br, gzip", ce, sawAE, coding)
				}
			})
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
