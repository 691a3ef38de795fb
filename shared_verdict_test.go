package squeeze_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A remembered dictionary and a learned one share the key of their hash,
// and each reader checks the value against its own patterns and size. A
// client naming a dictionary on a path where it does not belong gets no
// delta there, but the sound value is only "not for this reader": the key
// is not marked bad nor missed, and a client naming it where it belongs
// still gets its delta. A value that is truly corrupt is still refused,
// counted, and not asked for again, whichever reader read it.
func TestSharedDictionaryNamedOnLearnedPathStillServesDelta(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int  // of the fleet's dictionary: over 64 KiB is over the learned route's size, set below
		plain   bool // a store that cannot tell a value's length
		corrupt bool // the store's value does not hash to its key
	}{
		{name: "within the learned size", size: 40 << 10},
		{name: "over the learned size", size: 200 << 10},
		{name: "over the learned size, plain store", size: 200 << 10, plain: true},
		{name: "corrupt value", size: 40 << 10, corrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2 := versions(tc.size)
			files := map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}
			mux := func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/search/") {
					searchHandler("shop")(w, r)
					return
				}
				scripts(files)(w, r)
			}
			mem := newMemStore()
			value := dictValue(fleetPattern, v1)
			if tc.corrupt {
				value[len(value)-1] ^= 1
			}
			mem.values["dict:"+availableKey(v1)] = value
			var store squeeze.SharedStore = mem
			if tc.plain {
				store = plainStore{mem}
			}
			r := &replica{counters: &squeeze.Counters{}}
			r.m = newMiddleware(t, squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithObserver(r.counters.Observer()),
				squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)),
				squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedDictionarySize(64<<10)))
			srv, c := startServer(t, protocols[0], r.m.Handler(http.HandlerFunc(mux)), false)

			// Named on the learned route's path: no delta there.
			res, raw := fetch(t, c, srv.URL+"/search/1", chromeAE, "Available-Dictionary", availableFor(v1))
			if ce := res.Header.Get("Content-Encoding"); ce == squeeze.DCZ || ce == squeeze.DCB {
				t.Fatalf("/search/1: %s against a dictionary of another pattern", ce)
			}
			checkBody(t, res.Header, raw, searchPage("shop", 1))

			res, raw = fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
			ce := res.Header.Get("Content-Encoding")
			s := r.shared(t)
			t.Logf("/js/app.v2.js: Content-Encoding %q; shared counters %+v", ce, s)
			if tc.corrupt {
				if ce == squeeze.DCZ || ce == squeeze.DCB {
					t.Fatalf("%s against a value that fails verification", ce)
				}
				checkBody(t, res.Header, raw, v2)
				fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				if s := r.shared(t); s.VerificationsFailed != 1 || s.Skipped != 1 || s.Hits != 0 {
					t.Errorf("shared counters %+v: want the corrupt value refused once, counted, and then skipped", s)
				}
				return
			}
			if ce != squeeze.DCZ {
				t.Fatalf("/js/app.v2.js after a request named its dictionary on /search/1: Content-Encoding %q, want dcz", ce)
			}
			decodeDelta(t, res.Header, raw, v1, v2)
			if s.VerificationsFailed != 0 || s.Hits != 1 {
				t.Errorf("shared counters %+v: want one hit and no verification failed", s)
			}
		})
	}
}

// A client naming the fleet's learned dictionary on a path of a
// WithDictionaryMatch pattern does not keep the replica from adopting it
// from the store, nor from fetching it for a client of the route.
func TestLearnedDictionaryNamedOnDictionaryMatchPathIsStillAdopted(t *testing.T) {
	store := newMemStore()
	a := newMiddleware(t, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	ha := a.Handler(searchHandler("shop"))
	for i := range 8 {
		serveAt(ha, fmt.Sprintf("/search/%d", i), "br")
	}
	squeeze.WaitLearned(a)
	_, dict, _ := learnedOf(ha)
	if dict == nil {
		t.Fatal("the first replica trained nothing")
	}

	counters := &squeeze.Counters{}
	b := newMiddleware(t, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)),
		squeeze.WithObserver(counters.Observer()), squeeze.WithDictionaryMatch("/search/1*"),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	hb := b.Handler(searchHandler("shop"))
	srv, c := startServer(t, protocols[0], hb, false)

	// /search/1 matches both; the learned dictionary's pattern is not
	// WithDictionaryMatch's, so the store of remembered dictionaries does
	// not take it.
	fetch(t, c, srv.URL+"/search/1", "dcz, br", "Available-Dictionary", availableFor(dict))
	squeeze.WaitLearned(b)
	fetch(t, c, srv.URL+"/search/999", "br") // a round: B polls the pointer
	squeeze.WaitLearned(b)
	url, got, _ := learnedOf(hb)
	if url == "" || string(got) != string(dict) {
		t.Fatalf("B links %q (%d bytes): want the fleet's learned dictionary (%d bytes) adopted", url, len(got), len(dict))
	}
	res, raw := fetch(t, c, srv.URL+"/search/77", "dcz, br", "Available-Dictionary", availableFor(dict))
	if ce := res.Header.Get("Content-Encoding"); ce != squeeze.DCZ {
		t.Fatalf("/search/77 naming the fleet's learned dictionary: Content-Encoding %q, want dcz", ce)
	}
	decodeDelta(t, res.Header, raw, dict, searchPage("shop", 77))
	if s := (&replica{counters: counters}).shared(t); s.VerificationsFailed != 0 {
		t.Errorf("shared counters %+v: want no verification failed", s)
	}
}
