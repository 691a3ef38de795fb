package storeguard

import "sync/atomic"

// DefaultAdmitAfter is how many times a value is served before it is
// written to the store unasked ([Config]'s AdmitAfter): a body sent once
// (one of a flood of query strings) is not.
const DefaultAdmitAfter = 2

// Candidate is what one value that may be written to the store has
// earned: whether it is public, how often it was served, whether a client
// asked for it by hash, whether it was written. A candidate's count lives
// in its own entry of a budgeted local store (a remembered dictionary, a
// cache entry's hits): counting costs no memory of its own and leaves
// with the entry. The zero value has earned nothing. Its methods are safe
// for concurrent use.
type Candidate struct {
	serves atomic.Int32
	flags  atomic.Uint32
}

const (
	candidatePublic  = 1 << iota // it went out in a public response
	candidateEarned              // asked for by hash, served enough or the operator's
	candidateWritten             // written, a write under way, or read from the store
)

// MarkPublic records that the value went out in a public response.
func (c *Candidate) MarkPublic() { c.set(candidatePublic) }

// Earn records that the value has earned its place in the store: a client
// asked for it by hash, or it is the operator's own.
func (c *Candidate) Earn() { c.set(candidateEarned) }

// Served counts a serve; the after-th earns. Once earned, serves are not
// counted: a popular value's serves write no shared word.
func (c *Candidate) Served(after int) {
	if c.flags.Load()&candidateEarned == 0 && c.serves.Add(1) >= int32(after) {
		c.Earn()
	}
}

// set sets flag unless it is set: a read where it is, so that the
// dictionary of every delta does not take its cache line on each request.
func (c *Candidate) set(flag uint32) {
	if c.flags.Load()&flag == 0 {
		c.flags.Or(flag)
	}
}

// Start reports whether the value is due to be written (public, earned,
// not written) and, if so, marks it written: the caller writes it, or
// calls Abort.
func (c *Candidate) Start() bool {
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

// InStore reports whether the value was written, is being written or was
// read from the store.
func (c *Candidate) InStore() bool { return c.flags.Load()&candidateWritten != 0 }

// Taken records that the value came from the store: it is not written
// back.
func (c *Candidate) Taken() { c.set(candidateWritten) }

// Abort gives back a Start whose write was not made (the budget refused
// it): the value may be written when it earns again.
func (c *Candidate) Abort() { c.flags.And(^uint32(candidateWritten)) }
