//go:build unix

package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// The replicas are this test binary run again with these variables set:
// TestMain serves a replica instead of running the tests.
const (
	envAddr    = "SQUEEZE_FLEET_REPLICA_ADDR"
	envRedis   = "SQUEEZE_FLEET_REPLICA_REDIS"
	envReplica = "SQUEEZE_FLEET_REPLICA_NAME"
	feedPath   = "/api/feed"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envAddr); addr != "" {
		serve := serveReplica
		if os.Getenv(envFiles) != "" {
			serve = serveBundles
		}
		if err := serve(addr, os.Getenv(envRedis), os.Getenv(envReplica)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveReplica serves the feed behind squeeze with WithDictionaryMatch on
// addr until killed, sharing through the Redis at redisAddr if it is not
// empty.
func serveReplica(addr, redisAddr, name string) error {
	opts := []squeeze.Option{squeeze.WithDictionaryMatch(feedPath + "*")}
	if redisAddr != "" {
		client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
		defer client.Close()
		// A timeout a loaded CI machine (or -race) does not reach: the
		// test pins what is shared; redisstore's own tests pin the
		// timeout.
		opts = append(opts, squeeze.WithSharedStore(redisstore.MustNew(client), squeeze.SharedTimeout(time.Second),
			// Every response is a dictionary of its own, which the
			// client names to another replica: each is to be written
			// once sent, not once sent twice (the default keeps a
			// flood of one-off bodies out of the store). The default
			// write budget, 60 a minute, still bounds what a replica
			// writes: the test's 60 requests a run make 20 a replica.
			squeeze.SharedAdmitAfter(1)))
	}
	m, err := squeeze.New(opts...)
	if err != nil {
		return err
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != feedPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// Fresh for a minute: a client keeps it as a dictionary.
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("X-Replica", name)
		_, _ = w.Write(feed(time.Now()))
	}))
	return http.ListenAndServe(addr, h)
}

// feed is a news feed as of now: the same items each time but for the
// time, so that every response is a dictionary of its own, and the next a
// small delta against it.
func feed(now time.Time) []byte {
	type item struct {
		ID     int    `json:"id"`
		Title  string `json:"title"`
		Author string `json:"author"`
		Body   string `json:"body"`
	}
	authors := []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"}
	items := make([]item, 60)
	for i := range items {
		items[i] = item{
			ID:     1000 + i,
			Title:  fmt.Sprintf("Release notes for version 1.%d of the compression middleware", i),
			Author: authors[i%len(authors)],
			Body:   fmt.Sprintf("Item %d: deltas across a fleet of replicas, shared through a store the operators already run.", i),
		}
	}
	b, err := json.Marshal(struct {
		AsOf  string `json:"as_of"`
		Items []item `json:"items"`
	}{now.UTC().Format(time.RFC3339Nano), items})
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return b
}

// waitHTTP waits until url answers.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProcess starts name with args and env, killed when the test ends
// or when the returned function is called, whichever comes first.
func startProcess(t *testing.T, env []string, name string, args ...string) (kill func()) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill = sync.OnceFunc(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	t.Cleanup(kill)
	return kill
}

// startReplicas starts a replica on each of addrs, the test binary run
// again with env, and waits until each answers; kill ends them all.
func startReplicas(t *testing.T, env []string, addrs []string) (kill func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var kills []func()
	for i, addr := range addrs {
		kills = append(kills, startProcess(t, append([]string{envAddr + "=" + addr, envReplica + "=" + strconv.Itoa(i)}, env...), self))
	}
	for _, addr := range addrs {
		waitHTTP(t, "http://"+addr+"/")
	}
	return func() {
		for _, k := range kills {
			k()
		}
	}
}

// startFleet starts three replicas (sharing through redisAddr if it is not
// empty) behind HAProxy balancing with balance (roundrobin, random), and
// returns HAProxy's URL.
func startFleet(t *testing.T, balance, redisAddr string) string {
	t.Helper()
	addrs := freeAddrs(t, 3)
	startReplicas(t, []string{envRedis + "=" + redisAddr}, addrs)
	return startHAProxy(t, balance, addrs)
}

// freeAddrs returns n free loopback addresses.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(testtool.FreePort(t))
	}
	return addrs
}

// startHAProxy starts HAProxy balancing over the servers at addrs with
// balance, and returns its URL.
func startHAProxy(t *testing.T, balance string, addrs []string) string {
	t.Helper()
	haproxy := testtool.Require(t, "haproxy")
	var servers string
	for i, addr := range addrs {
		servers += fmt.Sprintf("    server r%d %s\n", i, addr)
	}
	front := "127.0.0.1:" + strconv.Itoa(testtool.FreePort(t))
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	// Each request balanced on its own: no stickiness, no cookie, no
	// preference for the last server.
	config := fmt.Sprintf(`global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fleet
    bind %s
    default_backend replicas
backend replicas
    balance %s
%s`, front, balance, servers)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, nil, haproxy, "-db", "-f", cfg)
	waitHTTP(t, "http://"+front+"/")
	return "http://" + front
}

// codingRecorder records the Content-Encoding and replica of each response
// as it came over the wire, under squeeze's Transport.
type codingRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string // "coding@replica"
}

func (c *codingRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.base.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen = append(c.seen, res.Header.Get("Content-Encoding")+"@"+res.Header.Get("X-Replica"))
		c.mu.Unlock()
	}
	return res, err
}

// run is what deltaShare saw.
type run struct {
	share    float64        // of the responses after the first, sent as dcz or dcb
	replicas map[string]int // responses per replica
	slowest  time.Duration  // the longest request
}

// deltaShare fetches the feed n times through squeeze's Transport and
// checks every body. With store, it waits after each response until the
// store holds one key more (the response's dictionary, written in the
// background), as a client's think time would let it, for at most a few
// seconds.
func deltaShare(t *testing.T, url string, n int, store *redis.Client) run {
	t.Helper()
	keys := func() int64 {
		if store == nil {
			return 0
		}
		n, _ := store.DBSize(t.Context()).Result()
		return n
	}
	base := keys()
	var slowest time.Duration
	rec := &codingRecorder{base: &http.Transport{}}
	client := &http.Client{Transport: &squeeze.Transport{Base: rec, DictionaryStoreSize: 16 << 20}, Timeout: 20 * time.Second}
	replicas := map[string]int{}
	deltas := 0
	for i := range n {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url+feedPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		slowest = max(slowest, time.Since(start))
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d, %v", i, res.StatusCode, err)
		}
		var f struct {
			AsOf string `json:"as_of"`
		}
		if err := json.Unmarshal(body, &f); err != nil {
			t.Fatalf("request %d: the body is not the feed: %v", i, err)
		}
		asOf, err := time.Parse(time.RFC3339Nano, f.AsOf)
		if err != nil || string(body) != string(feed(asOf)) {
			t.Fatalf("request %d: the body is not the feed as of %q (%v)", i, f.AsOf, err)
		}
		replicas[res.Header.Get("X-Replica")]++
		for deadline := time.Now().Add(5 * time.Second); store != nil && keys() < base+int64(i)+1 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i, s := range rec.seen {
		coding := s[:len(s)-len("@0")]
		if i > 0 && (coding == squeeze.DCZ || coding == squeeze.DCB) {
			deltas++
		}
	}
	t.Logf("codings@replica: %v", rec.seen)
	return run{float64(deltas) / float64(n-1), replicas, slowest}
}

func TestFleetBehindALoadBalancerServesDeltasWithTheStore(t *testing.T) {
	testtool.Require(t, "haproxy")
	srv := testtool.StartRedis(t)
	const n = 60
	for _, tc := range []struct {
		balance    string
		maxWithout float64 // the share of deltas without the store, at most
	}{
		// Round-robin never sends a client back to the replica that
		// sent its latest dictionary.
		{"roundrobin", 0.05},
		// Random sends it back a third of the time.
		{"random", 2.0 / 3},
	} {
		t.Run(tc.balance, func(t *testing.T) {
			without := deltaShare(t, startFleet(t, tc.balance, ""), n, nil)
			if len(without.replicas) != 3 {
				t.Fatalf("the responses came from replicas %v; want all three", without.replicas)
			}
			redisClient := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer redisClient.Close()
			if err := redisClient.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			url := startFleet(t, tc.balance, srv.Addr())
			with := deltaShare(t, url, n, redisClient)
			if len(with.replicas) != 3 {
				t.Fatalf("the responses came from replicas %v; want all three", with.replicas)
			}
			t.Logf("balance %s: %.1f%% of the responses after the first were dcz or dcb without the store, %.1f%% with it",
				tc.balance, 100*without.share, 100*with.share)
			// Issue 35's goal, 95%: on a quiet machine every response is
			// one (100%); a store read that outlasts the timeout on a
			// loaded one costs a delta (98.3% at load 20), never a byte.
			if with.share < 0.95 {
				t.Errorf("with the store, %.1f%% of the responses after the first were deltas; want 95%% or more", 100*with.share)
			}
			if without.share > tc.maxWithout {
				t.Errorf("without the store, %.1f%% of the responses after the first were deltas; want at most %.0f%%", 100*without.share, 100*tc.maxWithout)
			}

			// The store stopped: every body is still right (deltaShare
			// checks them), and a request waits at most about the
			// timeout more than with the store up.
			srv.Stop()
			stopped := deltaShare(t, url, n/2, nil)
			t.Logf("balance %s, the store stopped: %.1f%% deltas; slowest request %v (store up: %v)",
				tc.balance, 100*stopped.share, stopped.slowest, with.slowest)
			if stopped.slowest > with.slowest+time.Second {
				t.Errorf("with the store stopped the slowest request took %v, with it up %v; want well under a second more (the store costs at most its %v timeout)",
					stopped.slowest, with.slowest, 25*time.Millisecond)
			}
			// Back, empty: sharing resumes once the replicas' breakers
			// let them ask again.
			srv.Restart()
			time.Sleep(3 * time.Second)
			restarted := deltaShare(t, url, n/2, redisClient)
			t.Logf("balance %s, the store restarted: %.1f%% deltas", tc.balance, 100*restarted.share)
			if restarted.share < 0.9 {
				t.Errorf("after the store restarted, %.1f%% of the responses after the first were deltas; want 90%% or more", 100*restarted.share)
			}
			srv.Restart() // empty, for the next case
		})
	}
}
