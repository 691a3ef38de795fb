package main

import (
	"bytes"
	"encoding/json"
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
			c := &http.Client{Transport: tr}
			res, err := c.Post(srv.URL+"/upload", "text/plain", bytes.NewReader(sample))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var got struct {
				Bytes  int64  `json:"bytes"`
				SHA256 string `json:"sha256"`
			}
			if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
				t.Fatalf("status %d, decoding the answer: %v", res.StatusCode, err)
			}
			if got.Bytes != int64(len(sample)) || got.SHA256 != sha256Hex(sample) {
				t.Errorf("upload answer = %+v, want %d bytes with sha256 %s", got, len(sample), sha256Hex(sample))
			}
			if sent != coding {
				t.Errorf("the upload went out with Content-Encoding %q, want %s", sent, coding)
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
