package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
)

// Dictionaries across a fleet: replicas that share nothing but a
// SharedStore serve deltas against dictionaries another replica
// remembered, never a wrong byte from a store that lies, and no more than
// the timeout of latency from one that hangs.

const fleetPattern = "/js/app.*.js"

// replica is one Middleware of a fleet, with its counters.
type replica struct {
	m        *squeeze.Middleware
	counters *squeeze.Counters
	h        http.Handler
}

// newReplica builds a replica serving files (by path, as scripts does) with
// dictionaries on fleetPattern, sharing store (none if nil).
func newReplica(t *testing.T, store squeeze.SharedStore, files map[string][]byte, opts ...squeeze.Option) *replica {
	t.Helper()
	r := &replica{counters: &squeeze.Counters{}}
	all := []squeeze.Option{squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithObserver(r.counters.Observer())}
	if store != nil {
		// A timeout far above the store's latency: these tests pin what
		// is shared, not how fast; those that pin the timeout set theirs.
		all = append(all, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)))
	}
	r.m = newMiddleware(t, append(all, opts...)...)
	if store != nil {
		// No refresh of a dictionary in use within a test (the default
		// period is 2 s, which a test on a loaded machine can outlast): the
		// tests count the store's calls; those of the refresh set their own.
		squeeze.SetSharedRefreshEvery(r.m, time.Hour)
	}
	r.h = r.m.Handler(scripts(files))
	return r
}

// sharedStats is the shared_store part of Counters.String.
type sharedStats struct {
	Hits                int64 `json:"hits"`
	Misses              int64 `json:"misses"`
	Errors              int64 `json:"errors"`
	VerificationsFailed int64 `json:"verifications_failed"`
	Skipped             int64 `json:"skipped"`
	Writes              int64 `json:"writes"`
	BreakerOpened       int64 `json:"breaker_opened"`
	BreakerOpen         int64 `json:"breaker_open"`
}

func (r *replica) shared(t *testing.T) sharedStats {
	t.Helper()
	var s struct {
		Shared sharedStats `json:"shared_store"`
	}
	if err := json.Unmarshal([]byte(r.counters.String()), &s); err != nil {
		t.Fatal(err)
	}
	return s.Shared
}

// balancer sends a request to the replica its X-Replica header names, as
// a load balancer without stickiness may.
func balancer(replicas ...*replica) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(r.Header.Get("X-Replica")[0] - '0')
		replicas[i].h.ServeHTTP(w, r)
	})
}

// learnV1 has replica a send v1 as often as it takes to earn a write to
// the store (so that it remembers and publishes it) and waits for the
// write.
func learnV1(t *testing.T, a *replica) {
	t.Helper()
	for range squeeze.SharedAdmitAfterDefault {
		rec := serveAt(a.h, "/js/app.v1.js", chromeAE)
		if rec.Code != http.StatusOK || rec.Header().Get("Use-As-Dictionary") == "" {
			t.Fatalf("v1 from the first replica: %d, Use-As-Dictionary %q", rec.Code, rec.Header().Get("Use-As-Dictionary"))
		}
	}
	squeeze.WaitSharedStore(a.m)
}

// serveToEarn serves path from h as often as a dictionary takes to earn
// its write to the fleet's store.
func serveToEarn(h http.Handler, path string) {
	for range squeeze.SharedAdmitAfterDefault {
		serveAt(h, path, chromeAE)
	}
}

func TestSharedDictionaryServesDeltaFromAnotherReplica(t *testing.T) {
	v1, v2 := versions(40 << 10)
	for _, tc := range []struct {
		name   string
		shared bool
		coding string // the delta's coding
		opts   []squeeze.Option
	}{
		{"shared store", true, squeeze.DCZ, nil},
		{"shared store, dcb", true, squeeze.DCB, []squeeze.Option{squeeze.WithEncodings(squeeze.DCB, squeeze.Zstd)}},
		{"no shared store", false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var store squeeze.SharedStore
			if tc.shared {
				store = newMemStore()
			}
			// The first replica has shipped v1 only, the second v2 only.
			a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1}, tc.opts...)
			b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, tc.opts...)
			forEachProtocol(t, balancer(a, b), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				for range squeeze.SharedAdmitAfterDefault { // earning the write
					res, raw := fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE, "X-Replica", "0")
					checkBody(t, res.Header, raw, v1)
				}
				squeeze.WaitSharedStore(a.m)

				for round := range 2 { // a fetch, then the local copy
					res, raw := fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, "X-Replica", "1", "Available-Dictionary", availableFor(v1))
					wantDictVary(t, res.Header)
					ce := res.Header.Get("Content-Encoding")
					t.Logf("round %d: %d bytes of v2 sent as %d bytes of %s", round, len(v2), len(raw), ce)
					if !tc.shared {
						if ce == squeeze.DCZ || ce == squeeze.DCB {
							t.Fatalf("without a shared store, a replica that never saw v1 sent %s", ce)
						}
						checkBody(t, res.Header, raw, v2)
						continue
					}
					if ce != tc.coding {
						t.Fatalf("round %d: Content-Encoding %q, want %s against the dictionary the other replica remembered", round, ce, tc.coding)
					}
					decodeDelta(t, res.Header, raw, v1, v2)
				}
			})
			if tc.shared {
				// Per protocol: one fetch, then the local copy.
				if s := b.shared(t); s.Hits != 1 || s.VerificationsFailed != 0 || s.Errors != 0 {
					t.Errorf("second replica's shared counters %+v, want 1 hit", s)
				}
			}
		})
	}
}

// A deploy of content-hashed bundles: the fresh replica's files hold only
// v2, and it never served v1, yet a returning client holding v1 gets v2 as
// a delta, against the v1 an old replica's FileServer shared.
func TestSharedDictionaryFileServerDeltaAcrossDeploy(t *testing.T) {
	v1, v2 := versions(60 << 10)
	for _, mount := range []string{"/", "/static/"} {
		t.Run("mounted at "+mount, func(t *testing.T) {
			store := newMemStore()
			opts := []squeeze.Option{squeeze.WithDictionaryMatch(mount + "app.*.js"), squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second))}
			oldRep, newRep := newMiddleware(t, opts...), newMiddleware(t, opts...)
			oldFS, _ := fileServer(t, oldRep, fstest.MapFS{"app.v1.js": {Data: v1, ModTime: fsModTime}})
			newFS, _ := fileServer(t, newRep, fstest.MapFS{"app.v2.js": {Data: v2, ModTime: fsModTime}})
			oldH, newH := http.StripPrefix(strings.TrimSuffix(mount, "/"), oldFS), http.StripPrefix(strings.TrimSuffix(mount, "/"), newFS)
			lb := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Replica") == "old" {
					oldH.ServeHTTP(w, r)
					return
				}
				newH.ServeHTTP(w, r)
			})
			forEachProtocol(t, lb, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL+mount+"app.v1.js", chromeAE, "X-Replica", "old")
				checkBody(t, res.Header, raw, v1)
				squeeze.WaitSharedStore(oldRep)
				res, raw = fetch(t, c, srv.URL+mount+"app.v2.js", chromeAE, "X-Replica", "new", "Available-Dictionary", availableFor(v1))
				if ce := res.Header.Get("Content-Encoding"); ce != squeeze.DCZ {
					t.Fatalf("v2 from the fresh replica: Content-Encoding %q, want dcz", ce)
				}
				decodeDelta(t, res.Header, raw, v1, v2)
				if len(raw) > 1000 {
					t.Errorf("v2 as a delta is %d bytes", len(raw))
				}
				// The replicas' background work (best-level upgrades and
				// their writes to the store) ends with the subtest.
				squeeze.WaitFileServer(oldFS)
				squeeze.WaitFileServer(newFS)
				squeeze.WaitSharedStore(oldRep)
				squeeze.WaitSharedStore(newRep)
			})
		})
	}
}

// dictValue frames a dictionary value as squeeze stores it.
func dictValue(pattern string, data []byte) []byte {
	v := append([]byte("sqzd1"), 0, 0)
	binary.BigEndian.PutUint16(v[5:], uint16(len(pattern)))
	return append(append(v, pattern...), data...)
}

func TestSharedDictionaryRejectsWhatFailsVerification(t *testing.T) {
	v1, v2 := versions(20 << 10)
	for _, tc := range []struct {
		name    string
		rewrite func(v []byte) []byte
	}{
		{"a byte of the body flipped", func(v []byte) []byte { v[len(v)-1] ^= 1; return v }},
		{"the body cut short", func(v []byte) []byte { return v[:len(v)-1] }},
		{"another framing", func(v []byte) []byte { v[4] = '2'; return v }},
		{"a pattern length past the value", func([]byte) []byte { return dictValue("/js/app.*.js", nil)[:7] }},
		{"garbage", func([]byte) []byte { return randomBody(3, 5000) }},
		{"empty", func([]byte) []byte { return nil }},
		{"over the limit asked for", func(v []byte) []byte { return append(v, make([]byte, 5<<20)...) }},
		{"another dictionary's bytes", func([]byte) []byte { return dictValue(fleetPattern, v2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
			learnV1(t, a)
			store.setRewrite(func(_ string, v []byte) []byte { return tc.rewrite(v) })
			b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, squeeze.WithDictionaryMatch(fleetPattern, "/css/*"))
			for range 8 {
				rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ || ce == squeeze.DCB {
					t.Fatalf("sent %s against a dictionary the store corrupted", ce)
				}
				checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
			}
			// The bad value is fetched once, not kept, and not asked for
			// again for a while; one bad key does not open the breaker.
			if s := b.shared(t); s.VerificationsFailed != 1 || s.Skipped != 7 || s.Hits != 0 || s.BreakerOpen != 0 {
				t.Errorf("shared counters %+v, want 1 verification failed, 7 skipped, no hit, the breaker closed", s)
			}
		})
	}
}

// A sound dictionary on a pattern this replica does not use may be a
// learned route's, which shares its key: no delta is sent against it, but
// it is not counted as failing verification nor kept from other readers.
func TestSharedDictionaryOfAnotherPatternIsNotRejected(t *testing.T) {
	v1, v2 := versions(20 << 10)
	store := newMemStore()
	store.values["dict:"+availableKey(v1)] = dictValue("/*", v1)
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2})
	for range 3 {
		rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
		if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ || ce == squeeze.DCB {
			t.Fatalf("sent %s against a dictionary of another pattern", ce)
		}
		checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
	}
	if s := b.shared(t); s.VerificationsFailed != 0 || s.Hits != 0 || s.Misses != 3 || s.BreakerOpen != 0 {
		t.Errorf("shared counters %+v, want 3 misses, no verification failed, no hit, the breaker closed", s)
	}
}

// A store that hangs costs each request at most the timeout, and only
// until the breaker opens; then the store is not asked, and responses are
// what they are without it. When the store comes back, a probe finds it
// and deltas are shared again.
func TestSharedStoreBreakerOpensOnHangAndRecovers(t *testing.T) {
	v1, v2 := versions(20 << 10)
	for _, tc := range []struct {
		name string
		fail func(s *memStore)
		mend func(s *memStore)
	}{
		{"hangs until the deadline", func(s *memStore) { s.hang.Store(true) }, func(s *memStore) { s.hang.Store(false) }},
		{"fails at once", func(s *memStore) { s.down.Store(true) }, func(s *memStore) { s.down.Store(false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
			learnV1(t, a)
			b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, squeeze.WithSharedStore(store, squeeze.SharedTimeout(20*time.Millisecond)))
			squeeze.SetSharedBreakerCooldown(b.m, time.Hour)
			tc.fail(store)
			var slowest time.Duration
			serve := func() {
				t0 := time.Now()
				rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				slowest = max(slowest, time.Since(t0))
				if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.Zstd {
					t.Fatalf("Content-Encoding %q with the store broken, want zstd", ce)
				}
				checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
			}
			for b.shared(t).BreakerOpen == 0 {
				serve()
				if calls := store.gets.Load() + store.sets.Load(); calls > 10 {
					t.Fatalf("the breaker is still closed after %d failed calls", calls)
				}
			}
			squeeze.WaitSharedStore(b.m)
			calls := store.gets.Load() + store.sets.Load()
			for range 5 {
				serve()
			}
			t.Logf("slowest response with the store broken: %v (timeout 20ms)", slowest)
			if got := store.gets.Load() + store.sets.Load(); got != calls {
				t.Errorf("the store was asked %d times with the breaker open", got-calls)
			}
			s := b.shared(t)
			if s.Errors < 5 || s.BreakerOpened != 1 || s.BreakerOpen != 1 || s.Skipped < 5 {
				t.Errorf("shared counters %+v, want 5 errors or more, breaker opened once and open, 5 skipped or more", s)
			}

			tc.mend(store)
			squeeze.SetSharedBreakerCooldown(b.m, time.Millisecond)
			time.Sleep(5 * time.Millisecond)
			rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
			if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
				t.Fatalf("after the store came back: Content-Encoding %q, want dcz", ce)
			}
			decodeDelta(t, rec.Header(), rec.Body.Bytes(), v1, v2)
			if s := b.shared(t); s.Hits != 1 || s.BreakerOpen != 0 {
				t.Errorf("shared counters after recovery %+v, want a hit and the breaker closed", s)
			}
		})
	}
}

// A store that ignores its context and never answers does not hold a
// request past the timeout (the request goes on without it), and the
// breaker stops asking it.
func TestSharedStoreThatNeverAnswersDoesNotHoldRequests(t *testing.T) {
	v1, v2 := versions(20 << 10)
	store := newMemStore()
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	learnV1(t, a)
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, squeeze.WithSharedStore(store, squeeze.SharedTimeout(10*time.Millisecond)))
	squeeze.SetSharedBreakerCooldown(b.m, time.Hour)
	store.stuck.Store(true)
	t.Cleanup(func() { close(store.release) })
	for i := range 3 {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1)) }()
		select {
		case rec := <-done:
			checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d still waiting for a store that never answers", i)
		}
	}
	// The first Get never returns, so the later requests waited for its
	// flight: the store was asked once.
	if got := store.gets.Load(); got != 1 {
		t.Errorf("the store was asked %d times, want 1 (one flight per key)", got)
	}
}

// Concurrent requests naming one dictionary the replica lacks make one
// fetch, whose result they share.
func TestSharedDictionaryOneFetchPerKey(t *testing.T) {
	v1, v2 := versions(20 << 10)
	store := newMemStore()
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	learnV1(t, a)
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2})
	entered, gate := make(chan struct{}, 100), make(chan struct{})
	store.setGate(entered, gate) // the first Get waits; the others join its flight
	var wg sync.WaitGroup
	recs := make([]*httptest.ResponseRecorder, 10)
	for i := range recs {
		wg.Go(func() {
			recs[i] = serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
		})
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		close(gate)
		t.Fatal("no request asked the store")
	}
	// Let the other nine reach the flight: nothing outside the guard sees
	// them wait, and under -race on a loaded 2-core machine 50 ms was not
	// always enough for one of them to start.
	time.Sleep(time.Second)
	close(gate)
	wg.Wait()
	if got := store.gets.Load(); got != 1 {
		t.Errorf("%d requests made %d fetches, want 1", len(recs), got)
	}
	for _, rec := range recs {
		if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
			t.Fatalf("Content-Encoding %q, want dcz: every request shares the one fetch", ce)
		}
		decodeDelta(t, rec.Header(), rec.Body.Bytes(), v1, v2)
	}
}

// Dictionaries fetched from the store count against the local budget:
// with room for two, a third evicts the first, which is fetched again.
func TestSharedDictionaryFetchedCountsAgainstLocalBudget(t *testing.T) {
	const size = 30 << 10
	store := newMemStore()
	files := map[string][]byte{}
	var dicts [][]byte
	for i := range 4 {
		d := textBody(100+i, size)
		dicts = append(dicts, d)
		files["/js/app.d"+strconv.Itoa(i)+".js"] = d
	}
	a := newReplica(t, store, files)
	for name := range files {
		serveToEarn(a.h, name)
	}
	squeeze.WaitSharedStore(a.m)
	v2 := textBody(200, size)
	for _, tc := range []struct {
		budget    int64
		wantGets  int64
		explained string
	}{
		{10 * size, 4, "all four kept"},
		// Its own v2 and four fetched pass 4.5 dictionaries: the least
		// recently used, the first fetched, goes.
		{4.5 * size, 5, "the first evicted by the fourth and fetched again"},
	} {
		t.Run(tc.explained, func(t *testing.T) {
			store.gets.Store(0)
			b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, squeeze.WithDictionaryStoreSize(tc.budget))
			for _, i := range []int{0, 1, 2, 3, 0} {
				rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(dicts[i]))
				if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
					t.Fatalf("dictionary %d: Content-Encoding %q", i, ce)
				}
			}
			if got := store.gets.Load(); got != tc.wantGets {
				t.Errorf("store asked %d times, want %d (%s)", got, tc.wantGets, tc.explained)
			}
		})
	}
}

func TestSharedStoreValueLimit(t *testing.T) {
	for _, tc := range []struct {
		size    int
		written bool
	}{
		{2 << 10, true},
		{8 << 10, false},
	} {
		store := newMemStore()
		body := textBody(1, tc.size)
		a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": body}, squeeze.WithSharedStore(store, squeeze.SharedMaxValue(4<<10)))
		serveToEarn(a.h, "/js/app.v1.js")
		squeeze.WaitSharedStore(a.m)
		if got := len(store.keys()) == 1; got != tc.written {
			t.Errorf("a %d-byte dictionary with a 4 KiB value limit: written %v, want %v", tc.size, got, tc.written)
		}
	}
	// Nor is a value over the limit read: the store is asked for at most
	// the limit.
	v1, v2 := versions(8 << 10)
	store := newMemStore()
	sum := sha256.Sum256(v1)
	store.values["dict:"+base64.RawURLEncoding.EncodeToString(sum[:])] = dictValue(fleetPattern, v1)
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2}, squeeze.WithSharedStore(store, squeeze.SharedMaxValue(4<<10)))
	rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
	if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ {
		t.Errorf("served a delta against a dictionary over the value limit")
	}
	if s := b.shared(t); s.Misses != 1 {
		t.Errorf("shared counters %+v, want a miss", s)
	}
}

// The value squeeze writes is the framing dictValue builds, under the key
// the tests above use: keys and framing are a format other replicas, of
// other versions, read.
func TestSharedDictionaryKeyAndValueFormat(t *testing.T) {
	store := newMemStore()
	v1, _ := versions(4 << 10)
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	learnV1(t, a)
	sum := sha256.Sum256(v1)
	key := "dict:" + base64.RawURLEncoding.EncodeToString(sum[:])
	if got := store.value(key); !bytes.Equal(got, dictValue(fleetPattern, v1)) {
		t.Errorf("value under %s: %q..., want the framed dictionary; keys %q", key, prefix(got), store.keys())
	}
	if s := a.shared(t); s.Writes != 1 {
		t.Errorf("shared counters %+v, want 1 write", s)
	}
}

// A store that is down costs writes nothing but a counter: the response
// that remembered the dictionary is unchanged.
func TestSharedStoreDownLeavesResponsesAlone(t *testing.T) {
	store := newMemStore()
	store.down.Store(true)
	v1, _ := versions(4 << 10)
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	for range squeeze.SharedAdmitAfterDefault {
		rec := serveAt(a.h, "/js/app.v1.js", chromeAE)
		checkBody(t, rec.Header(), rec.Body.Bytes(), v1)
	}
	squeeze.WaitSharedStore(a.m)
	if s := a.shared(t); s.Errors != 1 || s.Writes != 0 {
		t.Errorf("shared counters %+v, want 1 error", s)
	}
}

func TestSharedStoreCountersExport(t *testing.T) {
	v1, v2 := versions(8 << 10)
	store := newMemStore()
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	learnV1(t, a)
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2})
	serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
	var prom strings.Builder
	if err := b.counters.WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE squeeze_shared_store_hits_total counter\nsqueeze_shared_store_hits_total 1\n",
		"squeeze_shared_store_verifications_failed_total 0\n",
		"# TYPE squeeze_shared_store_breaker_open gauge\nsqueeze_shared_store_breaker_open 0\n",
		"squeeze_shared_store_read_bytes_total " + strconv.Itoa(len(dictValue(fleetPattern, v1))) + "\n",
	} {
		if !strings.Contains(prom.String(), want) {
			t.Errorf("Prometheus output lacks %q", want)
		}
	}
	if s := b.shared(t); s.Hits != 1 {
		t.Errorf("expvar shared_store %+v, want 1 hit", s)
	}
}

func TestSharedStoreOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  squeeze.Option
		want string
	}{
		{squeeze.WithSharedStore(nil), "WithSharedStore(nil): the store is nil"},
		{squeeze.WithSharedStore(newMemStore(), squeeze.SharedTimeout(0)), "SharedTimeout(0s): timeout must be positive"},
		{squeeze.WithSharedStore(newMemStore(), squeeze.SharedTimeout(-time.Second)), "SharedTimeout(-1s)"},
		{squeeze.WithSharedStore(newMemStore(), squeeze.SharedTimeout(time.Minute)), "SharedTimeout(1m0s): timeout must be positive and at most 10s"},
		{squeeze.WithSharedStore(newMemStore(), squeeze.SharedMaxValue(100)), "SharedMaxValue(100): size must be 1024 to"},
		{squeeze.WithSharedStore(newMemStore(), squeeze.SharedMaxValue(1<<30)), "SharedMaxValue(1073741824)"},
	} {
		_, err := squeeze.New(tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// A store used with no dictionary path configured is never asked.
func TestSharedStoreNotAskedOffDictionaryPaths(t *testing.T) {
	store := newMemStore()
	v1, _ := versions(4 << 10)
	b := newReplica(t, store, map[string][]byte{"/other.js": v1})
	serveAt(b.h, "/other.js", chromeAE, "Available-Dictionary", availableFor(v1))
	serveAt(b.h, "/js/app.v2.js", "gzip, br, zstd", "Available-Dictionary", availableFor(v1))
	if got := store.gets.Load(); got != 0 {
		t.Errorf("store asked %d times for requests that could use no dictionary", got)
	}
}

// A request names a real dictionary of the fleet on a path of another of
// the replica's patterns: it gets no delta, but it neither marks the
// value bad nor counts against the store, so however many such requests
// come, the clients the dictionaries belong to get their deltas. Values
// that are truly bad are refused and counted apart, and do not open the
// breaker either: only calls that fail do.
func TestSharedDictionaryOnAnotherPatternsPathKeepsSharing(t *testing.T) {
	const n = 6 // dictionaries: more than the breaker's failures in a row
	v1, v2 := versions(20 << 10)
	dicts := make([][]byte, n)
	files := map[string][]byte{}
	for i := range dicts {
		dicts[i] = append(bytes.Clone(v1), fmt.Sprintf("// build %d\n", i)...)
		files["/js/app.b"+strconv.Itoa(i)+".js"] = dicts[i]
	}
	store := newMemStore()
	a := newReplica(t, store, files)
	for path := range files {
		for range squeeze.SharedAdmitAfterDefault { // earning the write
			if rec := serveAt(a.h, path, chromeAE); rec.Header().Get("Use-As-Dictionary") == "" {
				t.Fatalf("%s: no Use-As-Dictionary", path)
			}
		}
		serveToEarn(a.h, path)
	}
	squeeze.WaitSharedStore(a.m)

	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2, "/css/site.css": v2},
		squeeze.WithDictionaryMatch(fleetPattern, "/css/*"))
	for round := range 3 {
		for i, d := range dicts {
			rec := serveAt(b.h, "/css/site.css", chromeAE, "Available-Dictionary", availableFor(d))
			if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ || ce == squeeze.DCB {
				t.Fatalf("round %d, dictionary %d: %s against a dictionary whose pattern does not match /css/site.css", round, i, ce)
			}
			checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
		}
	}
	deltas := 0
	for i, d := range dicts {
		for range 2 {
			rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(d))
			if rec.Header().Get("Content-Encoding") == squeeze.DCZ {
				decodeDelta(t, rec.Header(), rec.Body.Bytes(), dicts[i], v2)
				deltas++
			}
		}
	}
	s := b.shared(t)
	t.Logf("%d of %d requests got deltas after %d requests on another pattern's path; shared counters %+v", deltas, 2*n, 3*n, s)
	if deltas != 2*n || s.BreakerOpened != 0 || s.VerificationsFailed != 0 || s.Hits != n {
		t.Errorf("%d of %d deltas, shared counters %+v: want every request a delta, one hit per dictionary, nothing failed and the breaker never opened", deltas, 2*n, s)
	}

	// Values that fail verification: refused and counted, the breaker closed.
	bad := make([][]byte, n)
	for i := range bad {
		bad[i] = append(bytes.Clone(v1), fmt.Sprintf("// corrupted %d\n", i)...)
		if err := store.Set(t.Context(), "dict:"+availableKey(bad[i]), dictValue(fleetPattern, append(bytes.Clone(bad[i]), 'x')), 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		for _, d := range bad {
			rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(d))
			if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ || ce == squeeze.DCB {
				t.Fatalf("%s against a value that fails verification", ce)
			}
			checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
		}
	}
	if s := b.shared(t); s.VerificationsFailed != n || s.BreakerOpened != 0 || s.BreakerOpen != 0 {
		t.Errorf("after %d corrupted values: shared counters %+v, want %d verifications failed and the breaker never opened", n, s, n)
	}
}

// availableKey returns the unpadded base64url SHA-256 of dict, as the keys
// of dictionaries hold it.
func availableKey(dict []byte) string {
	h := sha256.Sum256(dict)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// plainStore hides a store's GetOrSize: a SharedStore that cannot tell a
// value's length, read in one call that holds the whole limit.
type plainStore struct{ squeeze.SharedStore }

// Requests naming hashes no replica ever stored, from many clients at
// once, cost few reads of the store and hold little while they are read,
// so a client naming the dictionary the fleet holds still gets its deltas:
// the flood's reads take the places of keys asked for the first time, the
// client's second request (its key asked again) one of the others, and
// after that fetch the replica holds the dictionary itself. The client's
// requests come one after another, amid the flood.
func TestSharedDictionaryUnknownHashesLeaveRoomForKnownOnes(t *testing.T) {
	const (
		attackers = 16
		requests  = 20
		warm      = 200 // attacker requests before the client's first
		// minDeltas is the bound: the client's first request may find the
		// places full, and its second read may miss the timeout on a
		// loaded machine; every later request is served from the
		// replica's own copy.
		minDeltas = requests - 5
	)
	v1, v2 := versions(20 << 10)
	for _, tc := range []struct {
		name  string
		plain bool
	}{{"store telling lengths", false}, {"plain store", true}} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
			learnV1(t, a)
			store.setLatency(10 * time.Millisecond)
			var s squeeze.SharedStore = store
			if tc.plain {
				s = plainStore{store}
			}
			// The attackers ask for a short script, not compressed: their
			// requests cost the replica little but the lookup.
			b := newReplica(t, s, map[string][]byte{"/js/app.v2.js": v2, "/js/app.x.js": []byte("x")},
				squeeze.WithSharedStore(s, squeeze.SharedTimeout(100*time.Millisecond)))
			reads0 := store.gets.Load()

			var attacks atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range attackers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), 1))
					var hash [32]byte
					for {
						select {
						case <-stop:
							return
						default:
						}
						for j := range hash {
							hash[j] = byte(rng.Uint32())
						}
						avail := ":" + base64.StdEncoding.EncodeToString(hash[:]) + ":"
						if rec := serveAt(b.h, "/js/app.x.js", chromeAE, "Available-Dictionary", avail); rec.Code != http.StatusOK {
							t.Errorf("attacker's request: %d", rec.Code)
							return
						}
						attacks.Add(1)
					}
				})
			}
			for attacks.Load() < warm {
				time.Sleep(100 * time.Microsecond)
			}
			deltas := 0
			for range requests {
				rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				if rec.Header().Get("Content-Encoding") == squeeze.DCZ {
					decodeDelta(t, rec.Header(), rec.Body.Bytes(), v1, v2)
					deltas++
					continue
				}
				checkBody(t, rec.Header(), rec.Body.Bytes(), v2)
			}
			close(stop)
			wg.Wait()
			reads, n, peak := store.gets.Load()-reads0, attacks.Load(), store.peak.Load()
			t.Logf("%d of %d requests got deltas; the store was read %d times for %d attacker requests, at most %d at once; shared counters %+v",
				deltas, requests, reads, n, peak, b.shared(t))
			if deltas < minDeltas {
				t.Errorf("%d of %d requests got deltas under a flood of unknown hashes, want at least %d", deltas, requests, minDeltas)
			}
			// 4 reads of keys asked for the first time, the client's, and
			// the rate-limited refresh of the dictionary it uses.
			if peak > 6 {
				t.Errorf("%d reads in flight at once, want at most 6", peak)
			}
			if reads*4 > n {
				t.Errorf("the store was read %d times for %d requests naming unknown hashes, want at most a quarter", reads, n)
			}
		})
	}
}
