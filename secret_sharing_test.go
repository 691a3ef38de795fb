package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// sharedPage serves a public page holding secretToken, written with
// WriteSecret when the request's query has marked=1 and plainly otherwise:
// the same plain bytes either way, n bytes long, so that whatever would
// keep the unmarked page (the instrument) would find the marked one.
func sharedPage(n int) http.HandlerFunc {
	body := textBody(11, n)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "public, max-age=600")
		w.Header().Set("ETag", `"v1"`)
		marked := r.URL.Query().Get("marked") == "1"
		if marked {
			// Marked before the first write, so that a stream's coding
			// and its cache lookup know of it.
			if _, err := squeeze.TemplateSecret(w, secretToken); err != nil {
				panic(err)
			}
		}
		_, _ = w.Write(body[:n/2])
		if marked {
			if _, err := squeeze.WriteSecret(w, []byte(secretToken)); err != nil {
				panic(err)
			}
		} else {
			_, _ = w.Write([]byte(secretToken))
		}
		_, _ = w.Write(body[n/2:])
	}
}

// TestSecretResponseNeverStoredInTheCache: a marked response is never
// looked up in the Cache, stored there, or served from it, as a whole body
// or a stream known by its trusted ETag, even when an unmarked response
// with the same bytes is stored (its encoding did not isolate the token).
func TestSecretResponseNeverStoredInTheCache(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n       int
		trusted bool
	}{
		{"whole", 8 << 10, false},
		{"stream, trusted ETags", 3 * squeeze.DefaultBufferSize, true},
	} {
		for _, proto := range testtool.Protocols() {
			c := newCache(t, 64<<20)
			var opts []squeeze.CacheOption
			if tc.trusted {
				opts = append(opts, squeeze.CacheTrustedETags())
			}
			h := newMiddleware(t, squeeze.WithCache(c, opts...)).Handler(sharedPage(tc.n))
			t.Run(tc.name+"/"+proto.Name, func(t *testing.T) {
				srv, cl := testtool.StartServer(t, proto.Name, proto.Major, h, false)
				for range 3 {
					res, raw := fetch(t, cl, srv.URL+"/page?marked=1", "zstd")
					checkBody(t, res.Header, raw, plainSharedPage(t, h, tc.n))
				}
				if s := c.Stats(); s.Hits != 0 || s.Misses != 0 || s.Stores != 0 {
					t.Fatalf("marked responses reached the cache: %+v", s)
				}
				fetch(t, cl, srv.URL+"/page", "zstd")
				if s := c.Stats(); s.Stores != 1 {
					t.Fatalf("the unmarked page was not stored (the instrument): %+v", s)
				}
				before := c.Stats()
				res, raw := fetch(t, cl, srv.URL+"/page?marked=1", "zstd")
				checkBody(t, res.Header, raw, plainSharedPage(t, h, tc.n))
				if s := c.Stats(); s.Hits != before.Hits {
					t.Fatalf("a marked response was served from the unmarked one's entry: %+v", s)
				}
				if !bytes.Contains(raw, []byte(secretToken)) {
					t.Fatalf("the marked response's token is not stored in its own segment")
				}
			})
		}
	}
}

// plainSharedPage returns the plain body sharedPage writes.
func plainSharedPage(t *testing.T, _ http.Handler, n int) []byte {
	t.Helper()
	return serveAt(sharedPage(n), "/page", "").Body.Bytes()
}

// TestSecretResponseNeverADictionaryNorADelta: on a WithDictionaryMatch
// path, a marked response carries no Use-As-Dictionary and is not
// remembered, and a client holding a dictionary gets it in zstd, not as a
// dcz or dcb delta against the dictionary.
func TestSecretResponseNeverADictionaryNorADelta(t *testing.T) {
	t.Parallel()
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(sharedPage(16 << 10))
	rec := serveAt(h, "/js/a.js?marked=1", chromeAE)
	if got := rec.Header().Get("Use-As-Dictionary"); got != "" {
		t.Fatalf("a marked response carries Use-As-Dictionary: %s", got)
	}
	plain := plainSharedPage(t, h, 16<<10)
	if remembered(h, "/js/b.js", plain) {
		t.Fatal("a marked response was remembered as a dictionary")
	}
	// The instrument: unmarked, it is remembered, and the next marked
	// response's client holds it.
	if rec := serveAt(h, "/js/a.js", chromeAE); rec.Header().Get("Use-As-Dictionary") == "" || !remembered(h, "/js/b.js", plain) {
		t.Fatal("the unmarked page was not remembered (the instrument)")
	}
	for _, ae := range []string{chromeAE, "dcb, br", "dcz, zstd", "dcz, dcb, gzip"} {
		rec := serveAt(h, "/js/a.js?marked=1", ae, "Available-Dictionary", availableFor(plain))
		switch ce := rec.Header().Get("Content-Encoding"); ce {
		case squeeze.DCZ, squeeze.DCB, squeeze.Brotli:
			t.Errorf("Accept-Encoding %q: a marked response went out in %s", ae, ce)
		}
	}
}

// TestSecretResponseNeverLearnedFrom: a learned route's marked pages,
// their token repeated, are never samples: the dictionary trained on the
// route holds no token.
func TestSecretResponseNeverLearnedFrom(t *testing.T) {
	t.Parallel()
	m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "public, max-age=60")
		if r.URL.Query().Get("marked") == "1" {
			for range 100 {
				if _, err := squeeze.WriteSecret(w, []byte(secretToken)); err != nil {
					panic(err)
				}
				_, _ = w.Write([]byte(" account 4411 balance 1024; "))
			}
		}
		_, _ = w.Write(searchPage("shop", len(r.URL.Path)))
	}))
	for i := range 24 {
		serveAt(h, fmt.Sprintf("/search/%d?marked=1", i), "br")
		if i%3 == 0 {
			serveAt(h, fmt.Sprintf("/search/%d", i), "br")
		}
	}
	squeeze.WaitLearned(m)
	url := learnedLink(serveAt(h, "/search/1", "br").Header())
	if url == "" {
		t.Fatal("no dictionary was trained on the 8 unmarked pages")
	}
	if dict := serveAt(h, url, "").Body.Bytes(); bytes.Contains(dict, []byte(secretToken)) || bytes.Contains(dict, []byte("balance 1024")) {
		t.Fatal("the learned dictionary holds the marked pages' token")
	}
}

// TestSecretResponseNeverReachesTheFleet: a replica with a Cache and a
// SharedStore, serving a public marked page again and again, writes
// nothing of it to the store (no encoding, no dictionary); the unmarked
// page, served as often, is written (the instrument).
func TestSecretResponseNeverReachesTheFleet(t *testing.T) {
	t.Parallel()
	for _, marked := range []bool{true, false} {
		store := newMemStore()
		c := newCache(t, 64<<20)
		m := newMiddleware(t, squeeze.WithCache(c), squeeze.WithDictionaryMatch("/js/*"),
			squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)))
		h := m.Handler(sharedPage(24 << 10))
		path := "/js/app.js"
		if marked {
			path += "?marked=1"
		}
		for range 6 {
			serveAt(h, path, "zstd")
		}
		squeeze.WaitUpgrades(c)
		squeeze.WaitSharedStore(m)
		keys := store.keys()
		if marked && len(keys) != 0 {
			t.Errorf("marked: the replica wrote %d keys to the store: %q", len(keys), keys)
		}
		if !marked && len(keys) == 0 {
			t.Errorf("unmarked: the replica wrote nothing to the store (the instrument)")
		}
	}
}
