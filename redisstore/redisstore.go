// Package redisstore is a squeeze.SharedStore on Redis or Valkey, through
// github.com/redis/go-redis/v9, so that the replicas of a fleet share the
// dictionaries and best-level encodings squeeze learns:
//
//	client := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	mw, err := squeeze.New(squeeze.WithSharedStore(redisstore.MustNew(client)))
//
// A redis.UniversalClient covers a single server, Sentinel and Cluster: each
// call touches one key, so a Cluster serves it from the key's own slot.
//
// The package lives in a module of its own so that the Redis client never
// enters the graph of a program that does not use it.
//
// # What the store does and does not promise
//
// Every key is written under a prefix (WithPrefix), so that squeeze's keys
// stay apart from the rest of a shared database, and with a lifetime
// (WithLifetime, or the one squeeze asks for), so that Redis forgets what no
// replica needs any more. Values are opaque bytes: the store neither checks
// nor changes them. squeeze verifies what it reads (a dictionary against its
// SHA-256, an encoding against the hash of the body it encodes), so a value
// lost, evicted or corrupted in Redis costs a fallback, never a wrong byte.
//
// Get never transfers a value longer than its limit: a Lua script takes the
// value's length and, only when it is within the limit, the value, in one
// round trip (EVALSHA; EVAL once when the server does not hold the script).
// GetOrSize returns that length too, which makes the Store a
// squeeze.SharedStoreSizer.
//
// # A Redis that is not to be trusted
//
// go-redis allocates what a reply's header declares before it reads the
// reply, so a hostile or impersonated server could make each call allocate
// gigabytes. Give the Store a client of its own whose dialer is wrapped by
// LimitReplies, which fails a reply declaring more than squeeze reads, and
// connect with TLS as an ACL user that reaches only the Store's keys:
//
//	opt := &redis.Options{Addr: "redis:6380", ContextTimeoutEnabled: true,
//		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}, Username: "squeeze", Password: password}
//	opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 0)
//	store, err := redisstore.New(redis.NewClient(opt))
//
// # Timeouts
//
// Each call ends at the earlier of the caller's deadline and the Store's own
// timeout (WithTimeout). squeeze's WithSharedStore bounds the wait a request
// sees, and stops asking a store that fails; the Store's timeout is the
// bound for every other caller, and the backstop behind squeeze's.
//
// With the server down, go-redis retries its dial (DialerRetries, 100 ms
// apart by default), so a call waits out its whole timeout; squeeze's
// breaker stops asking after a few such calls, for a while.
//
// go-redis ignores contexts unless the client was made with
// ContextTimeoutEnabled: true; without it, a command to a server that does
// not answer waits out the client's ReadTimeout (seconds). Give the client
// that option. When it does not have it, the Store still returns at the
// timeout, leaving the command to end in another goroutine when the client
// gives up; while MaxAbandoned such commands are running, a call fails at
// once (ErrTooManyAbandoned) instead of leaving another one.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
)

// Defaults of the options.
const (
	// DefaultPrefix is the key prefix when WithPrefix is not given.
	DefaultPrefix = "squeeze:"

	// DefaultLifetime is how long an entry lives when the caller asks for
	// the store's default (a lifetime of 0) and WithLifetime is not given:
	// a week, so that a dictionary a client kept from one deploy is still
	// in the store for a client returning after the weekend and for the
	// next weekly deploy. Redis's own eviction (maxmemory-policy
	// allkeys-lru) bounds the memory before that.
	DefaultLifetime = 7 * 24 * time.Hour

	// DefaultTimeout bounds each call when WithTimeout is not given. It is
	// the backstop for callers without a deadline of their own and longer
	// than squeeze's default SharedTimeout (25 ms), so that squeeze's setting
	// is the one that bounds a request's wait; within it a value at
	// squeeze's largest limits crosses a loaded loopback or a data-centre
	// network (docs/perf-history.md).
	DefaultTimeout = 100 * time.Millisecond

	// MaxAbandoned is how many commands a Store leaves running past their
	// timeout, at most, on a client without ContextTimeoutEnabled.
	MaxAbandoned = 16
)

// ErrTooManyAbandoned is returned, wrapped, by a call made while
// MaxAbandoned commands that timed out are still running: the server does
// not answer and the client, without ContextTimeoutEnabled, still waits for
// it. It wraps context.DeadlineExceeded, so squeeze counts it as a
// failure of kind "timeout".
var ErrTooManyAbandoned error = &kindError{msg: "redisstore: too many commands still running past their timeout", err: context.DeadlineExceeded}

// kindError is an error of this package that tells squeeze its kind
// (squeeze's SharedStoreInfo.ErrorKind) by its SharedErrorKind method, or by the
// error it wraps.
type kindError struct {
	msg  string
	kind string // "too_large", "bad_value"; "" to leave it to err
	err  error  // wrapped, if not nil
}

func (e *kindError) Error() string {
	if e.msg == "" {
		return e.err.Error()
	}
	return e.msg
}

func (e *kindError) Unwrap() error { return e.err }

// SharedErrorKind tells squeeze the error's kind.
func (e *kindError) SharedErrorKind() string { return e.kind }

// withKind returns err, an error of the client, wrapped so that squeeze
// tells its kind: the server's OOM (full, evicting nothing) is
// "too_large", WRONGTYPE (a key of squeeze's prefix holding another type)
// "bad_value". Deadlines and refused connections carry their kind
// already.
func withKind(err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	switch msg := re.Error(); {
	case strings.HasPrefix(msg, "OOM "):
		return &kindError{kind: "too_large", err: err}
	case strings.HasPrefix(msg, "WRONGTYPE "):
		return &kindError{kind: "bad_value", err: err}
	}
	return err
}

// getScript returns the value under KEYS[1] when it is at most ARGV[1]
// bytes long; the length, as an integer, when it is longer; nil when the
// key holds nothing. STRLEN of a key that holds another type fails the
// script, as GET would.
var getScript = redis.NewScript(`
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then
	return n
end
return redis.call('GET', KEYS[1])
`)

// Store is a squeeze.SharedStore on a Redis client. It is safe for
// concurrent use.
type Store struct {
	client         redis.UniversalClient
	prefix         string
	lifetime       time.Duration
	timeout        time.Duration
	honoursContext bool
	abandoned      atomic.Int64
}

var _ squeeze.SharedStoreSizer = (*Store)(nil)

// Option configures a Store in New.
type Option func(*Store) error

// WithPrefix sets the prefix of every key the Store reads and writes
// (default DefaultPrefix), so that several fleets, or squeeze and other
// programs, share one database without meeting. It must not be empty: use
// a prefix of your own, such as "myapp:squeeze:".
func WithPrefix(prefix string) Option {
	return func(s *Store) error {
		if prefix == "" {
			return errors.New(`WithPrefix(""): the prefix must not be empty; squeeze's keys would mix with the database's other keys`)
		}
		if strings.ContainsAny(prefix, "{}") {
			// A hash tag would put every key in one Cluster slot.
			return fmt.Errorf("WithPrefix(%q): the prefix must not hold { or }, which would put every key in one Redis Cluster slot", prefix)
		}
		s.prefix = prefix
		return nil
	}
}

// WithLifetime sets how long an entry lives when the caller asks for the
// store's default lifetime, 0 (default DefaultLifetime). A lifetime the
// caller gives is used as it is. It must be at least a second.
func WithLifetime(d time.Duration) Option {
	return func(s *Store) error {
		if d < time.Second {
			return fmt.Errorf("WithLifetime(%v): the lifetime must be at least 1s", d)
		}
		s.lifetime = d
		return nil
	}
}

// WithTimeout sets the longest any call waits (default DefaultTimeout); a
// caller's earlier deadline ends it sooner. It must be positive and at most
// a minute.
func WithTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 || d > time.Minute {
			return fmt.Errorf("WithTimeout(%v): the timeout must be more than 0 and at most 1m", d)
		}
		s.timeout = d
		return nil
	}
}

// New returns a Store that keeps its entries in client's database. The
// client may be a *redis.Client, *redis.ClusterClient, *redis.Ring or a
// failover client; give it ContextTimeoutEnabled: true (see the package
// documentation). The Store does not close the client.
//
// New returns an error that names the option and the value when client is
// nil or an option is invalid.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore.New: the client is nil; pass a client from redis.NewClient, redis.NewClusterClient or redis.NewUniversalClient")
	}
	s := &Store{
		client:         client,
		prefix:         DefaultPrefix,
		lifetime:       DefaultLifetime,
		timeout:        DefaultTimeout,
		honoursContext: honoursContext(client),
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("redisstore.New: option %d is nil", i+1)
		}
		if err := opt(s); err != nil {
			return nil, fmt.Errorf("redisstore.New: %w", err)
		}
	}
	return s, nil
}

// MustNew is like [New] but panics with New's error, for a program that
// builds its Store once when it starts.
func MustNew(client redis.UniversalClient, opts ...Option) *Store {
	s, err := New(client, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// honoursContext reports whether client ends a command at its context's
// deadline; of an unknown client it assumes not.
func honoursContext(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Prefix returns the prefix of the Store's keys.
func (s *Store) Prefix() string { return s.prefix }

// Get returns the value under key and true; false when key holds none or a
// value longer than limit bytes, which is not transferred. A negative limit
// is an error.
func (s *Store) Get(ctx context.Context, key string, limit int) ([]byte, bool, error) {
	value, size, ok, err := s.GetOrSize(ctx, key, limit)
	return value, ok && size <= limit, err
}

// GetOrSize returns the value under key, its length and true; when the
// value is longer than limit bytes, a nil value, its length and true,
// without transferring it; false when key holds none. One round trip
// either way: a script takes the value's length and, only when it is
// within the limit, the value. A negative limit is an error.
func (s *Store) GetOrSize(ctx context.Context, key string, limit int) ([]byte, int, bool, error) {
	if limit < 0 {
		return nil, 0, false, fmt.Errorf("redisstore: Get(%q) with a negative limit %d", key, limit)
	}
	type answer struct {
		value []byte
		size  int
	}
	a, err := call(s, ctx, func(ctx context.Context) (answer, error) {
		res, err := getScript.Run(ctx, s.client, []string{s.prefix + key}, limit).Result()
		if err != nil {
			return answer{}, err
		}
		switch v := res.(type) {
		case string:
			return answer{[]byte(v), len(v)}, nil
		case int64:
			return answer{nil, int(v)}, nil // longer than limit: not transferred
		}
		return answer{}, &kindError{msg: fmt.Sprintf("redisstore: Get(%q): the script answered %T", key, res), kind: "bad_value"}
	})
	switch {
	case errors.Is(err, redis.Nil):
		return nil, 0, false, nil
	case err != nil:
		return nil, 0, false, err
	}
	return a.value, a.size, true, nil
}

// Set stores value under key for lifetime (0: the Store's lifetime),
// replacing any value it held. A negative lifetime is an error.
func (s *Store) Set(ctx context.Context, key string, value []byte, lifetime time.Duration) error {
	lifetime, err := s.lifetimeOf("Set", key, lifetime)
	if err != nil {
		return err
	}
	_, err = call(s, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.client.Set(ctx, s.prefix+key, value, lifetime).Err()
	})
	return err
}

// Claim stores value under key for lifetime (0: the Store's lifetime) only
// when key holds no value (SET NX), and reports whether it did. A negative
// lifetime is an error.
func (s *Store) Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) (bool, error) {
	lifetime, err := s.lifetimeOf("Claim", key, lifetime)
	if err != nil {
		return false, err
	}
	return call(s, ctx, func(ctx context.Context) (bool, error) {
		return s.client.SetNX(ctx, s.prefix+key, value, lifetime).Result()
	})
}

// lifetimeOf returns the lifetime to write: the Store's for 0, and at least
// a millisecond, Redis's unit, for anything shorter.
func (s *Store) lifetimeOf(op, key string, d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("redisstore: %s(%q) with a negative lifetime %v", op, key, d)
	case d == 0:
		return s.lifetime, nil
	case d < time.Millisecond:
		return time.Millisecond, nil
	}
	return d, nil
}

// call runs do with a context that ends at s's timeout, and returns by
// then even when the client does not honour the context: do's results are
// then dropped when it returns.
func call[T any](s *Store, ctx context.Context, do func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.honoursContext {
		v, err := do(ctx)
		return v, withKind(err)
	}
	if s.abandoned.Load() >= MaxAbandoned {
		return zero, ErrTooManyAbandoned
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := do(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, withKind(r.err)
	case <-ctx.Done():
		s.abandoned.Add(1)
		go func() {
			<-done
			s.abandoned.Add(-1)
		}()
		return zero, ctx.Err()
	}
}
