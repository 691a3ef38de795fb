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

// Protocol is an HTTP version a server test runs over: Name as a subtest
// and a failure name it, Major as StartServer takes it.
type Protocol struct {
	Name  string
	Major int
}

// Protocols returns the HTTP versions every server test runs over:
// HTTP/1.1 and HTTP/2.
func Protocols() []Protocol { return []Protocol{{"HTTP/1.1", 1}, {"HTTP/2", 2}} }

// Fetch GETs url through c with the given Accept-Encoding (none if empty)
// and the header fields hdr, given as name, value pairs, and returns the
// response and its body as it came, not decoded (see Do).
func Fetch(t testing.TB, c *http.Client, url, ae string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return Do(t, c, req)
}

// Do sends req through c and returns the response, its body read to the
// end and closed, and the body as it came: decode it with Decode and the
// response's Content-Encoding. An error sending or reading fails the test.
func Do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body of %s %s: %v", req.Method, req.URL, err)
	}
	return res, raw
}

// FreePort returns a loopback TCP port no one listened on a moment ago,
// for a server a test starts in a process of its own. Another process may
// take it first; a test that cannot tolerate that retries on a new port.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("FreePort: %v", err)
	}
	return port
}
