package squeeze_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A replica that uses a shared dictionary keeps its key fresh in the
// store, at most once per refresh period, and writes it again when it
// finds it gone.

// refreshes returns r's shared_store refreshes.
func (r *replica) refreshes(t *testing.T) int64 {
	t.Helper()
	var s struct {
		Shared struct {
			Refreshes int64 `json:"refreshes"`
		} `json:"shared_store"`
	}
	if err := json.Unmarshal([]byte(r.counters.String()), &s); err != nil {
		t.Fatal(err)
	}
	return s.Shared.Refreshes
}

func TestSharedDictionaryInUseIsRefreshedOncePerPeriod(t *testing.T) {
	v1, v2 := versions(8 << 10)
	store := newMemStore()
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	learnV1(t, a)
	const every = time.Second
	b := newReplica(t, store, map[string][]byte{"/js/app.v2.js": v2})
	squeeze.SetSharedRefreshEvery(b.m, every)
	delta := func() {
		t.Helper()
		rec := serveAt(b.h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
		if ce := rec.Header().Get("Content-Encoding"); rec.Code != http.StatusOK || ce != squeeze.DCZ && ce != squeeze.DCB {
			t.Fatalf("v2 against v1 from the store: %d %q; want a delta", rec.Code, ce)
		}
		squeeze.WaitSharedStore(b.m)
	}
	start := time.Now()
	gets := store.gets.Load()
	for range 20 {
		delta() // the first read from the store, the others from b's copy
	}
	// Each refresh reads the store once; a loop that outlasts the period
	// (a loaded machine) may refresh within it, at most once per period
	// for each of v1 and v2.
	first := time.Since(start)
	refreshed := b.refreshes(t)
	if first < every && refreshed != 0 {
		t.Errorf("%d refreshes within the period of the read; want none", refreshed)
	}
	if n := store.gets.Load() - gets; n != 1+refreshed {
		t.Errorf("%d reads of the store for 20 deltas with %d refreshes; want the one read of v1 and one a refresh", n, refreshed)
	}
	time.Sleep(every) // since the last use: every dictionary is due
	start, gets = time.Now(), store.gets.Load()
	for range 20 {
		delta()
	}
	// One refresh per dictionary in use and period: v1, and v2, sent
	// with Use-As-Dictionary often enough that b wrote it (more only if
	// the 20 deltas took more than a period).
	periods := 1 + int64(time.Since(start)/every)
	n := b.refreshes(t) - refreshed
	if n < 2 || n > 2*periods {
		t.Errorf("%d refreshes after a period of use; want 2, one of v1 and one of v2", n)
	}
	if reads := store.gets.Load() - gets; reads != n {
		t.Errorf("%d reads of the store for 20 deltas with %d refreshes; want one a refresh", reads, n)
	}
}

func TestSharedDictionaryFoundGoneIsWrittenAgain(t *testing.T) {
	v1, _ := versions(8 << 10)
	store := newMemStore()
	const every = time.Second
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	squeeze.SetSharedRefreshEvery(a.m, every)
	learnV1(t, a)
	key := "dict:" + availableKey(v1)
	if store.value(key) == nil {
		t.Fatalf("v1 is not in the store under %s after it earned its write", key)
	}
	// Evicted, as an LRU store under a flood would.
	store.mu.Lock()
	delete(store.values, key)
	store.mu.Unlock()
	sets := store.sets.Load()
	time.Sleep(every)
	serveAt(a.h, "/js/app.v1.js", chromeAE) // a refresh, which finds it gone
	squeeze.WaitSharedStore(a.m)
	squeeze.WaitSharedStore(a.m) // the write the refresh started
	if store.value(key) == nil || store.sets.Load() != sets+1 {
		t.Errorf("after a refresh found v1 gone, the store holds it: %v, writes %d; want it written again, once",
			store.value(key) != nil, store.sets.Load()-sets)
	}
}
