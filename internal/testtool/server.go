package testtool

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// StartServer starts h on loopback speaking HTTP/major: HTTP/1.1 in the
// clear, or HTTP/2 over TLS, where net/http offers it. The client leaves
// Accept-Encoding and the body alone and fails the test on a response of
// another HTTP version, so that no test passes over HTTP/1.1 while it claims
// to test HTTP/2; name is the version as the failure names it. quiet
// discards the server's error log, for handlers that panic and clients that
// leave. Both are closed when the test ends.
func StartServer(t testing.TB, name string, major int, h http.Handler, quiet bool) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if quiet {
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	}
	var tr *http.Transport
	switch major {
	case 1:
		srv.Start()
		tr = &http.Transport{}
	case 2:
		srv.EnableHTTP2 = true
		srv.StartTLS()
		tr = srv.Client().Transport.(*http.Transport).Clone() // trusts the server's certificate
	default:
		t.Fatalf("no server for %s", name)
	}
	t.Cleanup(srv.Close)
	tr.DisableCompression = true
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: protoCheck{t, name, major, tr}, Timeout: 20 * time.Second}
}

// protoCheck is the RoundTripper of StartServer's client.
type protoCheck struct {
	t     testing.TB
	name  string
	major int
	tr    *http.Transport
}

func (c protoCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.tr.RoundTrip(r)
	if err == nil && res.ProtoMajor != c.major {
		c.t.Errorf("%s %s: the response came over %s, want %s", r.Method, r.URL, res.Proto, c.name)
	}
	return res, err
}

func (c protoCheck) CloseIdleConnections() { c.tr.CloseIdleConnections() }
