package storeguard

import (
	"context"
	"time"
)

// Store is the key-value store the replicas of a fleet share: the method
// set of squeeze.SharedStore, whose documentation states the contract.
type Store interface {
	// Get returns the value under key and true, or false when key holds
	// none or its value is longer than limit bytes.
	Get(ctx context.Context, key string, limit int) (value []byte, ok bool, err error)
	// Set stores value under key for lifetime (0: the store's default).
	Set(ctx context.Context, key string, value []byte, lifetime time.Duration) error
	// Claim stores value under key for lifetime only if key holds none,
	// and reports whether it did.
	Claim(ctx context.Context, key string, value []byte, lifetime time.Duration) (bool, error)
}

// Sizer is a [Store] that tells the length of a value too long for a
// call's limit without transferring it: the method set of
// squeeze.SharedStoreSizer. A Guard reads from one in two steps (see
// [Guard.Lookup]).
type Sizer interface {
	Store
	// GetOrSize returns the value under key, its length and true when it
	// is at most limit bytes long; a nil value, its length and true when
	// it is longer; false when key holds none.
	GetOrSize(ctx context.Context, key string, limit int) (value []byte, size int, ok bool, err error)
}
