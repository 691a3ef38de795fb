package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// With CacheTrustedETags, a stream whose Vary names Sec-Fetch-Site (as
// squeeze's on a dictionary path does) is stored and served per value of
// the request's Sec-Fetch-Site: a handler that renders per value under one
// ETag gives each its own bytes, and a second request with the same value
// is a hit. Before, such a stream was never stored, so dictionary paths
// lost their stream hits.
func TestCacheKeysStreamsVaryingOnSecFetchSiteByItsValue(t *testing.T) {
	const n = 3 * squeeze.DefaultBufferSize
	c := newCache(t, 64<<20)
	h := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags())).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Vary", "Sec-Fetch-Site")
		writeChunks(w, personal("site "+r.Header.Get("Sec-Fetch-Site"), n), 4096)
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, cl *http.Client) {
		before := c.Stats()
		for _, site := range []string{"same-origin", "cross-site", "", "same-origin", "cross-site", ""} {
			var hdr []string
			if site != "" {
				hdr = []string{"Sec-Fetch-Site", site}
			}
			res, raw := fetch(t, cl, srv.URL+"/page", "zstd", hdr...)
			checkBody(t, res.Header, raw, personal("site "+site, n))
		}
		if s := c.Stats(); s.Hits-before.Hits != 3 || s.Stores-before.Stores != 3 {
			t.Errorf("stats %+v (before %+v): want 3 stores and 3 hits", s, before)
		}
	})
}
