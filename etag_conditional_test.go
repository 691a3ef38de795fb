package squeeze_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// ETag, Accept-Ranges and conditional requests

func TestETagAndAcceptRanges(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	tests := []struct {
		name     string
		ae       string
		etag     string
		size     int
		wantCE   string
		wantETag string
		wantAR   string
	}{
		{"strong tag gets zstd suffix", "zstd", `"abc"`, 4000, squeeze.Zstd, `"abc-zstd"`, ""},
		{"strong tag gets br suffix", "br", `"abc"`, 4000, squeeze.Brotli, `"abc-br"`, ""},
		{"strong tag gets gzip suffix", "gzip", `"abc"`, 4000, squeeze.Gzip, `"abc-gzip"`, ""},
		{"strong tag gets deflate suffix", "deflate", `"abc"`, 4000, squeeze.Deflate, `"abc-deflate"`, ""},
		{"x-gzip request still gets gzip suffix", "x-gzip", `"abc"`, 4000, squeeze.Gzip, `"abc-gzip"`, ""},
		{"empty strong tag", "zstd", `""`, 4000, squeeze.Zstd, `"-zstd"`, ""},
		{"weak tag untouched", "zstd", `W/"abc"`, 4000, squeeze.Zstd, `W/"abc"`, ""},
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
		{"plain GET", "zstd", nil, 200, squeeze.Zstd, `"v1-zstd"`},
		{"If-None-Match with the zstd tag", "zstd", []string{"If-None-Match", `"v1-zstd"`}, 304, "", `"v1-zstd"`},
		{"If-None-Match with the br tag", "br", []string{"If-None-Match", `"v1-br"`}, 304, "", `"v1-br"`},
		{"If-None-Match list", "gzip", []string{"If-None-Match", `"nope", "v1-gzip"`}, 304, "", `"v1-gzip"`},
		{"If-None-Match for identity", "", []string{"If-None-Match", `"v1"`}, 304, "", `"v1"`},
		{"If-None-Match with another version", "zstd", []string{"If-None-Match", `"v0-zstd"`}, 200, squeeze.Zstd, `"v1-zstd"`},
		{"If-Match with the zstd tag", "zstd", []string{"If-Match", `"v1-zstd"`}, 200, squeeze.Zstd, `"v1-zstd"`},
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
