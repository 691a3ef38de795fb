package squeeze_test

import (
	"net/http"
	"slices"
	"testing"

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
