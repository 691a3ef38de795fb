package squeeze_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
)

// The FileServer answers a Range request whose If-Range names the coded
// tag of its encoded 200 with that 200 again, encoded, and one naming the
// plain tag with a range of the plain file.
func TestFileServerIfRangeWithTheCodedETagGetsTheCodedRepresentation(t *testing.T) {
	js := textBody(4, 20000)
	h, _ := fileServer(t, newMiddleware(t), fstest.MapFS{"app.js": {Data: js}})
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		res, _ := fetch(t, c, srv.URL+"/app.js", squeeze.Zstd)
		coded := res.Header.Get("ETag")
		plain := bytes.Replace([]byte(coded), []byte("-zstd"), nil, 1)
		if res.Header.Get("Content-Encoding") != squeeze.Zstd || string(plain) == coded {
			t.Fatalf("the first response: Content-Encoding %q, ETag %q; want zstd with a coded tag", res.Header.Get("Content-Encoding"), coded)
		}
		res, raw := fetch(t, c, srv.URL+"/app.js", squeeze.Zstd, "Range", "bytes=100-199", "If-Range", coded)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != squeeze.Zstd {
			t.Fatalf("If-Range %s: %d with Content-Encoding %q, want 200 zstd", coded, res.StatusCode, res.Header.Get("Content-Encoding"))
		}
		checkBody(t, res.Header, raw, js)
		res, raw = fetch(t, c, srv.URL+"/app.js", squeeze.Zstd, "Range", "bytes=100-199", "If-Range", string(plain))
		if res.StatusCode != http.StatusPartialContent || !bytes.Equal(raw, js[100:200]) {
			t.Fatalf("If-Range %s: %d with %d bytes, want 206 with bytes 100-199", plain, res.StatusCode, len(raw))
		}
	})
}
