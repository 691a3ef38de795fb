package squeeze_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A Range request whose If-Range names a tag the handler's representation
// cannot match strongly (RFC 9110 §13.1.5) gets the whole body, encoded as
// any other 200: a client resuming a zstd download with the "-zstd" tag
// squeeze gave it gets the zstd representation again, not the plain bytes
// its partial copy is not a prefix of. A plain tag or an HTTP-date stays
// the handler's to judge, and a range it serves goes out plain.
func TestIfRangeWithTheCodedETagGetsTheCodedRepresentation(t *testing.T) {
	body := textBody(11, 16<<10)
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	serveWith := func(etag string) http.Handler {
		return newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("ETag", etag)
			http.ServeContent(w, r, "", modified, bytes.NewReader(body))
		}))
	}
	tests := []struct {
		name, etag, ifRange string
		status              int
		coding              string
	}{
		{"no If-Range", `"v1"`, "", http.StatusPartialContent, ""},
		{"plain strong tag", `"v1"`, `"v1"`, http.StatusPartialContent, ""},
		{"plain tag of another version", `"v1"`, `"v0"`, http.StatusOK, ""},
		{"coded strong tag", `"v1"`, `"v1-zstd"`, http.StatusOK, squeeze.Zstd},
		{"coded tag of another coding", `"v1"`, `"v1-br"`, http.StatusOK, squeeze.Zstd},
		{"coded tag of another version", `"v1"`, `"v0-zstd"`, http.StatusOK, squeeze.Zstd},
		{"weak tag", `W/"v1"`, `W/"v1"`, http.StatusOK, squeeze.Zstd},
		{"weak coded tag", `"v1"`, `W/"v1-zstd"`, http.StatusOK, squeeze.Zstd},
		{"HTTP-date of the version", `"v1"`, modified.Format(http.TimeFormat), http.StatusPartialContent, ""},
		{"HTTP-date of another version", `"v1"`, modified.Add(-time.Hour).Format(http.TimeFormat), http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachProtocol(t, serveWith(tt.etag), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				hdr := []string{"Range", "bytes=100-199"}
				if tt.ifRange != "" {
					hdr = append(hdr, "If-Range", tt.ifRange)
				}
				res, raw := fetch(t, c, srv.URL+"/", squeeze.Zstd, hdr...)
				ce := res.Header.Get("Content-Encoding")
				if res.StatusCode != tt.status || ce != tt.coding {
					t.Fatalf("%d with Content-Encoding %q, want %d with %q", res.StatusCode, ce, tt.status, tt.coding)
				}
				switch {
				case tt.status == http.StatusPartialContent:
					if !bytes.Equal(raw, body[100:200]) {
						t.Errorf("the 206 holds %d bytes that are not bytes 100-199", len(raw))
					}
				default:
					checkBody(t, res.Header, raw, body)
				}
				if tt.coding != "" && tt.etag == `"v1"` && res.Header.Get("ETag") != `"v1-`+tt.coding+`"` {
					t.Errorf("ETag %q, want the coded tag", res.Header.Get("ETag"))
				}
			})
		})
	}
}
