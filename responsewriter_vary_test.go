package squeeze_test

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

func TestVaryAcceptEncoding(t *testing.T) {
	tests := []struct {
		name     string
		ae       string
		existing []string
		size     int
		wantCE   string
		want     []string // exact Vary tokens, in order
	}{
		{name: "compressed", ae: "gzip", size: 4000, wantCE: squeeze.Gzip, want: []string{"Accept-Encoding"}},
		{name: "request without Accept-Encoding", size: 4000, want: []string{"Accept-Encoding"}},
		{name: "identity only", ae: "identity", size: 4000, want: []string{"Accept-Encoding"}},
		{name: "below min size", ae: "gzip", size: 100, want: []string{"Accept-Encoding"}},
		{name: "merged with Origin", ae: "gzip", existing: []string{"Origin"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"Origin", "Accept-Encoding"}},
		{name: "merged with Origin, not compressed", existing: []string{"Origin"}, size: 4000, want: []string{"Origin", "Accept-Encoding"}},
		{name: "already there in lower case", ae: "gzip", existing: []string{"accept-encoding"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"accept-encoding"}},
		{name: "already in a list", ae: "gzip", existing: []string{"Origin, Accept-Encoding"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"Origin", "Accept-Encoding"}},
		{name: "already on a second line", ae: "gzip", existing: []string{"Origin", "ACCEPT-ENCODING"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"Origin", "ACCEPT-ENCODING"}},
		{name: "star", ae: "gzip", existing: []string{"*"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"*"}},
		{name: "star in a list", ae: "gzip", existing: []string{"Origin, *"}, size: 4000, wantCE: squeeze.Gzip, want: []string{"Origin", "*"}},
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

// A 206 carries the Vary that a 200 to the same request would (RFC 9110
// §15.3.7). squeeze's 200 to a Range request (an If-Range that failed)
// varies when the type is one it compresses, so the 206 does too; a 206 of
// a type it leaves alone does not. A multipart 206 does not name its parts'
// type, so it varies whatever they are.
func TestPartialContentCarriesVaryOfItsOK(t *testing.T) {
	tests := []struct {
		name, contentType string
		want              bool
	}{
		{"page", "text/html; charset=utf-8", true},
		{"image", "image/png", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(3, 6000)
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v1"`)
				w.Header().Set("Content-Type", tt.contentType)
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
			}))
			full := serveAt(h, "/p", "gzip", "Range", "bytes=0-9", "If-Range", `"other"`)
			if full.Code != http.StatusOK || varies(full.Header()) != tt.want {
				t.Fatalf("200 to a Range request: status %d, Vary %q; want 200, varying %v", full.Code, full.Header().Values("Vary"), tt.want)
			}
			for _, ranges := range []string{"bytes=0-9", "bytes=0-9,20-29"} {
				part := serveAt(h, "/p", "gzip", "Range", ranges)
				if part.Code != http.StatusPartialContent {
					t.Fatalf("%s: status %d, want 206", ranges, part.Code)
				}
				want := tt.want || strings.Contains(ranges, ",")
				if varies(part.Header()) != want {
					t.Errorf("%s: 206 Vary %q; the 200 to the same request has %q", ranges, part.Header().Values("Vary"), full.Header().Values("Vary"))
				}
			}
		})
	}
}
