package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Deltas to another origin of the same site (RFC 9842 §9): a script on a
// static or CDN subdomain, fetched in CORS mode by a page of the site,
// comes as a delta when its response is readable by the page's origin,
// and never to a no-cors or cross-site request.

// pageOrigin is the origin of the page that asks for the scripts.
const pageOrigin = "https://www.example.com"

func TestDictionaryDeltaToAnotherOriginOfTheSiteNeedsCORS(t *testing.T) {
	small1, small2 := versions(16 << 10)
	big1, big2 := versions(200 << 10)
	cors := []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors", "Origin", pageOrigin}
	tests := []struct {
		name  string
		acao  []string // the handler's Access-Control-Allow-Origin
		hdr   []string // the request's Sec-Fetch-* and Origin
		big   bool     // a stream rather than a whole body
		delta bool
	}{
		{"same origin", nil, []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}, false, true},
		{"same-site CORS, allowed origin", []string{pageOrigin}, cors, false, true},
		{"same-site CORS, allowed origin, streamed", []string{pageOrigin}, cors, true, true},
		{"same-site CORS, any origin allowed", []string{"*"}, cors, false, true},
		{"same-site CORS, no CORS header", nil, cors, false, false},
		{"same-site CORS, no CORS header, streamed", nil, cors, true, false},
		{"same-site CORS, another origin allowed", []string{"https://other.example.com"}, cors, false, false},
		{"same-site CORS, two CORS values", []string{pageOrigin, "*"}, cors, false, false},
		{"same-site no-cors", []string{"*"}, []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "no-cors", "Origin", pageOrigin}, false, false},
		{"same-site CORS without Origin", []string{"*"}, []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors"}, false, false},
		{"same-site CORS from an opaque origin", []string{"*"}, []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors", "Origin", "null"}, false, false},
		{"cross-site CORS, allowed origin", []string{pageOrigin}, []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Origin", pageOrigin}, false, false},
		{"cross-site CORS, any origin allowed", []string{"*"}, []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Origin", pageOrigin}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v1, v2 := small1, small2
			if tt.big {
				v1, v2 = big1, big2
			}
			files := scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2})
			h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/app.*.js")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.acao != nil {
					w.Header()["Access-Control-Allow-Origin"] = tt.acao
				}
				files(w, r)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				if res, _ := fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE, tt.hdr...); res.Header.Get("Use-As-Dictionary") == "" {
					t.Fatal("v1 went out without Use-As-Dictionary")
				}
				hdr := append([]string{"Available-Dictionary", availableFor(v1)}, tt.hdr...)
				res, raw := fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, hdr...)
				wantDeltaOrNot(t, res.Header, raw, v1, v2, tt.delta)
				wantDictVary(t, res.Header)
			})
		})
	}
}

// wantDeltaOrNot checks a response's raw body against body: a dcz delta
// against dict if delta is set, else the body in the coding the client
// gets without a dictionary (zstd, for chromeAE).
func wantDeltaOrNot(t *testing.T, h http.Header, raw, dict, body []byte, delta bool) {
	t.Helper()
	switch ce := h.Get("Content-Encoding"); {
	case delta && ce != squeeze.DCZ:
		t.Fatalf("Content-Encoding %q, want dcz", ce)
	case delta:
		decodeDelta(t, h, raw, dict, body)
	case ce != squeeze.Zstd:
		t.Fatalf("Content-Encoding %q, want zstd (no delta)", ce)
	default:
		checkBody(t, h, raw, body)
	}
}
