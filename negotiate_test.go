package squeeze_test

import (
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Negotiation, end to end (the parser has its own tests in negotiate_internal_test.go)

func TestNegotiationEndToEnd(t *testing.T) {
	defaults := newMiddleware(t)
	withDeflate := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate))
	tests := []struct {
		name string
		m    *squeeze.Middleware
		ae   string
		want string
	}{
		{"no Accept-Encoding means identity", defaults, "", ""},
		{"single coding", defaults, "gzip", squeeze.Gzip},
		{"q=0 refuses a coding", defaults, "gzip;q=0", ""},
		{"q=0 refuses only that coding", defaults, "br;q=0, gzip", squeeze.Gzip},
		{"ties go to server order", defaults, "gzip, br, zstd", squeeze.Zstd},
		{"ties go to server order without zstd", defaults, "gzip, br", squeeze.Brotli},
		{"equal explicit q ties too", defaults, "gzip;q=0.5, br;q=0.5", squeeze.Brotli},
		{"higher q beats server order", defaults, "zstd;q=0.8, gzip", squeeze.Gzip},
		{"x-gzip is gzip", defaults, "x-gzip", squeeze.Gzip},
		{"coding names ignore case", defaults, "GZIP", squeeze.Gzip},
		{"star takes the server's favourite", defaults, "*", squeeze.Zstd},
		{"star with zstd refused", defaults, "zstd;q=0, *", squeeze.Brotli},
		{"star q=0 leaves identity", defaults, "*;q=0", ""},
		{"identity only", defaults, "identity", ""},
		{"unknown codings only", defaults, "compress, lzma", ""},
		{"deflate not offered by default", defaults, "deflate", ""},
		{"deflate when enabled", withDeflate, "deflate", squeeze.Deflate},
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
