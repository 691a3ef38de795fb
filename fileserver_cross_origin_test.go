package squeeze_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
)

// The FileServer sends a delta to a CORS request from another origin of
// the site when a handler around it allows that origin, and no delta to
// one it does not allow, nor to a no-cors request.
func TestFileServerDeltaToAnotherOriginOfTheSiteNeedsCORS(t *testing.T) {
	v1 := textBody(12, 50000)
	v2 := append(bytes.Clone(v1[:30000]), textBody(13, 20000)...)
	m := newMiddleware(t, squeeze.WithDictionaryMatch("/app.*.js"))
	fsrv, _ := fileServer(t, m, fstest.MapFS{"app.v1.js": {Data: v1}, "app.v2.js": {Data: v2}})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o == pageOrigin {
			w.Header().Set("Access-Control-Allow-Origin", o)
		}
		fsrv.ServeHTTP(w, r)
	})
	for _, tt := range []struct {
		name, origin, mode string
		delta              bool
	}{
		{"allowed origin", pageOrigin, "cors", true},
		{"origin not allowed", "https://other.example.com", "cors", false},
		{"no-cors", pageOrigin, "no-cors", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				site := []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", tt.mode, "Origin", tt.origin}
				fetch(t, c, srv.URL+"/app.v1.js", chromeAE, site...)
				res, raw := fetch(t, c, srv.URL+"/app.v2.js", chromeAE, append([]string{"Available-Dictionary", availableFor(v1)}, site...)...)
				wantDeltaOrNot(t, res.Header, raw, v1, v2, tt.delta)
			})
		})
	}
}
