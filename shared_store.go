package squeeze

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SharedStore is a key-value store that the replicas of a fleet share, such
// as Redis or Valkey through the module
// github.com/squeezehttp/squeeze/redisstore. Through it, a replica serves a
// delta against a dictionary another replica remembered, and takes a body's
// best-level encoding that another replica already made.
//
// squeeze never trusts what a SharedStore returns: a dictionary is checked
// against the SHA-256 that names it and an encoding against the hash of the
// plain body it claims to encode, so a lost, stale, corrupted or hostile
// store costs a fallback and a counter, never a wrong byte. Keys are short
// ASCII strings that squeeze builds; values are opaque bytes.
//
// Each call gets a context that ends at the per-call deadline; an
// implementation returns promptly when it ends, with the context's error or
// its own. Implementations must be safe for concurrent use.
type SharedStore interface {
	// Get returns the value stored under key and true, or false when key
	// holds none or its value is longer than limit bytes: a value over the
	// limit is not transferred at all. An error means the store could not
	// answer.
	Get(ctx context.Context, key string, limit int) (value []byte, ok bool, err error)

	// Set stores value under key for lifetime, replacing any value it held;
	// a lifetime of 0 means the store's own default.
	Set(ctx context.Context, key string, value []byte, lifetime time.Duration) error

	// Claim stores value under key for lifetime only if key holds no value,
	// and reports whether it did: one replica of the fleet wins a claim and
	// does the work the others then take from the store. A lifetime of 0
	// means the store's own default.
	Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) (bool, error)
}

// SharedStoreSizer is a [SharedStore] that can tell the length of a value
// too long for a call's limit without transferring it. squeeze reads from
// such a store in two steps: a first call with a small limit brings a short
// value whole, or tells a longer one's length; only then does squeeze set
// aside that many bytes of its in-flight budget and ask for the value. So a
// key that holds nothing, the usual answer to a request naming a hash the
// fleet never stored, holds little of the budget while it is asked, and
// reads of real values are not turned away behind it. A SharedStore without
// this method is read in one call that holds the whole size limit.
// github.com/squeezehttp/squeeze/redisstore implements it.
type SharedStoreSizer interface {
	SharedStore

	// GetOrSize returns the value stored under key, its length and true
	// when it is at most limit bytes long; a nil value, its length (more
	// than limit) and true when it is longer, without transferring it;
	// and false when key holds none. An error means the store could not
	// answer.
	GetOrSize(ctx context.Context, key string, limit int) (value []byte, size int, ok bool, err error)
}

// Defaults of the SharedOptions of the same names.
const (
	// defaultSharedTimeout is the per-call deadline of a SharedStore when
	// SharedTimeout is not given: a Redis GET of a value of some hundreds
	// of kilobytes on the same network takes well under a millisecond, one
	// of defaultSharedMaxValue a few milliseconds (see
	// docs/perf-history.md), so this leaves room for a loaded store while
	// bounding what a store that has gone away costs a request.
	defaultSharedTimeout = 25 * time.Millisecond

	// defaultSharedMaxValue is the largest value, in bytes, written to or
	// read from a SharedStore when SharedMaxValue is not given: 4 MiB, more
	// than a large script bundle.
	defaultSharedMaxValue = 4 << 20
)

// Breaker settings of the shared store: after sharedBreakerFailures calls
// in a row fail (an error or a timeout; a value that fails verification is
// an answer, counted apart),
// no call is made for sharedBreakerCooldown; then one call probes the
// store, and closes the breaker if it succeeds or opens it again if not.
const (
	sharedBreakerFailures = 5
	sharedBreakerCooldown = 2 * time.Second
)

// maxSharedTimeout is the longest per-call timeout SharedTimeout
// takes: the wait is added to a request's latency.
const maxSharedTimeout = 10 * time.Second

// WithSharedStore shares what squeeze learns with the other replicas of a
// fleet through s, such as Redis through the module
// github.com/squeezehttp/squeeze/redisstore:
//
//   - A body remembered as a dictionary ([WithDictionaryMatch]), and a
//     [Middleware.FileServer] file used as one, is written to s under its
//     SHA-256, with the pattern it was stored under, once it has earned
//     it: a body sent in a public response that a client named in
//     Available-Dictionary or that was sent twice
//     ([SharedAdmitAfter]), one sent in a public response to a request
//     naming those very bytes or to a URL where clients named a
//     dictionary this replica sent (a resource that changes, written at
//     its first send), a file once sent in a public response. A replica
//     that uses a dictionary the store holds keeps its key fresh (at
//     most every 2 seconds), so a store that evicts the least recently
//     used keeps it under a flood of writes. A replica asked for a
//     delta against a dictionary it does not hold fetches it from s,
//     checks its SHA-256 and that its pattern is one of this Middleware's
//     own WithDictionaryMatch patterns matching the request's path, keeps it
//     in its own dictionary store (counted against
//     [WithDictionaryStoreSize]) and sends the delta. So a client gets
//     deltas from every replica, whichever remembered its dictionary, and
//     across a deploy that replaced them all.
//   - A best-level encoding that a [Cache]'s upgrade or a FileServer's
//     makes, of a plain coding or a delta, is written to s under the
//     SHA-256 of the plain body, the coding, the level and the
//     dictionary's SHA-256, once it went out in a public response (and,
//     for a Cache's entry, after three hits). Before it upgrades, a
//     replica looks there; it
//     keeps what it finds only after decoding it once and checking the
//     SHA-256 of the result. On a miss it claims the work, so that each
//     encoding is made once per fleet; a claim its owner never fulfils
//     expires after a minute.
//
// Nothing private is written: a response that is private, no-store, sets
// a cookie or answers Authorization or Cookie without Cache-Control:
// public is no dictionary and its encodings stay local. Each Middleware
// writes at most [SharedWriteBudget] a minute, claims included.
//
// Local stores stay in front: s is asked only on a local miss, at most
// once at a time per key per Middleware, and every call ends at the per-call
// timeout ([SharedTimeout]). Writes are made in the background and
// never delay a response. After 5 calls in a row fail (an error or a
// timeout), s is not asked for 2 seconds; then one call probes it.
// Meanwhile, responses are what they would be without s: local deltas or
// the plain codings. A value that fails verification is never served nor
// kept, and its key is not asked for again for a minute; it is counted
// (SharedRejected), not charged to the breaker, so neither a bad value nor
// a request naming a good one on a path its pattern does not match stops
// the sharing. A key the store lacks is not asked for again for a second.
// At most 16 reads are in flight, only 4 of them for keys not asked for
// before, so that requests naming random hashes cost few reads and leave
// room for a client that names its dictionary again. Values over
// [SharedMaxValue] are neither written nor read; values being
// read or written hold at most 8 times that limit at once, a read holding
// the limit, or with a [SharedStoreSizer] the value's own length, and a
// call that would go beyond it is skipped. The
// observer ([WithObserver], [Counters]) receives a [SharedStoreEvent] for
// each call and breaker change.
//
// opts tune the sharing. A nil s is an error.
func WithSharedStore(s SharedStore, opts ...SharedOption) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("squeeze: WithSharedStore(nil): the store is nil; leave the option out to share nothing, " +
				"or pass a store such as redisstore.MustNew(redis.NewClient(...))")
		}
		c.shared = s
		for i, opt := range opts {
			if opt == nil {
				return fmt.Errorf("squeeze: WithSharedStore: option %d of %d is nil", i+1, len(opts))
			}
			if err := opt(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// SharedOption tunes the sharing of [WithSharedStore].
type SharedOption func(*config) error

// SharedTimeout sets the deadline of each call to the store: what a
// request waits at most for the store when its own replica lacks a
// dictionary, and what a store that hangs costs one request before the
// breaker opens. The default is 25 ms; d must be positive and at most 10
// seconds.
func SharedTimeout(d time.Duration) SharedOption {
	return func(c *config) error {
		if d <= 0 || d > maxSharedTimeout {
			return fmt.Errorf("squeeze: SharedTimeout(%v): timeout must be positive and at most %v", d, maxSharedTimeout)
		}
		c.sharedTimeout = d
		return nil
	}
}

// SharedMaxValue sets the largest value, in bytes, written to or read from
// the store; a dictionary larger than this (less a few bytes of framing) is
// kept only locally. The default is 4 MiB; n must be at least 1 KiB and at
// most 512 MiB, Redis's own limit.
func SharedMaxValue(n int) SharedOption {
	return func(c *config) error {
		if n < 1<<10 || n > 512<<20 {
			return fmt.Errorf("squeeze: SharedMaxValue(%d): size must be %d to %d bytes (1 KiB to 512 MiB)", n, 1<<10, 512<<20)
		}
		c.sharedMaxValue = n
		return nil
	}
}
