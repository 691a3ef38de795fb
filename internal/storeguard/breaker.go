package storeguard

import (
	"sync"
	"time"
)

// Breaker settings: after breakerFailures calls in a row fail (an error or
// a timeout; a value that fails verification is an answer, counted
// apart), no call is made for breakerCooldown; then one call probes the
// store, and closes the breaker if it succeeds or opens it again if not.
const (
	breakerFailures = 5
	breakerCooldown = 2 * time.Second
)

// breaker stops calls to a store that keeps failing (see
// breakerFailures): closed, it lets every call through; open, none until
// the cooldown has passed; then one probe, whose outcome closes or
// reopens it. Its mutex guards a few fields and is never held across a
// call.
type breaker struct {
	report   func(r Result, in, out int64, elapsed time.Duration)
	cooldown time.Duration // breakerCooldown; shorter in tests

	mu       sync.Mutex
	failures int       // in a row
	open     bool      // open or probing
	until    time.Time // open: no call before this
	probing  bool      // a probe is in flight
}

// blocked reports whether the breaker is open and no probe is due: a
// cheap check before a call is prepared.
func (b *breaker) blocked() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open && (b.probing || time.Now().Before(b.until))
}

// allow reports whether a call may be made now. When the cooldown of an
// open breaker has passed, it lets one call through as the probe.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true
	}
	if b.probing || time.Now().Before(b.until) {
		return false
	}
	b.probing = true
	return true
}

// cancel gives back a probe allowed but not made.
func (b *breaker) cancel() {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// success records a call that the store answered.
func (b *breaker) success() {
	b.mu.Lock()
	wasOpen := b.open
	b.failures, b.open, b.probing = 0, false, false
	b.mu.Unlock()
	if wasOpen {
		b.report(BreakerClosed, 0, 0, 0)
	}
}

// failure records a call that failed; it opens the breaker after
// breakerFailures in a row, or at once when the call was the probe.
func (b *breaker) failure() {
	b.mu.Lock()
	b.failures++
	opens := b.failures >= breakerFailures && (!b.open || b.probing)
	if opens {
		b.until = time.Now().Add(b.cooldown)
		b.probing = false
	}
	wasOpen := b.open
	b.open = b.open || opens
	b.mu.Unlock()
	if opens && !wasOpen {
		b.report(BreakerOpened, 0, 0, 0)
	}
}

// setCooldown sets the cooldown, and moves the end of an open breaker's
// current one to d from now.
func (b *breaker) setCooldown(d time.Duration) {
	b.mu.Lock()
	b.cooldown = d
	if b.open {
		b.until = time.Now().Add(d)
	}
	b.mu.Unlock()
}
