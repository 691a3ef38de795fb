package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// upload is what an upload server saw of one request.
type upload struct {
	ce            string
	contentLength int64
	raw           []byte
}

// uploadServer records the raw request bodies it receives and redirects
// /redirect to /final with 307, which resends the body.
type uploadServer struct {
	*httptest.Server
	mu      sync.Mutex
	uploads []upload
}

func newUploadServer(t *testing.T) *uploadServer {
	t.Helper()
	s := &uploadServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.uploads = append(s.uploads, upload{r.Header.Get("Content-Encoding"), r.ContentLength, raw})
		s.mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *uploadServer) seen() []upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads
}

// streamOf hides every method but Read, so net/http cannot tell the length
// and sets no GetBody.
type streamOf struct{ io.Reader }

func TestTransportCompressesRequestBodies(t *testing.T) {
	const minSize = 1024
	small := textBody(10, 800)
	mid := textBody(11, 20<<10)
	large := textBody(12, 300<<10)
	tests := []struct {
		name       string
		body       func() io.Reader
		ce         string // set by the caller
		want       []byte
		wantCE     string
		wantLength int64 // -1: unknown; 0: the compressed length, checked against the bytes
	}{
		{"known length below the minimum", func() io.Reader { return bytes.NewReader(small) }, "", small, "", int64(len(small))},
		{"known length, buffered", func() io.Reader { return bytes.NewReader(mid) }, "", mid, "zstd", 0},
		{"known length, streamed", func() io.Reader { return bytes.NewReader(large) }, "", large, "zstd", -1},
		{"unknown length below the minimum", func() io.Reader { return streamOf{bytes.NewReader(small)} }, "", small, "", int64(len(small))},
		{"unknown length, streamed", func() io.Reader { return streamOf{bytes.NewReader(large)} }, "", large, "zstd", -1},
		{"already encoded", func() io.Reader { return bytes.NewReader(encodeRef(t, "gzip", large)) }, "gzip", encodeRef(t, "gzip", large), "gzip", int64(len(encodeRef(t, "gzip", large)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newUploadServer(t)
			tr := newTransport(t, &squeeze.Transport{RequestEncoding: "zstd", RequestMinSize: minSize})
			req, err := http.NewRequest("POST", srv.URL, tt.body())
			if err != nil {
				t.Fatal(err)
			}
			if tt.ce != "" {
				req.Header.Set("Content-Encoding", tt.ce)
			}
			before := req.Header.Clone()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = readAll(t, resp)
			if !maps.EqualFunc(req.Header, before, slices.Equal) {
				t.Errorf("the caller's header changed: %v, was %v", req.Header, before)
			}
			up := srv.seen()[0]
			if up.ce != tt.wantCE {
				t.Fatalf("Content-Encoding %q, want %q", up.ce, tt.wantCE)
			}
			got := up.raw
			if tt.wantCE != "" && tt.ce == "" {
				got = testtool.Decode(t, tt.wantCE, up.raw)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("server got %d bytes (decoded), want %d", len(got), len(tt.want))
			}
			switch wantLength := tt.wantLength; {
			case wantLength == 0 && up.contentLength != int64(len(up.raw)):
				t.Errorf("ContentLength %d, want the compressed %d", up.contentLength, len(up.raw))
			case wantLength != 0 && up.contentLength != wantLength:
				t.Errorf("ContentLength %d, want %d", up.contentLength, wantLength)
			}
		})
	}
}

// Uploads in every coding are accepted by squeeze's own request decoding
// and by the reference command-line decoders.
func TestTransportUploadsDecodeEverywhere(t *testing.T) {
	body := textBody(13, 200<<10)
	sum := sha256.Sum256(body)
	m := newMiddleware(t)
	var mu sync.Mutex
	var sawCE string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawCE = r.Header.Get("Content-Encoding")
		mu.Unlock()
		m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			s := sha256.Sum256(got)
			_, _ = w.Write(s[:])
		})).ServeHTTP(w, r)
	}))
	defer srv.Close()
	raw := newUploadServer(t)
	for _, coding := range []string{"zstd", "br", "gzip", "deflate"} {
		t.Run(coding, func(t *testing.T) {
			tr := newTransport(t, &squeeze.Transport{RequestEncoding: coding})
			req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(t, resp)
			mu.Lock()
			ce := sawCE
			mu.Unlock()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, sum[:]) || ce != coding {
				t.Fatalf("status %d, Content-Encoding %q, digest %x (%v); want 200, %s, %x", resp.StatusCode, ce, got, err, coding, sum)
			}
			if _, _, ok := testtool.DecodeCommand(coding); !ok {
				return
			}
			req, _ = http.NewRequest("POST", raw.URL, bytes.NewReader(body))
			resp, err = tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = readAll(t, resp)
			ups := raw.seen()
			if cli := testtool.DecodeCLI(t, coding, ups[len(ups)-1].raw); !bytes.Equal(cli, body) {
				t.Fatalf("the %s CLI decoded %d bytes, want %d", coding, len(cli), len(body))
			}
		})
	}
}

// A 307 redirect makes http.Client resend the body through GetBody; the
// second request carries the same compressed body.
func TestTransportResendsCompressedBodyOnRedirect(t *testing.T) {
	for _, size := range []int{20 << 10, 300 << 10} { // buffered, streamed
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			body := textBody(14, size)
			srv := newUploadServer(t)
			c := &http.Client{Transport: newTransport(t, &squeeze.Transport{RequestEncoding: "gzip"})}
			resp, err := c.Post(srv.URL+"/redirect", "text/plain", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = readAll(t, resp)
			ups := srv.seen()
			if len(ups) != 2 {
				t.Fatalf("%d requests reached the server, want 2", len(ups))
			}
			for i, up := range ups {
				if up.ce != "gzip" {
					t.Fatalf("request %d: Content-Encoding %q", i, up.ce)
				}
				if got := testtool.Decode(t, "gzip", up.raw); !bytes.Equal(got, body) {
					t.Fatalf("request %d: %d bytes decoded, want %d", i, len(got), len(body))
				}
			}
		})
	}
}

// A streamed upload whose request fails before the body is read leaks no
// encoder and closes the caller's body.
func TestTransportClosesUploadOnFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens
	body := &closeSpy{Reader: bytes.NewReader(textBody(15, 300<<10))}
	tr := newTransport(t, &squeeze.Transport{RequestEncoding: "br"})
	req, _ := http.NewRequest("POST", url, body)
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("RoundTrip to a closed server succeeded")
	}
	body.mu.Lock()
	defer body.mu.Unlock()
	if !body.closed {
		t.Error("the request body was not closed")
	}
}
