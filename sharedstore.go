package squeeze

import (
	"context"
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
