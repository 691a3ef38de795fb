package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// waitLimit bounds every wait in these tests: external programs, reads from
// streams, shutdown.
const waitLimit = 30 * time.Second

// startServer serves the demo's router on a free loopback port for the
// duration of the test. tick is the interval between server-sent events.
func startServer(t *testing.T, tick time.Duration) *httptest.Server {
	t.Helper()
	h, _, err := newRouter(tick, "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// page is a path whose body is fixed, and that body.
type page struct {
	path string
	body []byte
}

// compressiblePages returns the paths whose bodies are large enough to be
// compressed, with the bytes each must decode to.
func compressiblePages(t *testing.T) []page {
	t.Helper()
	products, err := json.Marshal(catalog())
	if err != nil {
		t.Fatal(err)
	}
	return []page{
		{"/", embedded(t, "index.html")},
		{"/static/app.js", embedded(t, "app.js")},
		{"/static/app.css", embedded(t, "app.css")},
		{"/api/products", products},
	}
}

func embedded(t *testing.T, name string) []byte {
	t.Helper()
	data, err := static.ReadFile("static/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// events returns the first n server-sent events as they go over the wire.
func events(n int) []byte {
	var b bytes.Buffer
	for seq := 1; seq <= n; seq++ {
		b.WriteString(event(seq))
	}
	return b.Bytes()
}

// uploadSample returns the bytes app.js uploads, built the same way.
func uploadSample() []byte {
	var b bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&b, "line %d: squeeze decodes compressed request bodies before the handler reads them\n", i)
	}
	return b.Bytes()
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// serverCodings asks the server which coding each path's latest response
// to this test's Go client used.
func serverCodings(t *testing.T, srv *httptest.Server) map[string]codingRecord {
	t.Helper()
	var page codingsPage
	getCodings(t, srv, "/debug/codings", &page)
	return page.Paths
}

// clientCodings returns the records of the one client whose label (its
// User-Agent and address) contains match, such as "curl/".
func clientCodings(t *testing.T, srv *httptest.Server, match string) map[string]codingRecord {
	t.Helper()
	var page codingsPage
	getCodings(t, srv, "/debug/codings?all=1", &page)
	var found map[string]codingRecord
	for label, paths := range page.Clients {
		if strings.Contains(label, match) {
			if found != nil {
				t.Fatalf("more than one client matches %q: %v", match, page.Clients)
			}
			found = paths
		}
	}
	if found == nil {
		t.Fatalf("no client matches %q: %v", match, page.Clients)
	}
	return found
}

func getCodings(t *testing.T, srv *httptest.Server, path string, page *codingsPage) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(page); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

// readWithin reads exactly len(want) bytes from r, or fails the test after
// waitLimit. stop must unblock the read, for instance by closing r.
func readWithin(t *testing.T, r io.Reader, n int, stop func()) []byte {
	t.Helper()
	got := make([]byte, n)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(r, got)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading the first %d bytes: %v (got %q)", n, err, got)
		}
	case <-time.After(waitLimit):
		stop()
		err := <-done // the read fails once stop has unblocked it
		t.Fatalf("no %d bytes within %v; the stream was not flushed (the read ended with: %v)", n, waitLimit, err)
	}
	return got
}

func TestGoClientGetsGzipTransparently(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	client := &http.Client{Transport: &http.Transport{}, Timeout: waitLimit}
	t.Cleanup(client.CloseIdleConnections)
	for _, p := range compressiblePages(t) {
		res, err := client.Get(srv.URL + p.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: reading the body: %v", p.path, err)
		}
		if !res.Uncompressed {
			t.Errorf("GET %s: the transport did not decode the body (Content-Encoding %q)", p.path, res.Header.Get("Content-Encoding"))
		}
		if !bytes.Equal(body, p.body) {
			t.Errorf("GET %s: decoded body differs from the served content (%d bytes, want %d)", p.path, len(body), len(p.body))
		}
	}
	records := serverCodings(t, srv)
	for _, p := range compressiblePages(t) {
		if got := records[p.path].ContentEncoding; got != "gzip" {
			t.Errorf("server sent %s with Content-Encoding %q, want gzip (record %+v)", p.path, got, records[p.path])
		}
	}
}

func TestGoClientReceivesEachEventAsItIsFlushed(t *testing.T) {
	// With an hour between events, the first one can only arrive if the
	// handler's flush went through the encoder to the connection.
	srv := startServer(t, time.Hour)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !res.Uncompressed {
		t.Errorf("the event stream went out with Content-Encoding %q, want gzip decoded by the transport", res.Header.Get("Content-Encoding"))
	}
	want := events(1)
	if got := readWithin(t, res.Body, len(want), cancel); !bytes.Equal(got, want) {
		t.Errorf("first event = %q, want %q", got, want)
	}
}

func TestUploadAnswersWithDecodedSizeAndHash(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	sample := uploadSample()
	checkUpload(t, srv.Client(), srv.URL, sample)
}

// checkUpload posts sample to the demo's /upload through c and checks that
// the answer reports its decoded size and SHA-256.
func checkUpload(t *testing.T, c *http.Client, base string, sample []byte) {
	t.Helper()
	res, err := c.Post(base+"/upload", "text/plain", bytes.NewReader(sample))
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
}

func TestUploadOverTheCapIs413(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	res, err := srv.Client().Post(srv.URL+"/upload", "application/octet-stream", io.LimitReader(zeros{}, maxUpload+1))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", res.StatusCode)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestRecorderKeepsTheHeaderThatWentOut(t *testing.T) {
	var log codingLog
	h := log.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "zstd")
		w.Header().Add("Vary", "Accept-Encoding")
		w.WriteHeader(http.StatusEarlyHints) // interim: not the final header
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("Content-Encoding", "changed after the header went out")
		// httptest.ResponseRecorder keeps the 103 as the status and refuses
		// a body after it; only the header that went out matters here.
		_, _ = io.WriteString(w, "body")
	}))
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("Accept-Encoding", "br")
	h.ServeHTTP(httptest.NewRecorder(), req)
	h.ServeHTTP(httptest.NewRecorder(), req)
	want := codingRecord{Requests: 2, Status: http.StatusAccepted, ContentEncoding: "zstd", Vary: "Accept-Encoding", AcceptEncoding: "br"}
	key, _, _ := log.clientKey(req)
	if got := log.clients[key].Paths["/x"]; got != want {
		t.Errorf("record = %+v, want %+v", got, want)
	}
}

// /debug/codings shows each client its own requests: a browser by the
// cookie its first page load got, curl by its User-Agent and address.
func TestCodingsArePerClient(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	get := func(path, userAgent string, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept-Encoding", "gzip")
		if strings.HasPrefix(userAgent, "Browser") && path == "/" {
			req.Header.Set("Sec-Fetch-Dest", "document") // a page load
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := srv.Client().Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			t.Fatal(err)
		}
		if err := res.Body.Close(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	page := func(path, userAgent string, cookie *http.Cookie) codingsPage {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", userAgent)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := srv.Client().Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var p codingsPage
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	first := get("/", "Browser/1.0", nil)
	var cookie *http.Cookie
	for _, c := range first.Cookies() {
		if c.Name == clientCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("the first response set no %s cookie: %v", clientCookie, first.Header.Values("Set-Cookie"))
	}
	// The cookie, not the User-Agent, names the browser from then on.
	get("/api/products", "Browser/1.0 (changed)", cookie)
	get("/small", "curl/8.0", nil)

	browser := page("/debug/codings", "Browser/1.0 (changed)", cookie)
	if browser.Client != "Browser/1.0 at 127.0.0.1" || browser.About == "" {
		t.Errorf("browser page: client %q, about %q", browser.Client, browser.About)
	}
	for _, path := range []string{"/", "/api/products"} {
		if browser.Paths[path].Requests != 1 {
			t.Errorf("browser page lacks %s: %v", path, browser.Paths)
		}
	}
	if _, ok := browser.Paths["/small"]; ok {
		t.Errorf("browser page shows curl's /small: %v", browser.Paths)
	}

	curl := page("/debug/codings", "curl/8.0", nil)
	if _, ok := curl.Paths["/small"]; !ok || len(curl.Paths) != 1 { // the page is recorded after it is answered
		t.Errorf("curl page: %v", curl.Paths)
	}
	if curl.Paths["/small"].AcceptEncoding != "gzip" {
		t.Errorf("curl's /small record: %+v", curl.Paths["/small"])
	}

	all := page("/debug/codings?all=1", "anyone", nil)
	if len(all.Clients) != 2 || all.Clients["Browser/1.0 at 127.0.0.1"]["/"].Requests != 1 || all.Clients["curl/8.0 at 127.0.0.1"]["/small"].Requests != 1 {
		t.Errorf("?all=1 clients: %v", all.Clients)
	}
}

func TestRunPrintsAddressAndShutsDownOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, time.Hour, "", &out) }()

	// An open event stream must not hold shutdown up: run's shutdown
	// fails after 5 s if a handler is still running.
	url := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	res, err := client.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	readWithin(t, res.Body, len(event(1)), func() { res.Body.Close() })

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("run did not return within %v of cancel", waitLimit)
	}
	if !strings.Contains(out.String(), "listening on "+url+"\n") {
		t.Errorf("output does not say where it listens:\n%s", out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestCountersEndpointsAgreeWithTheResponses(t *testing.T) {
	srv := startServer(t, time.Millisecond)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	req, err := http.NewRequest("GET", srv.URL+"/api/products", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil || res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET /api/products: Content-Encoding %q, %v", res.Header.Get("Content-Encoding"), err)
	}
	products, err := json.Marshal(catalog())
	if err != nil {
		t.Fatal(err)
	}

	// The same client, asking for no coding: the counters' own responses
	// then count as not accepted, leaving gzip's figures as they were.
	res, err = client.Get(srv.URL + "/debug/counters")
	if err != nil {
		t.Fatal(err)
	}
	var counters struct {
		Compressor struct {
			Codings map[string]struct {
				Compressed             int `json:"compressed"`
				TotalUncompressedBytes int `json:"total_uncompressed_bytes"`
				TotalCompressedBytes   int `json:"total_compressed_bytes"`
			} `json:"codings"`
		} `json:"compressor"`
	}
	err = json.NewDecoder(res.Body).Decode(&counters)
	_ = res.Body.Close()
	if err != nil {
		t.Fatalf("/debug/counters: %v", err)
	}
	if g := counters.Compressor.Codings["gzip"]; g.Compressed != 1 || g.TotalUncompressedBytes != len(products) || g.TotalCompressedBytes != len(wire) {
		t.Errorf("/debug/counters has gzip %+v, want 1 response of %d bytes sent as %d", g, len(products), len(wire))
	}

	res, err = client.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: Content-Type %q, %v", res.Header.Get("Content-Type"), err)
	}
	for _, want := range []string{
		"# TYPE squeeze_compressor_compressed_total counter\n",
		`squeeze_compressor_compressed_total{coding="gzip"} 1` + "\n",
		fmt.Sprintf(`squeeze_compressor_compressed_bytes_total{coding="gzip"} %d`+"\n", len(wire)),
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}

// The demo serves repeated responses from its cache and shows the
// counters, to a client that keeps cookies and to one that sends none, as
// curl does. A browser's page load gets the demo's client cookie, and a
// response with Set-Cookie is never cached: it counts neither as a hit nor
// as a miss.
func TestDebugCacheCountsHits(t *testing.T) {
	for _, client := range []string{"with cookie jar", "curl, no cookies", "browser page loads"} {
		t.Run(client, func(t *testing.T) {
			testDebugCacheCountsHits(t, client)
		})
	}
}

func testDebugCacheCountsHits(t *testing.T, client string) {
	srv := startServer(t, time.Hour)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: waitLimit}
	if client != "curl, no cookies" {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Jar = jar
	}
	for range 4 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/products", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		if client == "browser page loads" {
			req.Header.Set("Sec-Fetch-Dest", "document")
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	res, err := c.Get(srv.URL + "/debug/cache")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var stats squeeze.CacheStats
	if err := json.NewDecoder(res.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	// A browser's first page load carries Set-Cookie and is not cached:
	// three requests count, and the first of them misses.
	want := squeeze.CacheStats{Hits: 3, Misses: 1, Entries: 1}
	if client == "browser page loads" {
		want = squeeze.CacheStats{Hits: 2, Misses: 1, Entries: 1}
	}
	if stats.Hits != want.Hits || stats.Misses != want.Misses || stats.Entries != want.Entries {
		t.Errorf("/debug/cache after four identical requests: %+v, want %d hits, %d miss, %d entry", stats, want.Hits, want.Misses, want.Entries)
	}
}

// TestStaticFilesAreTheEmbeddedSiblings checks that /static/ sends the
// siblings go generate made, byte for byte, and that each still decodes to
// its file (FileServer would otherwise fall back to encoding).
func TestStaticFilesAreTheEmbeddedSiblings(t *testing.T) {
	srv := startServer(t, time.Hour)
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: waitLimit}
	for _, name := range []string{"app.js", "app.css", "index.html", "dict.js"} {
		for coding, ext := range map[string]string{"br": ".br", "zstd": ".zst", "gzip": ".gz"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/static/"+name, nil)
			req.Header.Set("Accept-Encoding", coding)
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.Header.Get("Content-Encoding") != coding || !bytes.Equal(body, embedded(t, name+ext)) {
				t.Errorf("%s %s: Content-Encoding %q, %d bytes; want the embedded %s%s (run go generate in example/ after editing static/)",
					name, coding, res.Header.Get("Content-Encoding"), len(body), name, ext)
			}
		}
	}
}
