package squeeze

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// This file holds the admission of what a replica writes to its
// SharedStore (see WithSharedStore): what a client sends decides nothing
// the fleet stores. Two gates stand before every write:
//
//   - A value is a candidate only once it has earned it (sharedCandidate):
//     it is public (publicResponse) and was asked for by hash (a client
//     named a dictionary in Available-Dictionary, or the body it was sent
//     in answer to a request naming it), served SharedAdmitAfter times,
//     or sent at a URL whose dictionaries clients name
//     (dictStore.responseServed), or it is the operator's own (a
//     FileServer's file). A flood of distinct bodies, each served once at
//     a URL of its own, earns nothing.
//   - Every write, claims included, takes one write and its bytes from
//     the replica's write budget (writeBudget, SharedWriteBudget):
//     a client that does earn its bodies, asking for each by hash, still
//     makes the replica write no more than the budget, which a store sized
//     for it (Redis's maxmemory) holds without evicting what the fleet
//     uses. A write over the budget is refused and counted
//     (SharedRefused); what a candidate did not write it may write when
//     it earns again.
//
// A candidate's count lives in its own entry of a budgeted local store (a
// remembered dictionary, a Cache entry's hits): counting costs no memory
// of its own and leaves with the entry.

// Defaults of SharedWriteBudget: a minute's writes of one
// replica. A deploy of some dozens of bundles, each written once as a
// dictionary and in a few best-level encodings, is written by one replica
// within minutes and by a fleet sooner. A flood that earns every write
// makes a replica write no more than this a minute (up to 960 MiB an
// hour; 135 MB an hour measured with values of 34 KB, where the count
// binds): a store does not hold that for hours, and need not, since the
// replicas keep the keys they use fresh (defaultSharedRefreshEvery) and an LRU
// store evicts the rest. docs/reference.md says how to size it.
const (
	defaultSharedWrites     = 60
	defaultSharedWriteBytes = 16 << 20
)

// defaultSharedAdmitAfter is how many times a body is sent with
// Use-As-Dictionary before it is written to the store as a dictionary
// unasked, when SharedAdmitAfter is not given: a body sent once (one of a
// flood of query strings) is not.
const defaultSharedAdmitAfter = 2

// maxSharedAdmitAfter is the most SharedAdmitAfter takes: the
// count lives in an int32, and a body sent that often is asked for by
// hash long before.
const maxSharedAdmitAfter = 1 << 20

// writeBudget is a replica's budget of writes to its store: at most
// writes values and bytes bytes a minute, refilled continuously, a
// minute's worth available at once (token buckets of
// golang.org/x/time/rate). The mutex makes taking from the two buckets one
// step: a write takes from both or from neither.
type writeBudget struct {
	mu            sync.Mutex
	writes, bytes *rate.Limiter
}

// newWriteBudget returns a budget of writes values and bytes bytes a
// minute.
func newWriteBudget(writes int, bytes int64) *writeBudget {
	return &writeBudget{
		writes: rate.NewLimiter(rate.Limit(float64(writes)/60), writes),
		bytes:  rate.NewLimiter(rate.Limit(float64(bytes)/60), int(bytes)),
	}
}

// take takes one write of n bytes and reports true, or reports false,
// taking nothing, when the budget has no room for it now.
func (b *writeBudget) take(n int) bool {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writes.TokensAt(now) < 1 || b.bytes.TokensAt(now) < float64(n) {
		return false
	}
	return b.writes.AllowN(now, 1) && b.bytes.AllowN(now, n)
}

// admit takes a write of n bytes from s's budget, or reports the write
// refused (SharedRefused) and returns false.
func (s *shared) admit(n int) bool {
	if s.budget.take(n) {
		return true
	}
	s.report(SharedRefused, 0, 0, 0)
	return false
}

// sharedCandidate is what one value that may be written to the store has
// earned: whether it is public, how often it was served, whether a client
// asked for it by hash, whether it was written. The zero value has earned
// nothing. Its methods are safe for concurrent use.
type sharedCandidate struct {
	serves atomic.Int32
	flags  atomic.Uint32
}

const (
	candidatePublic  = 1 << iota // it went out in a public response
	candidateEarned              // asked for by hash, served enough or the operator's
	candidateWritten             // written, a write under way, or read from the store
)

// markPublic records that the value went out in a public response.
func (c *sharedCandidate) markPublic() { c.set(candidatePublic) }

// earn records that the value has earned its place in the store: a client
// asked for it by hash, or it is the operator's own.
func (c *sharedCandidate) earn() { c.set(candidateEarned) }

// served counts a serve; the after-th earns. Once earned, serves are not
// counted: a popular dictionary's serves write no shared word.
func (c *sharedCandidate) served(after int) {
	if c.flags.Load()&candidateEarned == 0 && c.serves.Add(1) >= int32(after) {
		c.earn()
	}
}

// set sets flag unless it is set: a read where it is, so that the
// dictionary of every delta does not take its cache line on each request.
func (c *sharedCandidate) set(flag uint32) {
	if c.flags.Load()&flag == 0 {
		c.flags.Or(flag)
	}
}

// start reports whether the value is due to be written (public, earned,
// not written) and, if so, marks it written: the caller writes it, or
// calls abort.
func (c *sharedCandidate) start() bool {
	for {
		f := c.flags.Load()
		if f&(candidatePublic|candidateEarned) != candidatePublic|candidateEarned || f&candidateWritten != 0 {
			return false
		}
		if c.flags.CompareAndSwap(f, f|candidateWritten) {
			return true
		}
	}
}

// inStore reports whether the value was written, is being written or was
// read from the store.
func (c *sharedCandidate) inStore() bool { return c.flags.Load()&candidateWritten != 0 }

// taken records that the value came from the store: it is not written
// back.
func (c *sharedCandidate) taken() { c.set(candidateWritten) }

// abort gives back a start whose write was not made (the budget refused
// it): the value may be written when it earns again.
func (c *sharedCandidate) abort() { c.flags.And(^uint32(candidateWritten)) }

// checkWriteBudget checks that the write budget of c takes the largest
// value c lets through: a budget that does not could never write it.
func checkWriteBudget(c *config) error {
	maxValue := c.sharedMaxValue
	if maxValue == 0 {
		maxValue = defaultSharedMaxValue
	}
	if c.sharedWriteBytes > 0 && c.sharedWriteBytes < int64(maxValue) {
		return fmt.Errorf("squeeze: SharedWriteBudget(%d, %d): bytes must be at least the largest value written, %d (SharedMaxValue): lower that, or raise the budget",
			c.sharedWrites, c.sharedWriteBytes, maxValue)
	}
	return nil
}

// SharedWriteBudget sets how much one Middleware writes to the store per
// minute: at most writes values (claims included) and bytes bytes, a
// minute's worth at once. A write beyond it is not made ([SharedRefused]);
// a dictionary not written may be written later, when a client asks for it
// again. The defaults are 60 writes and 16 MiB; writes must be positive and
// bytes at most 2 GiB and at least the largest value ([SharedMaxValue]), so
// that every value may be written: New reports an error otherwise.
//
// Size the store for the fleet's budget: replicas times bytes a minute,
// for as long as values live there, with room for what the fleet reads,
// so that an eviction (Redis's maxmemory-policy allkeys-lru) never takes a
// dictionary in use.
func SharedWriteBudget(writes int, bytes int64) SharedOption {
	return func(c *config) error {
		if writes <= 0 || bytes <= 0 || bytes > math.MaxInt32 {
			return fmt.Errorf("squeeze: SharedWriteBudget(%d, %d): writes and bytes per minute must be positive, bytes at most %d (2 GiB)", writes, bytes, math.MaxInt32)
		}
		c.sharedWrites, c.sharedWriteBytes = writes, bytes
		return nil
	}
}

// SharedAdmitAfter sets how many times a body is sent with
// Use-As-Dictionary ([WithDictionaryMatch]) before it is written to the
// store unasked; a body a client names in Available-Dictionary is written
// at once (either way only if it is public and within [SharedWriteBudget]).
// The default, 2, keeps a flood of distinct bodies, each sent once, out of
// the store. 1 writes every body once sent, for a fleet
// whose every response is a dictionary of its own (a feed sent as a delta
// against the one before, through replicas without stickiness): then what
// clients ask for decides what the fleet writes, up to the write budget.
// n must be 1 to 1048576.
func SharedAdmitAfter(n int) SharedOption {
	return func(c *config) error {
		if n < 1 || n > maxSharedAdmitAfter {
			return fmt.Errorf("squeeze: SharedAdmitAfter(%d): the number of times sent must be 1 to %d", n, maxSharedAdmitAfter)
		}
		c.sharedAdmitAfter = n
		return nil
	}
}
