package squeeze_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The per-response state is pooled: once a response finished, the writer
// its handler was given must reach nothing, even when the next response
// runs in the same pooled state, and the header values the middleware set
// on the finished response must not change under whoever keeps its header
// map (an access logger, a recorder).
func TestFinishedWriterReachesNothing(t *testing.T) {
	m := newMiddleware(t)
	first, second := textBody(1, 4000), textBody(2, 5000)
	var leaked http.ResponseWriter
	h1 := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(first)
		leaked = w
	}))
	var misuse []string
	h2 := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		leaked.Header().Set("X-Leaked", "1")
		leaked.WriteHeader(http.StatusTeapot)
		if _, err := leaked.Write([]byte("leaked")); err == nil {
			misuse = append(misuse, "Write succeeded")
		}
		if _, err := io.Copy(leaked, strings.NewReader("leaked")); err == nil {
			misuse = append(misuse, "ReadFrom succeeded")
		}
		rc := http.NewResponseController(leaked)
		if err := rc.Flush(); err == nil {
			misuse = append(misuse, "Flush succeeded")
		}
		if _, _, err := rc.Hijack(); err == nil {
			misuse = append(misuse, "Hijack succeeded")
		}
		if u, ok := leaked.(interface{ Unwrap() http.ResponseWriter }); !ok || u.Unwrap() != nil {
			misuse = append(misuse, "Unwrap reached the underlying writer")
		}
		_, _ = w.Write(second)
	}))
	for i := range 50 {
		rec1 := serve(h1, http.MethodGet, "gzip")
		kept := rec1.Header().Clone()
		keptValues := map[string]string{}
		for k, v := range kept {
			keptValues[k] = strings.Join(v, ",")
		}
		misuse = misuse[:0]
		rec2 := serve(h2, http.MethodGet, "zstd")
		if len(misuse) > 0 {
			t.Fatalf("round %d: a finished response's writer still works: %v", i, misuse)
		}
		if rec2.Code != http.StatusOK || rec2.Header().Get("X-Leaked") != "" {
			t.Fatalf("round %d: the next response got the leaked writer's status or header: %d, X-Leaked %q", i, rec2.Code, rec2.Header().Get("X-Leaked"))
		}
		got, err := testtool.TryDecode(rec2.Header().Get("Content-Encoding"), rec2.Body.Bytes())
		if err != nil || !bytes.Equal(got, second) {
			t.Fatalf("round %d: the next response's body is not its own (%d bytes, %v)", i, len(got), err)
		}
		for k, v := range rec1.Header() {
			if strings.Join(v, ",") != keptValues[k] {
				t.Fatalf("round %d: the finished response's %s changed from %q to %q", i, k, keptValues[k], strings.Join(v, ","))
			}
		}
		if rec1.Header().Get("Content-Length") == "" || rec1.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("round %d: the first response was not encoded whole: %v", i, rec1.Header())
		}
	}
}

// A handler that wraps the writer it was given, as logging middleware
// does, still finds the middleware's methods through Unwrap while the
// response lasts.
func TestWriterUnwrapsWhileTheResponseLasts(t *testing.T) {
	m := newMiddleware(t)
	var under http.ResponseWriter
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			t.Fatal("the middleware's writer has no Unwrap")
		}
		under = u.Unwrap()
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the middleware's writer: %v", err)
		}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if under != rec {
		t.Errorf("Unwrap returned %T, want the recorder the middleware was given", under)
	}
}

// A goroutine the handler left behind that keeps writing while the response
// finishes gets an error (errFinished), never a panic, and never writes into
// a later client's response: its state check and its use of the encoder and
// buffer are atomic with finish, which closes the encoder and gives it and
// the buffer back to the pool. Run with -race too: any gap is a reported data
// race on every round.
func TestLeftoverGoroutineWritesFailWithoutHarm(t *testing.T) {
	m := newMiddleware(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var panics []string
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer wg.Wait()
	defer halt()
	note := func(where string, p any) {
		mu.Lock()
		defer mu.Unlock()
		panics = append(panics, fmt.Sprintf("%s: %v", where, p))
	}
	leaky := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(textBody(1, 40000)) // streaming through an encoder
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					note("leftover goroutine", p)
				}
			}()
			for {
				if _, err := w.Write([]byte("leftover bytes from an earlier response\n")); err != nil {
					return
				}
				select {
				case <-stop:
					note("leftover goroutine", "still writing without an error 2s after its handler returned")
					return
				default:
				}
			}
		}()
	}))
	clean := m.Handler(writeText("text/plain", textBody(2, 40000), 0))
	rounds := 200
	if squeeze.RaceEnabled {
		rounds = 10 // the race detector reports the first round already
	}
	for range rounds {
		func() {
			defer func() {
				if p := recover(); p != nil {
					note("finishing the leaky response", p)
				}
			}()
			record(leaky, request("GET", "zstd"))
		}()
		func() {
			defer func() {
				if p := recover(); p != nil {
					note("an unrelated response", p)
				}
			}()
			res, raw := record(clean, request("GET", "zstd"))
			got, err := testtool.TryDecode(res.Header.Get("Content-Encoding"), raw)
			if err != nil || !bytes.Equal(got, textBody(2, 40000)) {
				note("an unrelated response", fmt.Sprintf("body corrupted (%d bytes, %v)", len(got), err))
			}
		}()
	}
	time.Sleep(2 * time.Second)
	halt()
	wg.Wait()
	unrelated := 0
	for _, p := range panics {
		if strings.HasPrefix(p, "an unrelated response") {
			unrelated++
		}
	}
	if len(panics) > 0 {
		t.Errorf("%d failures (%d of them in unrelated responses), first: %s", len(panics), unrelated, panics[0])
	}
}
