package redisstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// What a fleet writes to a real Redis is earned, public and within each
// replica's write budget: a private page never reaches it, and a flood of
// client-chosen bodies neither fills it nor evicts what the fleet uses.

// storedValues returns the values under prefix in Redis, by key.
func storedValues(t *testing.T, raw *redis.Client, prefix string) map[string][]byte {
	t.Helper()
	keys, err := raw.Keys(t.Context(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, k := range keys {
		v, err := raw.Get(t.Context(), k).Bytes()
		if err == nil { // a claim may have expired meanwhile
			out[k] = v
		}
	}
	return out
}

// clientGet fetches url with c, adding hdr (pairs), and returns the
// response with its raw body.
func clientGet(t *testing.T, c *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", acceptAll)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, res.StatusCode, err)
	}
	return res, raw
}

func availableDictionary(dict []byte) string {
	h := sha256.Sum256(dict)
	return ":" + base64.StdEncoding.EncodeToString(h[:]) + ":"
}

func TestFleetNeverWritesAPrivateResponse(t *testing.T) {
	const secret = "SSN 078-05-1120"
	page := append(append(bytes.Clone(releases(t, 1)[0]), secret...), " -->"...)
	srv, raw := startRedis(t)
	for _, tc := range []struct {
		name                  string
		respHeader, reqHeader []string
		public                bool
	}{
		{"Cache-Control private", []string{"Cache-Control", "private, max-age=600"}, nil, false},
		{"Cache-Control no-store", []string{"Cache-Control", "no-store"}, nil, false},
		{"Set-Cookie", []string{"Set-Cookie", "session=abc"}, nil, false},
		{"request with Authorization", []string{"Cache-Control", "max-age=600"}, []string{"Authorization", "Bearer user-7"}, false},
		{"request with Cookie", []string{"Cache-Control", "max-age=600"}, []string{"Cookie", "session=abc"}, false},
		{"control: request with Cookie, response public", []string{"Cache-Control", "public, max-age=600"}, []string{"Cookie", "session=abc"}, true},
	} {
		for _, p := range testtool.Protocols() {
			t.Run(tc.name+"/"+p.Name, func(t *testing.T) {
				prefix := fmt.Sprintf("private-%s-%d:", strings.ReplaceAll(tc.name, " ", "-"), p.Major)
				r := &fleetReplica{counters: &squeeze.Counters{}}
				m := squeeze.MustNew(squeeze.WithDictionaryMatch("/app/*"), squeeze.WithObserver(r.counters.Observer()),
					squeeze.WithSharedStore(newStore(t, srv, true, redisstore.WithPrefix(prefix)), squeeze.SharedTimeout(5*time.Second)))
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html")
					for i := 0; i+1 < len(tc.respHeader); i += 2 {
						w.Header().Add(tc.respHeader[i], tc.respHeader[i+1])
					}
					_, _ = w.Write(page)
				}))
				hs, c := testtool.StartServer(t, p.Name, p.Major, h, false)
				// Sent often, and asked for by hash: all a public body
				// needs to earn its write.
				for range 3 {
					clientGet(t, c, hs.URL+"/app/account", tc.reqHeader...)
				}
				clientGet(t, c, hs.URL+"/app/account", append([]string{"Available-Dictionary", availableDictionary(page)}, tc.reqHeader...)...)
				writesSettled(t, r)
				found := false
				for _, v := range storedValues(t, raw, prefix) {
					found = found || bytes.Contains(v, []byte(secret))
				}
				if found != tc.public {
					t.Fatalf("Redis holds the page: %v, want %v", found, tc.public)
				}
			})
		}
	}
}

// floodReplica is a replica on /js/app.*.js whose v1 reflects its query
// string into the script, as a page that echoes a search does: each query
// is a body of its own.
func floodReplica(t *testing.T, store squeeze.SharedStore, files [][]byte, opts ...squeeze.SharedOption) (*fleetReplica, *http.Client) {
	t.Helper()
	r := &fleetReplica{counters: &squeeze.Counters{}}
	m := squeeze.MustNew(squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithObserver(r.counters.Observer()),
		squeeze.WithSharedStore(store, append([]squeeze.SharedOption{squeeze.SharedTimeout(5 * time.Second)}, opts...)...))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var v int
		if _, err := fmt.Sscanf(req.URL.Path, "/js/app.v%d.js", &v); err != nil || v < 1 || v > len(files) {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("Cache-Control", "max-age=3600") // a browser keeps only a fresh dictionary
		if q := req.URL.RawQuery; q != "" {
			_, _ = fmt.Fprintf(w, "/* %s */\n", q)
		}
		_, _ = w.Write(files[v-1])
	}))
	srv, c := testtool.StartServer(t, "HTTP/1.1", 1, h, false)
	r.url = srv.URL
	return r, c
}

// floodBody is what floodReplica sends for v1 with query q.
func floodBody(files [][]byte, q string) []byte {
	return append([]byte(fmt.Sprintf("/* %s */\n", q)), files[0]...)
}

// writesSettled waits until r's writes to the store have stopped changing.
func writesSettled(t *testing.T, r *fleetReplica) {
	t.Helper()
	last, stable := int64(-1), 0
	waitFor(t, 5*time.Second, func() error {
		s := r.shared(t)
		if n := s.Writes + s.Errors; n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		if stable < 10 {
			return fmt.Errorf("writes still changing: %d", last)
		}
		return nil
	})
}

func TestFleetFloodOfQueryStringsKeepsTheRealDictionary(t *testing.T) {
	start := time.Now()
	srv, raw := startRedis(t, "--maxmemory", "6mb", "--maxmemory-policy", "allkeys-lru")
	// Scripts of 34 KB: 400 of them are more than the 6 MB Redis holds.
	base := releases(t, 2)
	files := [][]byte{append(bytes.Clone(base[0]), base[0]...), append(bytes.Clone(base[1]), base[1]...)}
	const (
		prefix     = "flood:"
		queries    = 400
		writes     = 16
		writeBytes = 1 << 20
	)
	a, c := floodReplica(t, newStore(t, srv, true, redisstore.WithPrefix(prefix)), files,
		squeeze.SharedWriteBudget(writes, writeBytes), squeeze.SharedMaxValue(256<<10))

	// The real dictionary: v1, sent to clients, who come back for it.
	for range servesToEarn {
		clientGet(t, c, a.url+"/js/app.v1.js")
	}
	sum := sha256.Sum256(files[0])
	realKey := prefix + "dict:" + base64.RawURLEncoding.EncodeToString(sum[:])
	waitStored(t, raw, realKey, 1)

	// How a flood's client names dictionaries: not at all; the real
	// dictionary, on every query string (as a real client would, holding
	// it); or each body it was sent, in a second request.
	const (
		namesNothing = iota
		namesTheRealDictionary
		namesWhatItWasSent
	)
	flood := func(names int) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range next {
					q := fmt.Sprintf("q=%d-%d", names, i)
					var hdr []string
					if names == namesTheRealDictionary {
						hdr = []string{"Available-Dictionary", availableDictionary(files[0])}
					}
					clientGet(t, c, a.url+"/js/app.v1.js?"+q, hdr...)
					if names == namesWhatItWasSent {
						// The client claims to hold what it was sent: all it
						// takes for a body to earn a write.
						clientGet(t, c, a.url+"/js/app.v1.js?"+q, "Available-Dictionary", availableDictionary(floodBody(files, q)))
					}
				}
			})
		}
		for i := range queries {
			next <- i
		}
		close(next)
		wg.Wait()
		writesSettled(t, a)
	}

	// A flood of distinct bodies, each sent once, earns nothing, whatever
	// dictionary its requests name: a URL no client named a body of is no
	// resource whose next body clients will name.
	for _, names := range []int{namesNothing, namesTheRealDictionary} {
		flood(names)
		if got := storedValues(t, raw, prefix); len(got) != 1 {
			t.Fatalf("after 400 queries each sent once (naming %d), Redis holds %d keys; want the real dictionary alone", names, len(got))
		}
	}
	// One that asks for each by hash earns them all, and the replica
	// writes no more than its budget.
	flood(namesWhatItWasSent)
	elapsed := time.Since(start)
	stored := storedValues(t, raw, prefix)
	bytesStored := 0
	for _, v := range stored {
		bytesStored += len(v)
	}
	refill := elapsed.Minutes()
	maxWrites := writes + int(writes*refill) + 1
	maxBytes := writeBytes + int(writeBytes*refill) + 256<<10
	t.Logf("after %v: Redis holds %d keys, %d bytes; counters %s", elapsed, len(stored), bytesStored, a.counters.String())
	if len(stored) > maxWrites || bytesStored > maxBytes {
		t.Errorf("Redis holds %d keys, %d bytes from one replica; want at most its budget, %d writes and %d bytes", len(stored), bytesStored, maxWrites, maxBytes)
	}
	var counted struct {
		Shared struct {
			Refused int64 `json:"writes_refused"`
		} `json:"shared_store"`
	}
	if err := json.Unmarshal([]byte(a.counters.String()), &counted); err != nil || counted.Shared.Refused == 0 {
		t.Errorf("writes_refused %d (%v); want the refused writes counted", counted.Shared.Refused, err)
	}
	if _, ok := stored[realKey]; !ok {
		t.Fatalf("the real dictionary was evicted by the flood")
	}
	// A fresh replica still serves a delta by the real dictionary.
	fresh := startReplica(t, newStore(t, srv, true, redisstore.WithPrefix(prefix)), files)
	if ce := fresh.get(t, files, 2, files[0]); !isDelta(ce) {
		t.Fatalf("a fresh replica sent v2 as %q to a client holding v1; want a delta by the dictionary in Redis", ce)
	}
}
