package squeeze_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// fleetVariant is a response a fleet upgrades: a plain coding of a body, or
// a delta against an earlier version.
type fleetVariant struct {
	name, coding string
	dict         []byte // nil for a plain coding
	body         []byte
}

// fleetVariants are the variants of the fleet tests: the first 24 KiB of
// a real release pair from npm (lodash.min.js 4.17.15 and 4.17.21), on
// which every coding's best level gains.
func fleetVariants(t *testing.T) []fleetVariant {
	rel := corpus.Releases(t)[1]
	v1, v2 := rel.Old[:24<<10], rel.New[:24<<10]
	return []fleetVariant{
		{"br", squeeze.Brotli, nil, v2},
		{"zstd", squeeze.Zstd, nil, v2},
		{"gzip", squeeze.Gzip, nil, v2},
		{"dcb", squeeze.DCB, v1, v2},
		{"dcz", squeeze.DCZ, v1, v2},
	}
}

// newFleetReplica is a replica with a Cache of its own and the variant's
// codings, sharing store, serving v1 and v2 of the script.
func newFleetReplica(t *testing.T, store squeeze.SharedStore, tc fleetVariant) (*replica, *squeeze.Cache) {
	t.Helper()
	// Room for zstd's best encoder with a dictionary (TestUpgradeDeltaCodecMemoryIsBounded).
	c := newCache(t, 256<<20)
	codings := []string{tc.coding}
	if tc.dict != nil {
		codings = append(codings, squeeze.Zstd)
	}
	r := newReplica(t, store, map[string][]byte{"/js/app.v1.js": tc.dict, "/js/app.v2.js": tc.body},
		squeeze.WithCache(c), squeeze.WithEncodings(codings...))
	if tc.dict != nil {
		serveAt(r.h, "/js/app.v1.js", chromeAE) // remembered, and shared
		squeeze.WaitSharedStore(r.m)
	}
	return r, c
}

// get sends the variant's request to r n times, checks each response and
// returns the last body.
func (tc fleetVariant) get(t *testing.T, r *replica, n int) []byte {
	t.Helper()
	var body []byte
	for range n {
		hdr := []string{}
		ae := tc.coding
		if tc.dict != nil {
			hdr, ae = []string{"Available-Dictionary", availableFor(tc.dict)}, chromeAE
		}
		rec := serveAt(r.h, "/js/app.v2.js", ae, hdr...)
		if ce := rec.Header().Get("Content-Encoding"); ce != tc.coding {
			t.Fatalf("Content-Encoding %q, want %s", ce, tc.coding)
		}
		if tc.dict != nil {
			decodeDelta(t, rec.Header(), rec.Body.Bytes(), tc.dict, tc.body)
		} else {
			checkBody(t, rec.Header(), rec.Body.Bytes(), tc.body)
		}
		body = bytes.Clone(rec.Body.Bytes())
	}
	return body
}

// upgrade sends the variant's request until r's cache queued an upgrade (a
// store and three hits), and waits for it and for r's writes.
func (tc fleetVariant) upgrade(t *testing.T, r *replica, c *squeeze.Cache, n int) {
	t.Helper()
	tc.get(t, r, n)
	squeeze.WaitUpgrades(c)
	squeeze.WaitSharedStore(r.m)
}

// Two replicas that share nothing but the store: the first upgrades a
// variant to the best level and writes it there; the second, when the same
// variant is hit as often, takes the first's encoding, verified, without
// running an encoder (its upgrades all came from the store), and serves it
// byte for byte. Plain codings and deltas alike.
func TestSharedUpgradeIsTakenFromAnotherReplica(t *testing.T) {
	for _, tc := range fleetVariants(t) {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			a, ca := newFleetReplica(t, store, tc)
			before := tc.get(t, a, 1)
			tc.upgrade(t, a, ca, 3)
			best := tc.get(t, a, 1)
			if s := ca.Stats(); s.Upgrades != 1 || s.UpgradesShared != 0 || len(best) >= len(before) {
				t.Fatalf("first replica: %+v, %d bytes before the upgrade and %d after; want one upgrade, encoded", s, len(before), len(best))
			}

			b, cb := newFleetReplica(t, store, tc)
			tc.upgrade(t, b, cb, 4)
			if s := cb.Stats(); s.Upgrades != 1 || s.UpgradesShared != 1 {
				t.Errorf("second replica: %+v; want its one upgrade taken from the store (no encoder run)", s)
			}
			if got := tc.get(t, b, 1); !bytes.Equal(got, best) {
				t.Errorf("second replica sends %d bytes after the upgrade, not the first's %d", len(got), len(best))
			}
			if s := b.shared(t); s.VerificationsFailed != 0 || s.Errors != 0 {
				t.Errorf("second replica's shared counters %+v", s)
			}
		})
	}
}

// encodeOther returns a valid encoding, in coding, of a body that is not
// the variant's: what a hostile store might return.
func encodeOther(t *testing.T, tc fleetVariant) []byte {
	t.Helper()
	other := bytes.Clone(tc.body)
	other[len(other)/2] ^= 1
	if tc.dict != nil {
		out, err := squeeze.BestDelta(tc.coding, tc.dict, other)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	enc, err := writers.NewEncoder(tc.coding, squeeze.UpgradeLevel(tc.coding))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(&out)
	_, _ = enc.Write(other)
	_ = enc.Close()
	return out.Bytes()
}

// A value that fails verification (corrupted, cut short, another body's
// valid encoding, trailing bytes, garbage, empty) is never
// served nor kept: the replica counts it, encodes the variant itself, and
// writes its own encoding over the bad one. Every response decodes to the
// handler's bytes.
func TestSharedUpgradeRejectsWhatFailsVerification(t *testing.T) {
	for _, tc := range fleetVariants(t) {
		for _, bad := range []struct {
			name    string
			rewrite func(v []byte) []byte
			// other: the rewrite returns another body's encoding, made
			// before the store is asked, not within its Get: a best-level
			// encoding under -race on a loaded machine outlasted the
			// shared timeout, and the Get failed with nothing verified.
			other bool
		}{
			{"a byte flipped", func(v []byte) []byte { v[len(v)/2] ^= 0x40; return v }, false},
			{"cut short", func(v []byte) []byte { return v[:len(v)-3] }, false},
			{"another body's encoding", nil, true},
			{"trailing bytes", func(v []byte) []byte { return append(v, 0, 0, 0) }, false},
			{"garbage", func(v []byte) []byte { return randomBody(5, len(v)) }, false},
			{"empty", func([]byte) []byte { return nil }, false},
		} {
			t.Run(tc.name+"/"+bad.name, func(t *testing.T) {
				rewrite := bad.rewrite
				if bad.other {
					other := encodeOther(t, tc)
					rewrite = func([]byte) []byte { return bytes.Clone(other) }
				}
				tc.wantRefused(t, rewrite)
			})
		}
	}
}

// wantRefused has one replica upgrade the variant and write it to a
// store that hands the others rewrite of it, and checks that a second
// replica refuses what it gets (one verification failed), encodes the
// variant itself and serves what the first did.
func (tc fleetVariant) wantRefused(t *testing.T, rewrite func(v []byte) []byte) {
	t.Helper()
	store := newMemStore()
	a, ca := newFleetReplica(t, store, tc)
	tc.upgrade(t, a, ca, 4)
	best := tc.get(t, a, 1)
	store.setRewrite(func(key string, v []byte) []byte {
		if strings.HasPrefix(key, "enc:") {
			return rewrite(v)
		}
		return v
	})
	b, cb := newFleetReplica(t, store, tc)
	tc.upgrade(t, b, cb, 4)
	if s := cb.Stats(); s.Upgrades != 1 || s.UpgradesShared != 0 {
		t.Errorf("second replica: %+v; want one upgrade, encoded by itself", s)
	}
	if s := b.shared(t); s.VerificationsFailed != 1 {
		t.Errorf("second replica's shared counters %+v; want 1 verification failed", s)
	}
	if got := tc.get(t, b, 1); !bytes.Equal(got, best) {
		t.Errorf("second replica's own upgrade: %d bytes, want the best level's %d", len(got), len(best))
	}
}

// claimStore is a memStore whose claims expire after their lifetime on a
// clock the test moves, and to which a replica may be given a view that
// loses its writes of encodings (a replica that dies before it writes).
type claimStore struct {
	*memStore
	mu      sync.Mutex
	now     time.Time
	expires map[string]time.Time
}

func newClaimStore() *claimStore {
	return &claimStore{memStore: newMemStore(), now: time.Unix(0, 0), expires: map[string]time.Time{}}
}

func (s *claimStore) expire(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.expires[key]; ok && !s.now.Before(t) {
		delete(s.expires, key)
		s.memStore.mu.Lock()
		delete(s.memStore.values, key)
		s.memStore.mu.Unlock()
	}
}

func (s *claimStore) Get(ctx context.Context, key string, limit int) ([]byte, bool, error) {
	s.expire(key)
	return s.memStore.Get(ctx, key, limit)
}

func (s *claimStore) Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) (bool, error) {
	s.expire(key)
	won, err := s.memStore.Claim(ctx, key, value, lifetime)
	if won {
		s.mu.Lock()
		s.expires[key] = s.now.Add(lifetime)
		s.mu.Unlock()
	}
	return won, err
}

func (s *claimStore) advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

// losesEncodings is a view of a store whose writes of encodings fail.
type losesEncodings struct{ squeeze.SharedStore }

func (s losesEncodings) Set(ctx context.Context, key string, value []byte, lifetime time.Duration) error {
	if strings.HasPrefix(key, "enc:") {
		return errStoreDown
	}
	return s.SharedStore.Set(ctx, key, value, lifetime)
}

// Each variant is upgraded once per fleet: a replica that finds another's
// claim on the work does not encode, however often the variant is hit,
// while the claim holds. A claim whose owner never writes the encoding
// expires, and a replica then does the work and writes it.
func TestSharedUpgradeClaimHoldsOffOthersUntilItExpires(t *testing.T) {
	tc := fleetVariants(t)[0]
	store := newClaimStore()
	a, ca := newFleetReplica(t, losesEncodings{store}, tc)
	tc.upgrade(t, a, ca, 4) // claims, encodes, and loses its write
	if s := ca.Stats(); s.Upgrades != 1 {
		t.Fatalf("first replica: %+v; want one upgrade", s)
	}

	b, cb := newFleetReplica(t, store, tc)
	tc.upgrade(t, b, cb, 4)
	tc.upgrade(t, b, cb, 3) // looks again, and finds the claim held still
	if s := cb.Stats(); s.Upgrades != 0 {
		t.Errorf("second replica while the first's claim holds: %+v; want no upgrade", s)
	}

	store.advance(time.Hour)
	tc.upgrade(t, b, cb, 3)
	if s := cb.Stats(); s.Upgrades != 1 || s.UpgradesShared != 0 {
		t.Errorf("second replica after the claim expired: %+v; want one upgrade, encoded", s)
	}
	best := tc.get(t, b, 1)
	c, cc := newFleetReplica(t, store, tc)
	tc.upgrade(t, c, cc, 4)
	if s := cc.Stats(); s.UpgradesShared != 1 {
		t.Errorf("third replica: %+v; want the second's encoding taken from the store", s)
	}
	if got := tc.get(t, c, 1); !bytes.Equal(got, best) {
		t.Errorf("third replica: %d bytes, want the second's %d", len(got), len(best))
	}
}

// A store that is down costs the fleet its sharing, not its upgrades: each
// replica upgrades for itself, as without a store.
func TestSharedUpgradeWithTheStoreDownEncodesLocally(t *testing.T) {
	for _, tc := range fleetVariants(t) {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			a, ca := newFleetReplica(t, store, tc)
			store.down.Store(true)
			before := tc.get(t, a, 1)
			tc.upgrade(t, a, ca, 3)
			if s := ca.Stats(); s.Upgrades != 1 || s.UpgradesShared != 0 {
				t.Errorf("%+v; want one upgrade, encoded", s)
			}
			if got := tc.get(t, a, 1); len(got) >= len(before) {
				t.Errorf("%d bytes after the upgrade, %d before", len(got), len(before))
			}
		})
	}
}

// A FileServer's best-level encodings go through the store too: a replica
// that upgrades a file another replica upgraded serves the store's
// encoding, once verified against the file's SHA-256, and not one of its
// own (the store's is made at another level here, to tell them apart); a
// store value that fails verification is never served, and the replica
// encodes the file itself. A plain coding and a version delta.
func TestSharedUpgradeOfFiles(t *testing.T) {
	rel := corpus.Releases(t)[1]
	fsys := fstest.MapFS{"app.v1.js": {Data: rel.Old}, "app.v2.js": {Data: rel.New}}
	for _, tc := range []struct {
		coding string
		dict   []byte
		other  func() []byte // a valid encoding of app.v2.js not at the best level
	}{
		{squeeze.Brotli, nil, func() []byte { return encodeAt(t, squeeze.Brotli, 10, rel.New) }},
		{squeeze.DCB, rel.Old, func() []byte {
			out, err := squeeze.EncodeDelta(squeeze.DCB, 10, rel.Old, rel.New)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}},
	} {
		for _, corrupt := range []bool{false, true} {
			t.Run(tc.coding+"/corrupt="+strconv.FormatBool(corrupt), func(t *testing.T) {
				store := newMemStore()
				// replica returns a FileServer and the handler serving it,
				// and what waits for its upgrades and its writes.
				replica := func() (served http.Handler, wait func()) {
					m := newMiddleware(t, squeeze.WithDictionaryMatch("/static/app.*.js"), squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)))
					h, _ := fileServer(t, m, fsys)
					return http.StripPrefix("/static/", h), func() {
						squeeze.WaitFileServer(h)
						squeeze.WaitSharedStore(m)
					}
				}
				get := func(h http.Handler) []byte {
					hdr := []string{"Accept-Encoding", tc.coding}
					if tc.dict != nil {
						hdr = append(hdr, "Available-Dictionary", availableFor(tc.dict))
					}
					w := fsGet(h, "GET", "/static/app.v2.js", hdr...)
					if ce := w.Header().Get("Content-Encoding"); ce != tc.coding {
						t.Fatalf("Content-Encoding %q, want %s", ce, tc.coding)
					}
					if tc.dict != nil {
						decodeDelta(t, w.Header(), w.Body.Bytes(), tc.dict, rel.New)
					} else {
						checkBody(t, w.Header(), w.Body.Bytes(), rel.New)
					}
					return bytes.Clone(w.Body.Bytes())
				}
				a, waitA := replica()
				get(a)
				waitA()
				best := get(a)
				var key string
				for _, k := range store.keys() {
					if strings.HasPrefix(k, "enc:") {
						key = k
					}
				}
				if key == "" {
					t.Fatalf("the first replica wrote no encoding; keys %q", store.keys())
				}
				alt := tc.other()
				if bytes.Equal(alt, best) {
					t.Fatal("the test's own encoding equals the best level's")
				}
				store.mu.Lock()
				store.values[key] = alt
				store.mu.Unlock()
				if corrupt {
					store.setRewrite(func(key string, v []byte) []byte {
						if strings.HasPrefix(key, "enc:") {
							v[len(v)/2] ^= 0x20
						}
						return v
					})
				}
				b, waitB := replica()
				get(b)
				waitB()
				got := get(b)
				switch {
				case !corrupt && !bytes.Equal(got, alt):
					t.Errorf("second replica: %d bytes, not the store's %d (its own best level: %d)", len(got), len(alt), len(best))
				case corrupt && !bytes.Equal(got, best):
					t.Errorf("second replica with the store's value corrupted: %d bytes, want its own best level's %d", len(got), len(best))
				}
			})
		}
	}
}

// What a replica fetches from the store is counted against its cache's
// budget while it is fetched and verified: the value's limit (the entry's
// size) and the decoder. Measured against the cache's Bytes just before,
// in the same run; once the upgrade is done, Bytes is again the entries'
// weight.
func TestSharedUpgradeFetchIsCountedInTheBudget(t *testing.T) {
	tc := fleetVariants(t)[0]
	store := newMemStore()
	a, ca := newFleetReplica(t, store, tc)
	tc.upgrade(t, a, ca, 4)

	b, cb := newFleetReplica(t, store, tc)
	entry := tc.get(t, b, 3) // a store and two hits
	before := cb.Stats().Bytes
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	store.setGate(entered, gate)
	tc.get(t, b, 1) // the third hit queues the upgrade, which asks the store
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the upgrade never asked the store")
	}
	during := cb.Stats().Bytes
	close(gate)
	squeeze.WaitUpgrades(cb)
	const decoder = 1 << 20
	if held := during - before; held < int64(len(entry)-1)+decoder {
		t.Errorf("the fetch holds %d bytes of the budget; want at least the value's limit %d and the decoder's %d", held, len(entry)-1, decoder)
	}
	if s := cb.Stats(); s.UpgradesShared != 1 || s.Bytes != squeeze.CacheEntriesWeight(cb) {
		t.Errorf("after the upgrade: %+v; the entries weigh %d", s, squeeze.CacheEntriesWeight(cb))
	}
}
