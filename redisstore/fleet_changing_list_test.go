package redisstore_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/redisstore"
)

// A public resource that changes every few requests, fetched by a client
// that keeps each response as its dictionary, through three replicas
// behind round robin: each request reaches a replica other than the one
// that sent the client its dictionary.

const (
	listPath    = "/api/list"
	listPattern = "/api/*"
	// listChangesEvery is how many requests the list stays the same for.
	listChangesEvery = 5
)

// listVersion is the JSON list as of version v: items added one a
// version, the rest the same.
func listVersion(v int) []byte {
	type item struct {
		ID    int    `json:"id"`
		Name  string `json:"name"`
		Price string `json:"price"`
		Tags  string `json:"tags"`
	}
	items := make([]item, 0, 80+v)
	for i := range 80 + v {
		items = append(items, item{i, fmt.Sprintf("item %d of the catalogue", i), fmt.Sprintf("%d.%02d", 3+i*7%90, i*13%100), "public,listed,in-stock"})
	}
	b, err := json.Marshal(struct {
		Version int    `json:"version"`
		Items   []item `json:"items"`
	}{v, items})
	if err != nil {
		panic(err)
	}
	return b
}

// listFleet is three replicas serving the list, which changes every
// listChangesEvery requests to any of them, behind a round-robin proxy.
type listFleet struct {
	front    string
	replicas []*fleetReplica
}

func startListFleet(t *testing.T, stores []squeeze.SharedStore) *listFleet {
	t.Helper()
	var served atomic.Int64 // the fleet's database: a version per few requests
	f := &listFleet{}
	var targets []*url.URL
	for _, store := range stores {
		r := &fleetReplica{counters: &squeeze.Counters{}}
		opts := []squeeze.Option{squeeze.WithDictionaryMatch(listPattern), squeeze.WithObserver(r.counters.Observer())}
		if store != nil {
			opts = append(opts, squeeze.WithSharedStore(store, squeeze.SharedTimeout(5*time.Second)))
		}
		m := squeeze.MustNew(opts...)
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path != listPath {
				http.NotFound(w, req)
				return
			}
			v := int(served.Add(1)-1) / listChangesEvery
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, max-age=60")
			_, _ = w.Write(listVersion(v))
		}))
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		r.url = srv.URL
		f.replicas = append(f.replicas, r)
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, u)
	}
	var next atomic.Int64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(targets[int(next.Add(1)-1)%len(targets)])
		},
		// The header and body as the replica sent them: a proxy that
		// neither adds nor removes a coding.
		Transport: &http.Transport{DisableCompression: true},
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	f.front = front.URL
	return f
}

// codings records the Content-Encoding of each response as it came over
// the wire, under squeeze's Transport.
type codings struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (c *codings) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.base.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen = append(c.seen, res.Header.Get("Content-Encoding"))
		c.mu.Unlock()
	}
	return res, err
}

// fetchList fetches the list n times through f with squeeze's Transport,
// a client that keeps each response as its dictionary and names it in the
// next request, checks each body, and returns the share of responses after
// the first that came as dcz or dcb. With raw, after each response it
// waits, as a client's think time would, until the store holds the
// response's dictionary, at most 200 ms.
func fetchList(t *testing.T, f *listFleet, n int, raw *redis.Client, prefix string) float64 {
	t.Helper()
	rec := &codings{base: &http.Transport{}}
	client := &http.Client{Transport: &squeeze.Transport{Base: rec, DictionaryStoreSize: 16 << 20}, Timeout: 20 * time.Second}
	for i := range n {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.front+listPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d, %v", i, res.StatusCode, err)
		}
		var got struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal(body, &got); err != nil || string(body) != string(listVersion(got.Version)) {
			t.Fatalf("request %d: the body is not the list (%v)", i, err)
		}
		if raw == nil {
			continue
		}
		sum := sha256.Sum256(body)
		key := prefix + "dict:" + base64.RawURLEncoding.EncodeToString(sum[:])
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if n, err := raw.Exists(t.Context(), key).Result(); err == nil && n == 1 {
				break
			}
		}
	}
	deltas := 0
	for _, ce := range rec.seen[1:] {
		if isDelta(ce) {
			deltas++
		}
	}
	t.Logf("codings: %s", strings.Join(rec.seen, " "))
	return float64(deltas) / float64(n-1)
}

func TestFleetRoundRobinSendsAChangingPublicListAsDeltas(t *testing.T) {
	srv, raw := startRedis(t)
	const n = 60
	without := fetchList(t, startListFleet(t, make([]squeeze.SharedStore, 3)), n, nil, "")
	const prefix = "list:"
	stores := make([]squeeze.SharedStore, 3)
	for i := range stores {
		stores[i] = newStore(t, srv, true, redisstore.WithPrefix(prefix))
	}
	fleet := startListFleet(t, stores)
	with := fetchList(t, fleet, n, raw, prefix)
	t.Logf("a list changing every %d requests, %d requests round robin over three replicas: %.1f%% deltas without the store, %.1f%% with it",
		listChangesEvery, n, 100*without, 100*with)
	if with < 0.95 {
		t.Errorf("with the store, %.1f%% of the responses after the first were deltas; want 95%% or more", 100*with)
	}
	// What the fleet wrote is the list's versions, each once or so: the
	// versions a client named, and those that followed them.
	versions := n/listChangesEvery + 1
	if got := len(storedValues(t, raw, prefix)); got > versions {
		t.Errorf("the store holds %d keys; want at most the %d versions of the list", got, versions)
	}
}
