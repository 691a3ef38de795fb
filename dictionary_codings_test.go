package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// TestDictionaryDeltasFollowTheDictionaryOptions: a WithEncodings list
// written for the other codings, as the README's options example and the
// migration table's rows are, leaves the dictionary codings on when a
// dictionary option asks for deltas; a list naming one of them offers only
// that one.
func TestDictionaryDeltasFollowTheDictionaryOptions(t *testing.T) {
	v1, v2 := versions(16 << 10)
	tests := []struct {
		name      string
		encodings []string
		ae        string
		want      string
	}{
		{"README options example", []string{squeeze.Zstd, squeeze.Gzip}, chromeAE, squeeze.DCZ},
		{"httpcompression migration row", []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate}, chromeAE, squeeze.DCZ},
		{"br first", []string{squeeze.Brotli, squeeze.Zstd}, chromeAE, squeeze.DCZ},
		{"dcb named alone", []string{squeeze.Brotli, squeeze.DCB}, chromeAE, squeeze.DCB},
		{"dcz named alone, client names only dcb", []string{squeeze.Zstd, squeeze.DCZ}, "zstd, dcb", squeeze.Zstd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := squeeze.New(squeeze.WithEncodings(tt.encodings...), squeeze.WithDictionaryMatch("/js/app.*.js"))
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, _ := fetch(t, c, srv.URL+"/js/app.v1.js", tt.ae)
				if res.Header.Get("Use-As-Dictionary") == "" {
					t.Fatal("v1 went out without Use-As-Dictionary")
				}
				res, raw := fetch(t, c, srv.URL+"/js/app.v2.js", tt.ae, "Available-Dictionary", availableFor(v1))
				if ce := res.Header.Get("Content-Encoding"); ce != tt.want {
					t.Fatalf("v2 Content-Encoding = %q, want %q", ce, tt.want)
				}
				if tt.want == squeeze.DCZ || tt.want == squeeze.DCB {
					decodeDelta(t, res.Header, raw, v1, v2)
				} else {
					checkBody(t, res.Header, raw, v2)
				}
			})
		})
	}
}
