package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// The demo's upload endpoint accepts what squeeze.Transport compresses, in
// every coding, and reports the SHA-256 of the decoded bytes; the products
// API, fetched through the same Transport, decodes to valid JSON.
func TestTransportUploadsToTheDemo(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	sample := uploadSample()
	for _, coding := range []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate} {
		t.Run(coding, func(t *testing.T) {
			var sent string
			base := srv.Client().Transport
			tr := &squeeze.Transport{RequestEncoding: coding, Base: roundTripper(func(r *http.Request) (*http.Response, error) {
				sent = r.Header.Get("Content-Encoding")
				return base.RoundTrip(r)
			})}
			checkUpload(t, &http.Client{Transport: tr}, srv.URL, sample)
			if sent != coding {
				t.Errorf("the upload went out with Content-Encoding %q, want %s", sent, coding)
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
