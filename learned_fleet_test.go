package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// learnedReplicas returns n Middlewares sharing store, each learning
// /search/* with rounds of 8 samples and no rest between rounds, with
// their counters, serving searchHandler("shop").
func learnedReplicas(t *testing.T, store *memStore, n int) ([]*squeeze.Middleware, []http.Handler, []*squeeze.Counters) {
	var ms []*squeeze.Middleware
	var hs []http.Handler
	var cs []*squeeze.Counters
	for range n {
		c := new(squeeze.Counters)
		m := newMiddleware(t, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)),
			squeeze.WithObserver(c.Observer()),
			squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
		ms, hs, cs = append(ms, m), append(hs, m.Handler(searchHandler("shop"))), append(cs, c)
	}
	return ms, hs, cs
}

// learnedOf returns the URL of the learned dictionary a page of h links,
// the dictionary's bytes and its Use-As-Dictionary, or "" and nil.
func learnedOf(h http.Handler) (string, []byte, string) {
	url := learnedLink(serveAt(h, "/search/1000", "br").Header())
	if url == "" {
		return "", nil, ""
	}
	rec := serveAt(h, url, "")
	if rec.Code != http.StatusOK {
		return url, nil, ""
	}
	return url, rec.Body.Bytes(), rec.Header().Get("Use-As-Dictionary")
}

func TestLearnedDictionaryIsTrainedOncePerFleet(t *testing.T) {
	store := newMemStore()
	ms, hs, cs := learnedReplicas(t, store, 3)
	for i := range 8 {
		for _, h := range hs {
			serveAt(h, fmt.Sprintf("/search/%d", i), "br")
		}
	}
	for _, m := range ms {
		squeeze.WaitLearned(m)
	}
	for i, h := range hs { // each looks for the fleet's dictionary
		serveAt(h, "/search/999", "br")
		squeeze.WaitLearned(ms[i])
	}
	url, dict, useAs := learnedOf(hs[0])
	if dict == nil {
		t.Fatal("replica 0 serves no learned dictionary")
	}
	trained, adopted := 0, 0
	for i, h := range hs {
		u, d, ua := learnedOf(h)
		if u != url || !bytes.Equal(d, dict) || ua != useAs {
			t.Errorf("replica %d serves %q (%d bytes, %q); replica 0 %q (%d bytes, %q)", i, u, len(d), ua, url, len(dict), useAs)
		}
		s := cs[i].String()
		trained += strings.Count(s, `"trained":1`)
		adopted += strings.Count(s, `"adopted":1`)
	}
	if trained != 1 || adopted != 2 {
		t.Errorf("%d replicas trained and %d took the fleet's dictionary, want 1 and 2", trained, adopted)
	}
	// A client holding the dictionary gets deltas from every replica.
	want := searchPage("shop", 77)
	for i, h := range hs {
		rec := serveAt(h, "/search/77", "dcz, br", "Available-Dictionary", availableFor(dict))
		if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
			t.Fatalf("replica %d sent %q to a client holding the fleet's dictionary, want dcz", i, ce)
		}
		if got, err := testtool.DecodeDictionary(squeeze.DCZ, rec.Body.Bytes(), dict); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("replica %d's delta does not decode to the page: %v", i, err)
		}
	}
}

// TestLearnedDictionaryFromABadStoreIsRefused has a store return a
// dictionary with one byte changed: the replica that did not train it
// refuses it (its hash does not match) and sends no delta against it,
// while the replica that trained it goes on.
func TestLearnedDictionaryFromABadStoreIsRefused(t *testing.T) {
	store := newMemStore()
	ms, hs, cs := learnedReplicas(t, store, 2)
	for i := range 8 {
		serveAt(hs[0], fmt.Sprintf("/search/%d", i), "br")
	}
	squeeze.WaitLearned(ms[0])
	_, dict, _ := learnedOf(hs[0])
	if dict == nil {
		t.Fatal("replica 0 trained no dictionary")
	}
	store.setRewrite(func(key string, v []byte) []byte {
		if strings.HasPrefix(key, "dict:") {
			v[len(v)-1] ^= 1
		}
		return v
	})
	serveAt(hs[1], "/search/999", "br")
	squeeze.WaitLearned(ms[1])
	if url, _, _ := learnedOf(hs[1]); url != "" {
		t.Errorf("replica 1 links %s, taken from a store that changed it", url)
	}
	rec := serveAt(hs[1], "/search/5", "dcz, br", "Available-Dictionary", availableFor(dict))
	if ce := rec.Header().Get("Content-Encoding"); ce == squeeze.DCZ {
		t.Errorf("replica 1 sent a delta against a dictionary it could not verify")
	}
	if !strings.Contains(cs[1].String(), `"verifications_failed":`) || strings.Contains(cs[1].String(), `"verifications_failed":0`) {
		t.Errorf("replica 1 counted no failed verification: %s", cs[1].String())
	}
}

func TestLearnedDictionaryIsRetrainedWhenItSavesTooLittle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		below   float64
		retrain bool
	}{
		{"saving above the threshold", 0.01, false},
		{"saving below the threshold", 0.95, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8),
				squeeze.LearnedInterval(0), squeeze.LearnedKeep(2), squeeze.LearnedRetrainBelow(tc.below)))
			h := m.Handler(searchHandler("shop"))
			var dicts [][]byte
			for round := range 3 {
				trainSearch(t, m, h, 100*round, 8)
				_, d, _ := learnedOf(h)
				if d == nil {
					t.Fatalf("round %d: no dictionary", round)
				}
				if len(dicts) == 0 || !bytes.Equal(d, dicts[len(dicts)-1]) {
					dicts = append(dicts, d)
				}
			}
			if !tc.retrain {
				if len(dicts) != 1 {
					t.Fatalf("%d dictionaries after 3 rounds, want the first kept", len(dicts))
				}
				return
			}
			if len(dicts) != 3 {
				t.Fatalf("%d dictionaries after 3 rounds, want one per round", len(dicts))
			}
			// Two live at once: the newest and the one before, which
			// clients still announce; the first is retired.
			for i, want := range []string{"br", squeeze.DCZ, squeeze.DCZ} {
				rec := serveAt(h, "/search/5", "dcz, br", "Available-Dictionary", availableFor(dicts[i]))
				if ce := rec.Header().Get("Content-Encoding"); ce != want {
					t.Errorf("a client announcing dictionary %d of 3 got %q, want %q", i+1, ce, want)
				}
			}
		})
	}
}

// TestLearnedDictionaryIsServedByEveryReplicaFromItsNextRequest: once one
// replica publishes, a replica that never sampled links the dictionary
// from its next response, and serves it at the URL another replica
// linked, fetched by hash from the store and verified, even when it read
// the fleet's pointer a moment before the publish (it 404ed until it had
// sampled a round of its own).
func TestLearnedDictionaryIsServedByEveryReplicaFromItsNextRequest(t *testing.T) {
	store := newMemStore()
	ms, hs, _ := learnedReplicas(t, store, 4)
	serveAt(hs[3], "/search/999", "br") // replica 3 reads the pointer now: none yet
	squeeze.WaitLearned(ms[3])
	for i := range 8 {
		serveAt(hs[0], fmt.Sprintf("/search/%d", i), "br")
	}
	squeeze.WaitLearned(ms[0])
	url, dict, useAs := learnedOf(hs[0])
	if dict == nil {
		t.Fatal("replica 0 trained no dictionary")
	}
	// Replica 1's first response links it.
	if got := learnedLink(serveAt(hs[1], "/search/1000", "br").Header()); got != url {
		t.Errorf("replica 1's first response links %q, want %q, replica 0's", got, url)
	}
	// Replica 2's first request is for the dictionary itself; replica 3
	// read the pointer before the publish, so asks the store by hash.
	for _, i := range []int{2, 3} {
		rec := serveAt(hs[i], url, "")
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), dict) || rec.Header().Get("Use-As-Dictionary") != useAs ||
			!strings.Contains(rec.Header().Get("Cache-Control"), "max-age=") {
			t.Errorf("replica %d answers %s with %d, %d bytes, Use-As-Dictionary %q, Cache-Control %q; want replica 0's dictionary",
				i, url, rec.Code, rec.Body.Len(), rec.Header().Get("Use-As-Dictionary"), rec.Header().Get("Cache-Control"))
		}
	}
	// A made-up hash on the path is the handler's to answer.
	if rec := serveAt(hs[3], squeeze.DefaultLearnedPath+strings.Repeat("A", 43), ""); rec.Header().Get("Use-As-Dictionary") != "" {
		t.Errorf("a learned path naming no dictionary answered with a dictionary")
	}
	// Each replica sends deltas against it.
	for i, h := range hs {
		rec := serveAt(h, "/search/77", "dcz, br", "Available-Dictionary", availableFor(dict))
		if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
			t.Errorf("replica %d sent %q to a client holding the fleet's dictionary, want dcz", i, ce)
		}
	}
}

// TestLearnedDictionaryTheStoreRefusedIsPublishedAgain: a store that
// refuses the trained dictionary's writes leaves the other replicas
// without it; the replica that trained it counts the failure, logs it
// once, and writes it again at its next poll, after which every replica
// links it.
func TestLearnedDictionaryTheStoreRefusedIsPublishedAgain(t *testing.T) {
	store := newMemStore()
	ms, hs, cs := learnedReplicas(t, store, 2)
	var mu sync.Mutex
	var logs []string
	for _, m := range ms {
		squeeze.SetLearnedPollEvery(m, 0)
		squeeze.SetLearnedLog(m, func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf(format, args...))
		})
	}
	store.failSets.Store(1)
	for i := range 8 {
		serveAt(hs[0], fmt.Sprintf("/search/%d", i), "br")
	}
	squeeze.WaitLearned(ms[0])
	url, _, _ := learnedOf(hs[0])
	squeeze.WaitLearned(ms[0])
	if url == "" {
		t.Fatal("replica 0 trained no dictionary")
	}
	if !strings.Contains(cs[0].String(), `"publish_failed":1`) {
		t.Errorf("the failed publish is not counted: %s", cs[0].String())
	}
	serveAt(hs[0], "/search/1001", "br") // the next poll writes it again
	squeeze.WaitLearned(ms[0])
	if got := learnedLink(serveAt(hs[1], "/search/1002", "br").Header()); got != url {
		t.Errorf("replica 1 links %q after replica 0 wrote it again, want %q", got, url)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 1 || !strings.Contains(logs[0], "did not take") {
		t.Errorf("log lines %q, want one saying the store did not take the dictionary", logs)
	}
}
