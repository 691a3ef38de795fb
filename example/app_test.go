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
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait in these tests: external programs, reads from
// streams, shutdown.
const waitLimit = 30 * time.Second

// startServer serves the demo's router on a free loopback port for the
// duration of the test. tick is the interval between server-sent events.
func startServer(t *testing.T, tick time.Duration) *httptest.Server {
	t.Helper()
	h, err := newRouter(tick)
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
// used.
func serverCodings(t *testing.T, srv *httptest.Server) map[string]codingRecord {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + "/debug/codings")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var records map[string]codingRecord
	if err := json.NewDecoder(res.Body).Decode(&records); err != nil {
		t.Fatalf("decoding /debug/codings: %v", err)
	}
	return records
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
	res, err := srv.Client().Post(srv.URL+"/upload", "text/plain", bytes.NewReader(sample))
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
	if got := log.byPath["/x"]; got != want {
		t.Errorf("record = %+v, want %+v", got, want)
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
	go func() { done <- run(ctx, ln, time.Hour, &out) }()

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
