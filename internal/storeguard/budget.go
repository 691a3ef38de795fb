package storeguard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the write budget ([Config]'s Writes and WriteBytes): a
// minute's writes of one replica. A deploy of some dozens of bundles, each
// written once as a dictionary and in a few best-level encodings, is
// written by one replica within minutes and by a fleet sooner. A flood
// that earns every write makes a replica write no more than this a minute
// (up to 960 MiB an hour; 135 MB an hour measured with values of 34 KB,
// where the count binds): a store does not hold that for hours, and need
// not, since the replicas keep the keys they use fresh
// (DefaultRefreshEvery) and an LRU store evicts the rest.
// docs/reference.md says how to size it.
const (
	DefaultWrites     = 60
	DefaultWriteBytes = 16 << 20
)

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

// Admit takes a write of n bytes from the write budget, or reports the
// write [Refused] and returns false. [Guard.SetAsync] and [Guard.Claim]
// admit their own writes; a caller of [Guard.Set] admits it first.
func (g *Guard) Admit(n int) bool {
	if g.budget.take(n) {
		return true
	}
	g.report(Refused, 0, 0, 0)
	return false
}
