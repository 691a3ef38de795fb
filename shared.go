package squeeze

import "github.com/squeezehttp/squeeze/internal/storeguard"

// This file ties a Middleware to its SharedStore (see WithSharedStore):
// every call goes through a storeguard.Guard, which bounds it by the
// per-call timeout, skips it while the breaker is open or while the
// values in flight fill their budget, keeps values over the size limit
// out both ways, lets one fetch per key be in flight, has what it reads
// verified before anyone uses it, takes every write from the write budget
// and reports each outcome, here to the observer's SharedStore hook. The
// guard knows no HTTP: what a value must be is checked by the use
// function of its caller here (shared_dict.go for dictionaries,
// shared_learned.go for a learned route's, shared_encodings.go for
// encodings), and what a request decides (whether a verified dictionary's
// pattern matches its path) by the caller after the read, never inside
// it, since a read's result is shared by every caller of its key.

// newShared returns the guard of c's store, reporting to observe (nil for
// no observer), or nil without a store.
func newShared(c *config, observe func(SharedStoreInfo)) *storeguard.Guard {
	if c.shared == nil {
		return nil
	}
	sc := storeguard.Config{
		Timeout:    c.sharedTimeout,
		MaxValue:   c.sharedMaxValue,
		Writes:     c.sharedWrites,
		WriteBytes: c.sharedWriteBytes,
		AdmitAfter: c.sharedAdmitAfter,
	}
	if observe != nil {
		sc.Observe = func(i storeguard.Info) {
			observe(SharedStoreInfo{Result: SharedResult(i.Result), Read: i.Read, Written: i.Written,
				ErrorKind: i.Kind.String(), Err: i.Err, Elapsed: i.Elapsed})
		}
	}
	return storeguard.New(c.shared, sc)
}
