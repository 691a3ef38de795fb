package redisstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// A fleet: squeeze Middleware instances that share nothing but a real
// Redis, each behind its own loopback server, as replicas behind a load
// balancer without stickiness.

const (
	fleetPattern = "/js/app.*.js"
	acceptAll    = "gzip, deflate, br, zstd, dcb, dcz"
)

// releases returns n versions of a script, each a few edits away from the
// one before, as the releases of a bundle are.
func releases(t *testing.T, n int) [][]byte {
	t.Helper()
	base := corpus.JS(t)
	out := make([][]byte, n)
	for v := range n {
		b := bytes.Clone(base)
		for i := len(b) / 7; i < len(b); i += len(b) / 7 {
			copy(b[i:], fmt.Sprintf("/* release %d */", v+1))
		}
		out[v] = b
	}
	return out
}

// fleetReplica is one replica: a Middleware sharing store (none if nil),
// serving every release at /js/app.vN.js, with its counters.
type fleetReplica struct {
	url      string
	counters *squeeze.Counters
}

func startReplica(t *testing.T, store squeeze.SharedStore, files [][]byte, opts ...squeeze.Option) *fleetReplica {
	t.Helper()
	r := &fleetReplica{counters: &squeeze.Counters{}}
	all := []squeeze.Option{squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithObserver(r.counters.Observer())}
	if store != nil {
		// A timeout no loaded machine (or -race) reaches, unless the
		// test sets its own: these tests pin what is shared, not when.
		all = append(all, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)))
	}
	m, err := squeeze.New(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var v int
		if _, err := fmt.Sscanf(req.URL.Path, "/js/app.v%d.js", &v); err != nil || v < 1 || v > len(files) {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("Cache-Control", "max-age=3600") // a browser keeps only a fresh dictionary
		_, _ = w.Write(files[v-1])
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// sharedCounters is the shared_store part of the replica's counters.
type sharedCounters struct {
	Hits                int64 `json:"hits"`
	Misses              int64 `json:"misses"`
	Errors              int64 `json:"errors"`
	VerificationsFailed int64 `json:"verifications_failed"`
	Writes              int64 `json:"writes"`
	BreakerOpened       int64 `json:"breaker_opened"`
}

func (r *fleetReplica) shared(t *testing.T) sharedCounters {
	t.Helper()
	var s struct {
		Shared sharedCounters `json:"shared_store"`
	}
	if err := json.Unmarshal([]byte(r.counters.String()), &s); err != nil {
		t.Fatal(err)
	}
	return s.Shared
}

// get fetches release v from r, offering dict (if any) as the client's
// dictionary, checks that the body is release v exactly, whatever its
// coding, and returns the coding.
func (r *fleetReplica) get(t *testing.T, files [][]byte, v int, dict []byte) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/js/app.v%d.js", r.url, v), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", acceptAll)
	if dict != nil {
		h := sha256.Sum256(dict)
		req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(h[:])+":")
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", req.URL, res.StatusCode, err)
	}
	ce := res.Header.Get("Content-Encoding")
	var body []byte
	switch ce {
	case squeeze.DCZ, squeeze.DCB:
		if dict == nil {
			t.Fatalf("GET %s: %s without a dictionary offered", req.URL, ce)
		}
		body, err = testtool.DecodeDictionary(ce, raw, dict)
		if err != nil {
			t.Fatalf("GET %s: the %s body does not decode against the client's dictionary: %v", req.URL, ce, err)
		}
	default:
		body = testtool.Decode(t, ce, raw)
	}
	if !bytes.Equal(body, files[v-1]) {
		t.Fatalf("GET %s as %q: a wrong body (%d bytes, want %d)", req.URL, ce, len(body), len(files[v-1]))
	}
	return ce
}

// servesToEarn is how many times a replica sends a body with
// Use-As-Dictionary before it writes it to the store unasked (squeeze's
// admission: a body served once, one of a flood, is not written).
const servesToEarn = 2

// earn fetches release v from r as often as it takes r to write it to
// the store.
func (r *fleetReplica) earn(t *testing.T, files [][]byte, v int) {
	t.Helper()
	for range servesToEarn {
		if ce := r.get(t, files, v, nil); isDelta(ce) {
			t.Fatalf("v%d without a dictionary came as %s", v, ce)
		}
	}
}

func isDelta(ce string) bool { return ce == squeeze.DCZ || ce == squeeze.DCB }

// waitStored waits until the database holds at least n keys under prefix:
// a replica's writes are made in the background.
func waitStored(t *testing.T, raw *redis.Client, prefix string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		keys, err := raw.Keys(t.Context(), prefix+"*").Result()
		if err == nil && len(keys) >= n {
			return keys
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d keys under %q (%v); want %d", len(keys), prefix, err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFleetServesDeltasAgainstAnotherReplicasDictionary(t *testing.T) {
	srv, raw := startRedis(t)
	files := releases(t, 2)
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared store", true}, {"no shared store", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var stores [3]squeeze.SharedStore
			prefix := "fleet-" + strings.ReplaceAll(tc.name, " ", "-") + ":"
			if tc.shared {
				for i := range stores {
					stores[i] = newStore(t, srv, true, redisstore.WithPrefix(prefix))
				}
			}
			a := startReplica(t, stores[0], files)
			b := startReplica(t, stores[1], files)
			c := startReplica(t, stores[2], files)

			// The client takes v1 from a, which remembers it.
			a.earn(t, files, 1)
			if tc.shared {
				waitStored(t, raw, prefix, 1)
			}
			// It returns for v2 through other replicas, twice each
			// (a fetch from the store, then the local copy).
			for _, r := range []*fleetReplica{b, c, b, c} {
				ce := r.get(t, files, 2, files[0])
				if tc.shared != isDelta(ce) {
					t.Fatalf("v2 from a replica that never sent v1, shared %v: %q", tc.shared, ce)
				}
			}
			if tc.shared {
				for name, r := range map[string]*fleetReplica{"b": b, "c": c} {
					if s := r.shared(t); s.Hits != 1 || s.VerificationsFailed != 0 || s.Errors != 0 {
						t.Errorf("replica %s: shared counters %+v; want one hit, then the local copy", name, s)
					}
				}
			}
		})
	}
}

func TestFleetCorruptedValuesCostAFallbackNeverAWrongByte(t *testing.T) {
	srv, raw := startRedis(t)
	files := releases(t, 2)
	for _, tc := range []struct {
		name    string
		corrupt func(v []byte) []byte
	}{
		{"last byte flipped", func(v []byte) []byte { v[len(v)-1] ^= 1; return v }},
		{"first byte flipped", func(v []byte) []byte { v[0] ^= 0x80; return v }},
		{"cut short", func(v []byte) []byte { return v[:len(v)/2] }},
		{"a byte appended", func(v []byte) []byte { return append(v, 'x') }},
		{"another release's bytes", func(v []byte) []byte { return bytes.ReplaceAll(v, files[0], files[1]) }},
		{"garbage", func([]byte) []byte { return []byte("\x00\x01garbage") }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "corrupt-" + strings.ReplaceAll(tc.name, " ", "-") + ":"
			store := func() squeeze.SharedStore {
				return newStore(t, srv, true, redisstore.WithPrefix(prefix))
			}
			a := startReplica(t, store(), files)
			b := startReplica(t, store(), files)
			a.earn(t, files, 1)
			for _, key := range waitStored(t, raw, prefix, 1) {
				v, err := raw.Get(t.Context(), key).Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if err := raw.Set(t.Context(), key, tc.corrupt(v), 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// get checks every byte; the corrupted dictionary is not used.
			if ce := b.get(t, files, 2, files[0]); isDelta(ce) {
				t.Fatalf("v2 came as %s against a corrupted dictionary", ce)
			}
			if s := b.shared(t); s.VerificationsFailed != 1 || s.Hits != 0 {
				t.Errorf("shared counters %+v; want the value fetched once and rejected", s)
			}
		})
	}
}

func TestFleetRedisStoppedThenRestarted(t *testing.T) {
	srv, raw := startRedis(t)
	files := releases(t, 6)
	const timeout = 50 * time.Millisecond
	replica := func() *fleetReplica {
		store := newStore(t, srv, true)
		return startReplica(t, store, files, squeeze.WithSharedStore(store, squeeze.SharedTimeout(timeout)))
	}
	a, b := replica(), replica()
	a.earn(t, files, 1)
	waitStored(t, raw, redisstore.DefaultPrefix, 1)
	if ce := b.get(t, files, 2, files[0]); !isDelta(ce) {
		t.Fatalf("v2 with the store up: %q, want a delta", ce)
	}
	// v3: in a and the store, not in b. The store holds v1 and v3: b sent
	// v2 once, which earns nothing.
	a.earn(t, files, 3)
	waitStored(t, raw, redisstore.DefaultPrefix, 2)

	// A server that does not answer: every response is still right, and
	// none waits for the server, only (at most) for the timeout.
	const paused = 3 * time.Second
	if err := raw.Do(t.Context(), "CLIENT", "PAUSE", paused.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 10 {
		a.get(t, files, 4, nil) // a write in the background, the first time
		if ce := b.get(t, files, 4, files[2]); isDelta(ce) {
			t.Fatalf("v4 against v3 came as %s; b does not hold v3 and the store does not answer", ce)
		}
	}
	if took := time.Since(start); took > paused/2 {
		t.Errorf("20 requests with the store paused took %v; want them bounded by the %v timeout, not the %v pause", took, timeout, paused)
	}

	// The server gone: the same.
	srv.Stop()
	c := replica()
	for range 10 {
		if ce := c.get(t, files, 2, files[0]); isDelta(ce) {
			t.Fatalf("v2 from a fresh replica with the store stopped came as %s", ce)
		}
	}

	// Back, empty: sharing resumes, on a replica that wrote nothing
	// while the store was away, for one whose breaker opened.
	srv.Restart()
	// a's breaker may still be open from the pause when v5 first earns
	// its write, which is then skipped and made when it earns again: a
	// sends v5 until the store holds it.
	waitFor(t, 15*time.Second, func() error {
		a.earn(t, files, 5)
		if keys, err := raw.Keys(t.Context(), redisstore.DefaultPrefix+"*").Result(); err != nil || len(keys) == 0 {
			return fmt.Errorf("the store holds %d keys (%v); want v5", len(keys), err)
		}
		return nil
	})
	waitFor(t, 15*time.Second, func() error {
		if ce := c.get(t, files, 6, files[4]); !isDelta(ce) {
			return fmt.Errorf("v6 against v5 from another replica came as %q", ce)
		}
		return nil
	})
	if s := c.shared(t); s.BreakerOpened == 0 || s.Errors == 0 {
		t.Errorf("replica c's shared counters %+v; want the errors and the breaker counted", s)
	}
}
