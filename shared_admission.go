package squeeze

import (
	"fmt"
	"math"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds the admission of what a replica writes to its
// SharedStore (see WithSharedStore): what a client sends decides nothing
// the fleet stores. Two gates stand before every write:
//
//   - A value is a candidate only once it has earned it
//     (storeguard.Candidate): it is public (publicResponse) and was asked for by hash (a client
//     named a dictionary in Available-Dictionary, or the body it was sent
//     in answer to a request naming it), served SharedAdmitAfter times,
//     or sent at a URL whose dictionaries clients name
//     (dictStore.responseServed), or it is the operator's own (a
//     FileServer's file). A flood of distinct bodies, each served once at
//     a URL of its own, earns nothing.
//   - Every write, claims included, takes one write and its bytes from
//     the replica's write budget (SharedWriteBudget, storeguard.Guard.Admit):
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

// The defaults of SharedWriteBudget (60 writes and 16 MiB a minute) and
// SharedAdmitAfter (2) are storeguard's, which says why.

// maxSharedAdmitAfter is the most SharedAdmitAfter takes: the
// count lives in an int32, and a body sent that often is asked for by
// hash long before.
const maxSharedAdmitAfter = 1 << 20

// checkWriteBudget checks that the write budget of c takes the largest
// value c lets through: a budget that does not could never write it.
func checkWriteBudget(c *config) error {
	maxValue := c.sharedMaxValue
	if maxValue == 0 {
		maxValue = storeguard.DefaultMaxValue
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
