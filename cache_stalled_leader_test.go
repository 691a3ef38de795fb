package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A stream's leader that stalls (its client stopped reading, or its handler
// waits) holds its flight open for as long as it stalls. The first
// followers wait the patience for it and then encode for themselves; the
// ones that come after do not wait again: one stalled client must not add
// the patience to every later request of its URL for as long as it
// stalls.
func TestCacheStalledLeaderDelaysOnlyTheFirstFollowers(t *testing.T) {
	const patience = 2 * time.Second
	body := textBody(22, 200<<10)
	c := newCache(t, 64<<20)
	squeeze.SetStreamPatience(c, patience)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newMiddleware(t, squeeze.WithCache(c), squeeze.WithTrustedETags(), squeeze.WithEncodings("gzip")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", `"stall-v1"`)
		if r.Header.Get("X-Stall") == "" {
			_, _ = w.Write(body)
			return
		}
		_, _ = w.Write(body[:64<<10]) // past the buffer: a stream, leading the flight
		once.Do(func() { close(started) })
		<-release // stalled until the test ends
		_, _ = w.Write(body[64<<10:])
	}))
	leaderDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { leaderDone <- serveAt(h, "/app.js", "gzip", "X-Stall", "1") }()
	defer func() {
		close(release)
		leader := <-leaderDone
		checkBody(t, leader.Header(), leader.Body.Bytes(), body)
	}()
	<-started
	// The first follower waits the patience out.
	t0 := time.Now()
	rec := serveAt(h, "/app.js", "gzip")
	checkBody(t, rec.Header(), rec.Body.Bytes(), body)
	d := time.Since(t0)
	t.Logf("the first follower: %v", d)
	if d < patience {
		t.Fatalf("the first follower took %v, less than the patience %v: it did not wait for the leader", d, patience)
	}
	// The next ones, one after another and at once, do not wait again.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			t0 := time.Now()
			rec := serveAt(h, "/app.js", "gzip")
			d := time.Since(t0)
			checkBody(t, rec.Header(), rec.Body.Bytes(), body)
			t.Logf("a later follower: %v", d)
			if d >= patience {
				t.Errorf("a later follower took %v: it waited the patience again for a leader known to stall", d)
			}
		})
		wg.Wait()
	}
}
