package squeeze_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// What a replica writes to its store is earned and within its write
// budget (shared_admission.go): a flood of bodies a client chose writes
// nothing until each is asked for, and then no more than the budget.

// bodyOf serves as application/javascript, fresh for an hour, what body
// returns for the request's path and raw query.
func bodyOf(body func(path, query string) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(body(r.URL.Path, r.URL.RawQuery))
	})
}

func TestSharedStoreAdmissionOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opts []squeeze.Option
		want string // "" for no error
	}{
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedWriteBudget(0, 1<<30))}, "SharedWriteBudget(0, 1073741824): writes and bytes per minute must be positive"},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedWriteBudget(10, -1))}, "SharedWriteBudget(10, -1): writes and bytes per minute must be positive"},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedWriteBudget(10, 1<<40))}, "bytes at most 2147483647 (2 GiB)"},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedWriteBudget(10, 1<<20))},
			"SharedWriteBudget(10, 1048576): bytes must be at least the largest value written, 4194304 (SharedMaxValue)"},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedWriteBudget(10, 1<<20), squeeze.SharedMaxValue(1<<20))}, ""},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedAdmitAfter(0))}, "SharedAdmitAfter(0): the number of times sent must be 1 to 1048576"},
		{[]squeeze.Option{squeeze.WithSharedStore(newMemStore(), squeeze.SharedAdmitAfter(1<<21))}, "SharedAdmitAfter(2097152)"},
	} {
		_, err := squeeze.New(tc.opts...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

func TestSharedStoreWritesOnlyEarnedDictionariesWithinTheBudget(t *testing.T) {
	const budget = 4
	store := newMemStore()
	v1, _ := versions(8 << 10)
	counters := &squeeze.Counters{}
	m := newMiddleware(t, squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second), squeeze.SharedMaxValue(64<<10), squeeze.SharedWriteBudget(budget, 1<<20)),
		squeeze.WithObserver(counters.Observer()))
	// The script, with the query echoed in front: each query a body.
	body := func(q string) []byte { return append([]byte("/* "+q+" */\n"), v1...) }
	h := m.Handler(bodyOf(func(_, q string) []byte { return body(q) }))

	// Distinct bodies, each sent once, earn nothing.
	for i := range 50 {
		serveAt(h, fmt.Sprintf("/js/app.v1.js?q=%d", i), chromeAE)
	}
	squeeze.WaitSharedStore(m)
	if n := store.sets.Load(); n != 0 {
		t.Fatalf("50 bodies sent once each: %d writes, want none", n)
	}
	// Sent twice, one earns its write.
	serveToEarn(h, "/js/app.v1.js?q=real")
	squeeze.WaitSharedStore(m)
	if n := store.sets.Load(); n != 1 {
		t.Fatalf("a body sent %d times: %d writes, want 1", squeeze.SharedAdmitAfterDefault, n)
	}
	// Asked for by hash, each earns its write, within the budget.
	for i := range 50 {
		q := fmt.Sprintf("q=%d", i)
		serveAt(h, "/js/app.v1.js?"+q, chromeAE, "Available-Dictionary", availableFor(body(q)))
	}
	squeeze.WaitSharedStore(m)
	if n := store.sets.Load(); n < budget || n > budget+1 { // a write may refill meanwhile
		t.Errorf("50 bodies asked for by hash: %d writes in all, want the budget, %d", n, budget)
	}
	if s := counters.String(); !strings.Contains(s, `"writes_refused":`) || strings.Contains(s, `"writes_refused":0`) {
		t.Errorf("counters %s; want the refused writes counted", s)
	}
	var prom strings.Builder
	if err := counters.WritePrometheus(&prom); err != nil || !strings.Contains(prom.String(), "# TYPE squeeze_shared_store_writes_refused_total counter\n") {
		t.Errorf("Prometheus output lacks squeeze_shared_store_writes_refused_total (%v)", err)
	}
}

// SharedAdmitAfter(1) writes a body once sent: a fleet whose
// every response is a dictionary of its own shares each.
func TestSharedStoreAdmitAfterOneWritesEveryBodySent(t *testing.T) {
	for _, tc := range []struct {
		opts []squeeze.SharedOption
		want int64
	}{
		{nil, 0},
		{[]squeeze.SharedOption{squeeze.SharedAdmitAfter(1)}, 3},
		{[]squeeze.SharedOption{squeeze.SharedAdmitAfter(1), squeeze.SharedWriteBudget(2, 4<<20)}, 2},
	} {
		store := newMemStore()
		v1, _ := versions(8 << 10)
		m := newMiddleware(t, squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithSharedStore(store, tc.opts...))
		h := m.Handler(bodyOf(func(_, q string) []byte { return append([]byte(q), v1...) }))
		for i := range 3 {
			serveAt(h, fmt.Sprintf("/js/app.v1.js?%d", i), chromeAE)
		}
		squeeze.WaitSharedStore(m)
		if n := store.sets.Load(); n != tc.want {
			t.Errorf("%d options: 3 bodies sent once each made %d writes, want %d", len(tc.opts), n, tc.want)
		}
	}
}

// A claim is a write: over the budget, it is not made, and the replica
// upgrades the entry for itself.
func TestSharedUpgradeClaimIsTakenFromTheWriteBudget(t *testing.T) {
	store := newMemStore()
	c := newCache(t, 64<<20)
	m := newMiddleware(t, squeeze.WithCache(c), squeeze.WithSharedStore(store, squeeze.SharedMaxValue(64<<10), squeeze.SharedWriteBudget(1, 64<<10)), squeeze.WithEncodings(squeeze.Zstd))
	h := m.Handler(bodyOf(func(path, _ string) []byte { return textBody(len(path), 24<<10) }))
	for _, path := range []string{"/a", "/bb"} {
		for range 4 { // a store and three hits queue the upgrade
			serveAt(h, path, squeeze.Zstd)
		}
		squeeze.WaitUpgrades(c)
		squeeze.WaitSharedStore(m)
	}
	// The first entry's claim took the one write; its encoding, the
	// second's claim and encoding were refused.
	if claims, sets := store.claims.Load(), store.sets.Load(); claims != 1 || sets != 0 {
		t.Errorf("%d claims and %d writes made; want the one the budget holds", claims, sets)
	}
	if s := c.Stats(); s.Upgrades != 2 {
		t.Errorf("cache stats %+v; want both entries upgraded locally", s)
	}
}

// A dictionary whose write the store did not take is written when it
// earns again: a store that was down when it first earned still gets it.
func TestSharedDictionaryWriteThatFailedIsMadeWhenItEarnsAgain(t *testing.T) {
	store := newMemStore()
	store.down.Store(true)
	v1, _ := versions(8 << 10)
	a := newReplica(t, store, map[string][]byte{"/js/app.v1.js": v1})
	serveToEarn(a.h, "/js/app.v1.js")
	squeeze.WaitSharedStore(a.m)
	if s := a.shared(t); s.Errors != 1 || len(store.keys()) != 0 {
		t.Fatalf("with the store down: %+v, keys %q; want one failed write", s, store.keys())
	}
	store.down.Store(false)
	serveAt(a.h, "/js/app.v1.js", chromeAE)
	squeeze.WaitSharedStore(a.m)
	if s := a.shared(t); s.Writes != 1 || len(store.keys()) != 1 {
		t.Errorf("the store back, v1 sent again: %+v, keys %q; want it written", s, store.keys())
	}
}
