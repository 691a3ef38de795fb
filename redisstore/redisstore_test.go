package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// startRedis starts a redis-server of the test's own and returns it with a
// raw client (no prefix, no Store) for what the tests inject and inspect.
func startRedis(t testing.TB, extra ...string) (*testtool.Redis, *redis.Client) {
	t.Helper()
	srv := testtool.StartRedis(t, extra...)
	return srv, newClient(t, srv, true)
}

// newClient returns a client of srv, closed when the test ends;
// honoursContext is its ContextTimeoutEnabled.
func newClient(t testing.TB, srv *testtool.Redis, honoursContext bool) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  srv.Addr(),
		ContextTimeoutEnabled: honoursContext,
		// Tests that stop the server want its errors, not the
		// client's retries of them.
		MaxRetries: -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore returns a Store on a client of srv (see newClient) with opts,
// after a timeout no loaded machine (or -race) reaches: the tests that are
// not about the timeout pin what the Store does, not when.
func newStore(t testing.TB, srv *testtool.Redis, honoursContext bool, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	return redisstore.MustNew(newClient(t, srv, honoursContext), append([]redisstore.Option{redisstore.WithTimeout(10 * time.Second)}, opts...)...)
}

func TestGetReturnsWhatSetStored(t *testing.T) {
	srv, _ := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	for _, size := range []int{0, 1, 1 << 10, 64 << 10, 1 << 20} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			value := make([]byte, size)
			for i := range value {
				value[i] = byte(i * 7) // every byte value, NULs included
			}
			key := "value/" + strconv.Itoa(size)
			if err := s.Set(ctx, key, value, 0); err != nil {
				t.Fatal(err)
			}
			got, ok, err := s.Get(ctx, key, size)
			if err != nil || !ok || !bytes.Equal(got, value) {
				t.Fatalf("Get(limit %d) = %d bytes, %v, %v; want the %d bytes Set stored", size, len(got), ok, err, size)
			}
		})
	}
}

func TestGetOfMissingKeyIsNotFound(t *testing.T) {
	srv, _ := startRedis(t)
	s := newStore(t, srv, true)
	got, ok, err := s.Get(t.Context(), "never-set", 1<<20)
	if err != nil || ok || got != nil {
		t.Fatalf("Get of a missing key = %q, %v, %v; want nil, false, nil", got, ok, err)
	}
}

func TestSetReplacesTheValue(t *testing.T) {
	srv, _ := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	for _, v := range []string{"first", "second, longer"} {
		if err := s.Set(ctx, "k", []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := s.Get(ctx, "k", 100); string(got) != "second, longer" || !ok || err != nil {
		t.Fatalf("Get = %q, %v, %v; want the second value", got, ok, err)
	}
}

func TestClaimStoresOnlyWhenKeyHoldsNothing(t *testing.T) {
	srv, _ := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	if won, err := s.Claim(ctx, "work", []byte("replica-1"), time.Minute); !won || err != nil {
		t.Fatalf("first Claim = %v, %v; want true", won, err)
	}
	if won, err := s.Claim(ctx, "work", []byte("replica-2"), time.Minute); won || err != nil {
		t.Fatalf("second Claim = %v, %v; want false", won, err)
	}
	if got, _, _ := s.Get(ctx, "work", 100); string(got) != "replica-1" {
		t.Fatalf("after a lost claim the value is %q; want the winner's", got)
	}
	if err := s.Set(ctx, "done", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if won, err := s.Claim(ctx, "done", []byte("x"), 0); won || err != nil {
		t.Fatalf("Claim of a key Set wrote = %v, %v; want false", won, err)
	}

	// Of many replicas claiming at once, one wins.
	const n = 32
	var wg sync.WaitGroup
	wins := make(chan int, n)
	for i := range n {
		wg.Go(func() {
			won, err := s.Claim(ctx, "race", []byte(strconv.Itoa(i)), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if won {
				wins <- i
			}
		})
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 {
		t.Fatalf("%d of %d concurrent claims won; want 1", len(wins), n)
	}
}

func TestLifetimes(t *testing.T) {
	srv, raw := startRedis(t)
	ctx := t.Context()
	defaults := newStore(t, srv, true)
	hour := newStore(t, srv, true, redisstore.WithLifetime(time.Hour))
	for _, tc := range []struct {
		name     string
		write    func(key string) error
		min, max time.Duration
	}{
		{"Set with 0 takes DefaultLifetime", func(k string) error { return defaults.Set(ctx, k, []byte("v"), 0) },
			redisstore.DefaultLifetime - time.Minute, redisstore.DefaultLifetime},
		{"Claim with 0 takes DefaultLifetime", func(k string) error { _, err := defaults.Claim(ctx, k, []byte("v"), 0); return err },
			redisstore.DefaultLifetime - time.Minute, redisstore.DefaultLifetime},
		{"Set with 0 takes WithLifetime's", func(k string) error { return hour.Set(ctx, k, []byte("v"), 0) },
			time.Hour - time.Minute, time.Hour},
		{"Claim with 0 takes WithLifetime's", func(k string) error { _, err := hour.Claim(ctx, k, []byte("v"), 0); return err },
			time.Hour - time.Minute, time.Hour},
		{"Set's own lifetime wins over WithLifetime's", func(k string) error { return hour.Set(ctx, k, []byte("v"), 90*time.Second) },
			80 * time.Second, 90 * time.Second},
		{"Claim's own lifetime wins over WithLifetime's", func(k string) error { _, err := hour.Claim(ctx, k, []byte("v"), 90*time.Second); return err },
			80 * time.Second, 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			if err := tc.write(key); err != nil {
				t.Fatal(err)
			}
			ttl, err := raw.PTTL(ctx, redisstore.DefaultPrefix+key).Result()
			if err != nil || ttl < tc.min || ttl > tc.max {
				t.Fatalf("the key's time to live is %v (%v); want %v to %v", ttl, err, tc.min, tc.max)
			}
		})
	}

	t.Run("an entry is gone after its lifetime", func(t *testing.T) {
		if err := defaults.Set(ctx, "short", []byte("v"), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if won, err := defaults.Claim(ctx, "short-claim", []byte("v"), 50*time.Millisecond); !won || err != nil {
			t.Fatalf("Claim = %v, %v", won, err)
		}
		time.Sleep(200 * time.Millisecond)
		for _, key := range []string{"short", "short-claim"} {
			if got, ok, err := defaults.Get(ctx, key, 10); ok || err != nil {
				t.Errorf("Get(%q) after its lifetime = %q, %v, %v; want nothing", key, got, ok, err)
			}
		}
		if won, err := defaults.Claim(ctx, "short-claim", []byte("v"), time.Minute); !won || err != nil {
			t.Errorf("Claim after the claim's lifetime = %v, %v; want true", won, err)
		}
	})
}

func TestPrefixKeepsStoresApart(t *testing.T) {
	srv, raw := startRedis(t)
	ctx := t.Context()
	a := newStore(t, srv, true, redisstore.WithPrefix("app-a:"))
	b := newStore(t, srv, true, redisstore.WithPrefix("app-b:"))
	if err := a.Set(ctx, "k", []byte("a's"), 0); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.Get(ctx, "k", 100); ok || err != nil {
		t.Fatalf("b.Get of a's key = %q, %v, %v; want nothing", got, ok, err)
	}
	if won, err := b.Claim(ctx, "k", []byte("b's"), 0); !won || err != nil {
		t.Fatalf("b.Claim of a's key = %v, %v; want true", won, err)
	}
	for key, want := range map[string]string{"app-a:k": "a's", "app-b:k": "b's"} {
		if got, err := raw.Get(ctx, key).Result(); got != want || err != nil {
			t.Errorf("raw GET %s = %q, %v; want %q", key, got, err, want)
		}
	}
	if got := a.Prefix(); got != "app-a:" {
		t.Errorf("Prefix() = %q", got)
	}
	if got := redisstore.MustNew(raw).Prefix(); got != redisstore.DefaultPrefix {
		t.Errorf("default Prefix() = %q; want %q", got, redisstore.DefaultPrefix)
	}
}

// netOutput returns the bytes the server has sent its clients.
func netOutput(t *testing.T, raw *redis.Client) int {
	t.Helper()
	info, err := raw.Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`total_net_output_bytes:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no total_net_output_bytes in INFO stats:\n%s", info)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestGetOverTheLimitDoesNotTransferTheValue(t *testing.T) {
	srv, raw := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	const size = 1 << 20
	if err := s.Set(ctx, "big", bytes.Repeat([]byte("x"), size), 0); err != nil {
		t.Fatal(err)
	}
	// The server's output over one Get, baseline first: within the limit
	// the value crosses the wire; over it, only its length does.
	sent := func(limit int) (int, bool) {
		before := netOutput(t, raw)
		got, ok, err := s.Get(ctx, "big", limit)
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(got) != size {
			t.Fatalf("Get returned %d bytes; want %d", len(got), size)
		}
		return netOutput(t, raw) - before, ok
	}
	within, ok := sent(size)
	if !ok || within < size {
		t.Fatalf("Get(limit %d) of a %d-byte value: found %v, %d bytes sent; want it found and sent", size, size, ok, within)
	}
	for _, limit := range []int{0, 1 << 10, size - 1} {
		over, ok := sent(limit)
		if ok {
			t.Fatalf("Get(limit %d) of a %d-byte value found it", limit, size)
		}
		if over > within/16 {
			t.Errorf("Get(limit %d) of a %d-byte value: the server sent %d bytes (%d within the limit); want the value left on the server", limit, size, over, within)
		}
	}
}

func TestCorruptedValueIsReturnedAsStored(t *testing.T) {
	srv, raw := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	// What another program (or an attacker with the database) wrote is
	// returned as it is: squeeze, not the store, verifies it.
	injected := []byte("\x00\xffnot a dictionary\r\n$-1\r\n")
	if err := raw.Set(ctx, redisstore.DefaultPrefix+"dict", injected, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Get(ctx, "dict", 1<<10); !bytes.Equal(got, injected) || !ok || err != nil {
		t.Fatalf("Get = %q, %v, %v; want the injected bytes", got, ok, err)
	}

	// A key of another type is an error, not a value.
	if err := raw.RPush(ctx, redisstore.DefaultPrefix+"list", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Get(ctx, "list", 1<<10); err == nil || ok {
		t.Fatalf("Get of a list = %q, %v, %v; want an error", got, ok, err)
	}
}

func TestInvalidArgumentsAreErrors(t *testing.T) {
	srv, _ := startRedis(t)
	s := newStore(t, srv, true)
	ctx := t.Context()
	if _, _, err := s.Get(ctx, "k", -1); err == nil || !strings.Contains(err.Error(), "negative limit -1") {
		t.Errorf("Get with limit -1: %v", err)
	}
	if err := s.Set(ctx, "k", nil, -time.Second); err == nil || !strings.Contains(err.Error(), "negative lifetime -1s") {
		t.Errorf("Set with lifetime -1s: %v", err)
	}
	if _, err := s.Claim(ctx, "k", nil, -time.Second); err == nil || !strings.Contains(err.Error(), "negative lifetime -1s") {
		t.Errorf("Claim with lifetime -1s: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Get(canceled, "k", 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context: %v", err)
	}
}

func TestNewRejectsMistakes(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		opts   []redisstore.Option
		want   string
	}{
		{"nil client", nil, nil, "the client is nil"},
		{"empty prefix", client, []redisstore.Option{redisstore.WithPrefix("")}, `WithPrefix(""): the prefix must not be empty`},
		{"hash tag in prefix", client, []redisstore.Option{redisstore.WithPrefix("{app}:")}, `WithPrefix("{app}:")`},
		{"zero lifetime", client, []redisstore.Option{redisstore.WithLifetime(0)}, "WithLifetime(0s): the lifetime must be at least 1s"},
		{"lifetime under a second", client, []redisstore.Option{redisstore.WithLifetime(time.Millisecond)}, "WithLifetime(1ms)"},
		{"zero timeout", client, []redisstore.Option{redisstore.WithTimeout(0)}, "WithTimeout(0s): the timeout must be more than 0"},
		{"negative timeout", client, []redisstore.Option{redisstore.WithTimeout(-time.Second)}, "WithTimeout(-1s)"},
		{"timeout over a minute", client, []redisstore.Option{redisstore.WithTimeout(time.Hour)}, "WithTimeout(1h0m0s)"},
		{"nil option", client, []redisstore.Option{redisstore.WithTimeout(time.Second), nil}, "option 2 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := redisstore.New(tc.client, tc.opts...)
			if err == nil || s != nil || !strings.HasPrefix(err.Error(), "redisstore.New: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, %v; want nil and an error with %q", s, err, tc.want)
			}
			defer func() {
				if msg := fmt.Sprint(recover()); msg != err.Error() {
					t.Errorf("MustNew panicked with %q; want New's error %q", msg, err)
				}
			}()
			redisstore.MustNew(tc.client, tc.opts...)
		})
	}
}

// pause stops srv from answering any client for d (CLIENT PAUSE ... ALL),
// raw too: no client can end the pause sooner.
func pause(t *testing.T, raw *redis.Client, d time.Duration) {
	t.Helper()
	if err := raw.Do(t.Context(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutEndsCallsToAServerThatDoesNotAnswer(t *testing.T) {
	const timeout = 50 * time.Millisecond
	const paused = 3 * time.Second
	for _, honours := range []bool{true, false} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(honours), func(t *testing.T) {
			srv, raw := startRedis(t)
			s := newStore(t, srv, honours, redisstore.WithTimeout(timeout))
			ctx := t.Context()
			if err := s.Set(ctx, "k", []byte("v"), 0); err != nil { // connects
				t.Fatal(err)
			}
			pause(t, raw, paused)
			calls := map[string]func() error{
				"Get":   func() error { _, _, err := s.Get(ctx, "k", 10); return err },
				"Set":   func() error { return s.Set(ctx, "k", []byte("v"), 0) },
				"Claim": func() error { _, err := s.Claim(ctx, "c", []byte("v"), 0); return err },
			}
			for name, call := range calls {
				start := time.Now()
				err := call()
				// Bounded by the pause, not timed to the timeout: the
				// call returned long before the server would answer.
				if took := time.Since(start); err == nil || took > paused/3 {
					t.Errorf("%s against a paused server: %v after %v; want an error within the %v timeout", name, err, took, timeout)
				}
			}

			// A caller's earlier deadline ends a call sooner than the
			// Store's timeout; the Store's ends a caller's later one.
			long := newStore(t, srv, honours, redisstore.WithTimeout(paused/3))
			short, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			if _, _, err := long.Get(short, "k", 10); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
				t.Errorf("Get with the caller's %v deadline: %v; want its deadline exceeded", timeout, err)
			}
			if took := time.Since(start); took > paused/3 {
				t.Errorf("Get with the caller's %v deadline, Store's %v timeout, took %v", timeout, paused/3, took)
			}
		})
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func TestAbandonedCommandsAreBounded(t *testing.T) {
	srv, raw := startRedis(t)
	// Without ContextTimeoutEnabled the client waits on a paused server
	// for its ReadTimeout; the Store returns at its timeout and leaves at
	// most MaxAbandoned commands running.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 5 * time.Second, MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	s := redisstore.MustNew(c, redisstore.WithTimeout(20*time.Millisecond))
	ctx := t.Context()
	if err := s.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	// Connections for every command below, dialled now: a command that
	// had to dial one during the pause could fail its dial at the timeout
	// on a loaded machine, and so end instead of staying abandoned.
	conns := make([]*redis.Conn, 2*redisstore.MaxAbandoned)
	for i := range conns {
		conns[i] = c.Conn()
		if err := conns[i].Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, conn := range conns {
		_ = conn.Close() // back to c's pool
	}
	pause(t, raw, 2*time.Second)
	for i := range redisstore.MaxAbandoned {
		if _, _, err := s.Get(ctx, "k", 10); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get %d against a paused server: %v; want the deadline exceeded", i+1, err)
		}
	}
	if _, _, err := s.Get(ctx, "k", 10); !errors.Is(err, redisstore.ErrTooManyAbandoned) {
		t.Fatalf("Get with %d commands abandoned: %v; want ErrTooManyAbandoned", redisstore.MaxAbandoned, err)
	}
	// The abandoned commands end when the pause does and the server
	// answers them; then calls go through again.
	waitFor(t, 5*time.Second, func() error {
		got, ok, err := s.Get(ctx, "k", 10)
		if err == nil && (!ok || string(got) != "v") {
			t.Fatalf("Get after the pause = %q, %v", got, ok)
		}
		return err
	})
}

// waitFor calls try until it returns nil, and fails the test if it has
// not within d.
func waitFor(t *testing.T, d time.Duration, try func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServerStoppedAndRestarted(t *testing.T) {
	for _, honours := range []bool{true, false} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(honours), func(t *testing.T) {
			srv, _ := startRedis(t)
			s := newStore(t, srv, honours)
			ctx := t.Context()
			if err := s.Set(ctx, "k", []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			srv.Stop()
			for range 3 {
				if _, ok, err := s.Get(ctx, "k", 10); err == nil || ok {
					t.Fatalf("Get with the server stopped = %v, %v; want an error", ok, err)
				}
				if err := s.Set(ctx, "k", []byte("v"), 0); err == nil {
					t.Fatal("Set with the server stopped: no error")
				}
				if won, err := s.Claim(ctx, "c", []byte("v"), 0); err == nil || won {
					t.Fatalf("Claim with the server stopped = %v, %v; want an error", won, err)
				}
			}
			srv.Restart()
			// The restarted server is empty (no persistence); the
			// Store reconnects and works again.
			waitFor(t, 5*time.Second, func() error {
				_, ok, err := s.Get(ctx, "k", 10)
				if err == nil && ok {
					t.Fatal("the restarted server, without persistence, still held the key")
				}
				return err
			})
			if err := s.Set(ctx, "k", []byte("again"), 0); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := s.Get(ctx, "k", 10); string(got) != "again" || !ok || err != nil {
				t.Fatalf("Get after the restart = %q, %v, %v", got, ok, err)
			}
			if won, err := s.Claim(ctx, "c", []byte("v"), 0); !won || err != nil {
				t.Fatalf("Claim after the restart = %v, %v", won, err)
			}
		})
	}
}
