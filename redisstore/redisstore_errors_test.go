package redisstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// Each failure of a real server tells squeeze its kind: a refused
// connection, a deadline, a value or reply too large, something that is
// not a value.
func TestStoreErrorsTellSqueezeTheirKind(t *testing.T) {
	big := make([]byte, 2<<20)
	for _, tc := range []struct {
		name string
		want error
		// call makes the store fail as the case says, and returns its error.
		call func(t *testing.T) error
	}{
		{"refused: server stopped", syscall.ECONNREFUSED, func(t *testing.T) error {
			srv, _ := startRedis(t)
			s := newStore(t, srv, true)
			srv.Stop()
			_, _, err := s.Get(t.Context(), "k", 10)
			return err
		}},
		{"timeout: server paused", errTimeout, func(t *testing.T) error {
			srv, raw := startRedis(t)
			s := redisstore.MustNew(newClient(t, srv, true), redisstore.WithTimeout(100*time.Millisecond))
			if err := raw.Do(t.Context(), "CLIENT", "PAUSE", 2000, "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Get(t.Context(), "k", 10)
			return err
		}},
		{"too large: server full, evicting nothing (OOM)", errTooLarge, func(t *testing.T) error {
			srv, _ := startRedis(t, "--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
			return newStore(t, srv, true).Set(t.Context(), "k", big, 0)
		}},
		{"too large: a reply over LimitReplies' limit", errTooLarge, func(t *testing.T) error {
			s := hostileStore(t, "$2000000000\r\n")
			_, _, err := s.Get(t.Context(), "k", 10)
			return err
		}},
		{"bad value: a key of another type (WRONGTYPE)", errBadValue, func(t *testing.T) error {
			srv, raw := startRedis(t)
			if err := raw.LPush(t.Context(), redisstore.DefaultPrefix+"k", "x").Err(); err != nil {
				t.Fatal(err)
			}
			_, _, err := newStore(t, srv, true).Get(t.Context(), "k", 10)
			return err
		}},
		{"bad value: a malformed reply", errBadValue, func(t *testing.T) error {
			s := hostileStore(t, "?garbage\r\n")
			_, _, err := s.Get(t.Context(), "k", 10)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(t); !errors.Is(err, tc.want) && !hasKind(err, tc.want) && (tc.want != errTimeout || !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err)) {
				t.Errorf("the store's error %v is not %v", err, tc.want)
			}
		})
	}
}

// errTooLarge and errBadValue stand for an error whose SharedErrorKind
// (which tells squeeze its kind) is "too_large" or "bad_value".
var (
	errTooLarge = errors.New("too_large")
	errBadValue = errors.New("bad_value")
)

// hasKind reports whether err tells squeeze it is of kind want.
func hasKind(err, want error) bool {
	var k interface{ SharedErrorKind() string }
	return errors.As(err, &k) && k.SharedErrorKind() == want.Error()
}

// errTimeout stands for a deadline: context.DeadlineExceeded, or a
// net.Error whose Timeout is true, which go-redis returns.
var errTimeout = errors.New("a deadline")

// hostileStore returns a Store on a server that answers every command with
// reply, through LimitReplies.
func hostileStore(t *testing.T, reply string) *redisstore.Store {
	t.Helper()
	opt := &redis.Options{Addr: testtool.HostileRedis(t, reply, false, nil), ContextTimeoutEnabled: true, MaxRetries: -1}
	opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 4<<20)
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	return redisstore.MustNew(client, redisstore.WithTimeout(5*time.Second))
}

// A replica counts the failures of its Redis by kind.
func TestFleetCountsStoreFailuresByKind(t *testing.T) {
	srv, raw := startRedis(t)
	files := releases(t, 2)
	a := startReplica(t, newStore(t, srv, true), files)
	// A key of squeeze's where a dictionary would be, of another type.
	if err := raw.LPush(t.Context(), redisstore.DefaultPrefix+dictKey(files[0]), "x").Err(); err != nil {
		t.Fatal(err)
	}
	a.get(t, files, 2, files[0])
	srv.Stop()
	a.get(t, files, 2, []byte("a dictionary no replica holds"))
	var got struct {
		Shared struct {
			ByKind map[string]int64 `json:"errors_by_kind"`
		} `json:"shared_store"`
	}
	if err := json.Unmarshal([]byte(a.counters.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Shared.ByKind["bad_value"] != 1 || got.Shared.ByKind["refused"] != 1 {
		t.Errorf("errors by kind %v; want one bad_value and one refused", got.Shared.ByKind)
	}
}

// dictKey is the key, without prefix, of the dictionary dict.
func dictKey(dict []byte) string {
	sum := sha256.Sum256(dict)
	return "dict:" + base64.RawURLEncoding.EncodeToString(sum[:])
}
