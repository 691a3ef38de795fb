package squeeze_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A response body's decoders, and the share of the decoder memory budget
// they hold, go back when the body ends, when it is closed, and, for a body
// dropped without either, when the garbage collector finds it.
func TestTransportReleasesDecoders(t *testing.T) {
	plain := textBody(5, 256<<10)
	for _, coding := range []string{"zstd", "br", "gzip"} {
		srv := newRawServer(t, coding, encodeRef(t, coding, plain))
		for _, tt := range []struct {
			name string
			use  func(t *testing.T, body io.ReadCloser)
		}{
			{"read to the end, not closed", func(t *testing.T, body io.ReadCloser) {
				if _, err := io.Copy(io.Discard, body); err != nil {
					t.Fatal(err)
				}
			}},
			{"closed after one read", func(t *testing.T, body io.ReadCloser) {
				if _, err := body.Read(make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
				if err := body.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := body.Read(make([]byte, 100)); err != http.ErrBodyReadAfterClose {
					t.Fatalf("Read after Close: %v, want http.ErrBodyReadAfterClose", err)
				}
			}},
			{"closed before any read", func(t *testing.T, body io.ReadCloser) {
				if err := body.Close(); err != nil {
					t.Fatal(err)
				}
			}},
			{"closed twice", func(t *testing.T, body io.ReadCloser) {
				_, _ = body.Read(make([]byte, 10))
				_ = body.Close()
				if err := body.Close(); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(coding+"/"+tt.name, func(t *testing.T) {
				tr := newTransport(t, nil)
				resp := get(t, tr, "GET", srv.URL)
				if _, err := resp.Body.Read(make([]byte, 1)); err != nil && tt.name != "closed before any read" {
					t.Fatal(err)
				}
				if tt.name != "closed before any read" && squeeze.TransportBudgetIdle(tr) {
					t.Fatal("a body being read holds none of the budget: the test cannot see a release")
				}
				tt.use(t, resp.Body)
				if !squeeze.TransportBudgetIdle(tr) {
					t.Error("the body still holds decoder memory")
				}
				_ = resp.Body.Close()
			})
		}
	}
}

func TestTransportCleanupReleasesUnclosedBody(t *testing.T) {
	plain := textBody(6, 256<<10)
	srv := newRawServer(t, "zstd", encodeRef(t, "zstd", plain))
	tr := newTransport(t, nil)
	func() {
		resp := get(t, tr, "GET", srv.URL)
		if _, err := resp.Body.Read(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		// Dropped: neither read to the end nor closed.
	}()
	if squeeze.TransportBudgetIdle(tr) {
		t.Fatal("an abandoned body holds none of the budget: the test cannot see a release")
	}
	for range 100 {
		runtime.GC()
		runtime.Gosched()
		if squeeze.TransportBudgetIdle(tr) {
			return
		}
	}
	t.Fatal("100 collections later the abandoned body still holds decoder memory")
}

// Many goroutines share one Transport, each decoding, abandoning or closing
// bodies early; under -race this checks the pools, the budget and the
// dictionary store. No goroutine outlives the test.
func TestTransportConcurrentRequestsLeakNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	plain := textBody(7, 64<<10)
	servers := map[string]*rawServer{}
	for _, coding := range []string{"zstd", "br", "gzip"} {
		servers[coding] = newRawServer(t, coding, encodeRef(t, coding, plain))
	}
	base := &http.Transport{MaxIdleConnsPerHost: 16}
	tr := &squeeze.Transport{Base: base, DictionaryStoreSize: 1 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 12 {
		wg.Go(func() {
			for i := range 10 {
				coding := []string{"zstd", "br", "gzip"}[(g+i)%3]
				req, _ := http.NewRequest("GET", servers[coding].URL, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs <- err
					return
				}
				if i%4 == 3 {
					_, _ = resp.Body.Read(make([]byte, 10))
					_ = resp.Body.Close()
					continue
				}
				got, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || !bytes.Equal(got, plain) {
					errs <- fmt.Errorf("%s: %d bytes, %v", coding, len(got), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !squeeze.TransportBudgetIdle(tr) {
		t.Error("decoder memory still held after every body was read or closed")
	}
	base.CloseIdleConnections()
	for _, s := range servers {
		s.Close()
	}
	if n := waitGoroutines(before); n > before {
		t.Errorf("%d goroutines after the test, %d before", n, before)
	}
}

// Responses compressed by the reference command-line programs decode.
func TestTransportDecodesReferenceCLIOutput(t *testing.T) {
	plain := textBody(8, 300<<10)
	for _, tc := range []struct {
		coding, name string
		args         []string
	}{
		{"zstd", "zstd", []string{"-c", "-q", "-19"}},
		{"br", "brotli", []string{"-c", "-q", "11"}},
		{"gzip", "gzip", []string{"-c", "-9"}},
	} {
		t.Run(tc.coding, func(t *testing.T) {
			cmd := exec.Command(testtool.Require(t, tc.name), tc.args...)
			cmd.Stdin = bytes.NewReader(plain)
			enc, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			srv := newRawServer(t, tc.coding, enc)
			got, err := readAll(t, get(t, newTransport(t, nil), "GET", srv.URL))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("decoded %d bytes (%v), want %d", len(got), err, len(plain))
			}
		})
	}
}
