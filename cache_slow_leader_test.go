package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A request identical to a stream being stored waits for that stream's
// leader at most the stream patience in all, then encodes for itself, even
// while the leader goes on making progress: a leader whose client reads
// slowly but steadily must not hold back the URL's other clients for as
// long as it lasts.
func TestCacheFollowerDoesNotWaitOutASteadilySlowLeader(t *testing.T) {
	body := textBody(21, 400<<10)
	c := newCache(t, 64<<20)
	squeeze.SetStreamPatience(c, 100*time.Millisecond)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithEncodings("gzip")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", `"slow-v1"`)
		if r.Header.Get("X-Slow") == "" {
			_, _ = w.Write(body)
			return
		}
		_, _ = w.Write(body[:64<<10]) // past the buffer: a stream, leading the flight
		once.Do(func() { close(started) })
		// The leader's client takes a few bytes a millisecond, for ever
		// unless released: the leader always makes progress.
		for rest := body[64<<10:]; len(rest) > 0; {
			select {
			case <-release:
				_, _ = w.Write(rest)
				return
			case <-time.After(time.Millisecond):
			}
			n := min(len(rest), 16)
			_, _ = w.Write(rest[:n])
			rest = rest[n:]
		}
	}))
	leaderDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { leaderDone <- serveAt(h, "/app.js", "gzip", "X-Slow", "1") }()
	<-started
	followerDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { followerDone <- serveAt(h, "/app.js", "gzip") }()
	var follower *httptest.ResponseRecorder
	select {
	case follower = <-followerDone:
	case <-leaderDone:
		t.Fatal("the follower of a slow leader finished only after the leader did")
	case <-time.After(time.Minute): // a bound for a hang; the patience is 100 ms
		t.Fatal("the follower of a slow leader still waits while the leader makes progress")
	}
	close(release)
	leader := <-leaderDone
	checkBody(t, follower.Header(), follower.Body.Bytes(), body)
	checkBody(t, leader.Header(), leader.Body.Bytes(), body)
	if ce := follower.Header().Get("Content-Encoding"); ce != "gzip" {
		t.Errorf("follower Content-Encoding %q, want gzip", ce)
	}
	// The leader stored its stream; the follower, which gave up, stored
	// nothing, and the next request hits.
	if s := c.Stats(); s.Stores != 1 || s.Misses != 2 {
		t.Errorf("stats %+v, want 2 misses and 1 store", s)
	}
	rec := serveAt(h, "/app.js", "gzip")
	checkBody(t, rec.Header(), rec.Body.Bytes(), body)
	if s := c.Stats(); s.Hits != 1 {
		t.Errorf("stats %+v after the leader stored, want 1 hit", s)
	}
}

// A request that joins the flight of an identical miss does not wait for the
// leader's whole response: a leader whose client reads slowly (or whose
// handler is slow) must not hold every other client of that URL and ETag, not
// even a header sent, for as long as it lasts.
func TestCacheStalledLeaderDoesNotBlockIdenticalRequests(t *testing.T) {
	body := textBody(12, 200<<10)
	c := newCache(t, 64<<20)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags())).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", `"big-v1"`)
		if r.Header.Get("X-Stall") != "" {
			_, _ = w.Write(body[:100<<10]) // past the buffer: a stream, leading the flight
			once.Do(func() { close(started) })
			<-release // the leader's client reads slowly
			_, _ = w.Write(body[100<<10:])
			return
		}
		_, _ = w.Write(body)
	}))
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		serveAt(h, "/big.js", "gzip", "X-Stall", "1")
	}()
	<-started
	followerDone := make(chan *httptest.ResponseRecorder, 1)
	go func() { followerDone <- serveAt(h, "/big.js", "gzip") }()
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-followerDone:
	case <-time.After(5 * time.Second):
		t.Errorf("an identical request still waits after 5 s for a stalled leader's stream")
	}
	close(release)
	<-leaderDone
	if rec == nil {
		rec = <-followerDone
	}
	checkBody(t, rec.Header(), rec.Body.Bytes(), body)
}

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
	h := newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithEncodings("gzip")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
