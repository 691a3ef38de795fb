// Package lifetime is the one owner of a squeeze Middleware's background
// work: every goroutine squeeze starts (the Cache's upgrade worker, the
// FileServer's best-level encodings, learned rounds and shares, the shared
// store's writes and refreshes) is started by [Lifetime.Go], and the work
// a library runs on a goroutine of its own (singleflight's fetch of a
// shared-store value, in internal/storeguard) enters it with
// [Lifetime.Enter]. The context they get is the one every background call
// to the shared store is made within, so that [Lifetime.Close] cancels
// the calls in flight and then waits for everything to return.
//
// The wait is a sync.WaitGroup and the cancellation a context: what is
// left is refusing new work once Close has begun, which a mutex does,
// since WaitGroup.Add must not race with Wait when the count may be zero.
// golang.org/x/sync/errgroup has the same rule and adds nothing here: the
// work returns no error, and its context must end at Close, not at a
// goroutine's first failure.
package lifetime

import (
	"context"
	"sync"
)

// Lifetime is the background work of one owner. Its zero value is ready
// to use, and it may be closed once or many times, concurrently with Go
// and Enter.
type Lifetime struct {
	init   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Context returns the context of l's work, which ends when l is closed.
func (l *Lifetime) Context() context.Context {
	l.init.Do(func() { l.ctx, l.cancel = context.WithCancel(context.Background()) })
	return l.ctx
}

// Go runs f on a goroutine of its own with l's context, unless l is
// closed; it reports whether it did.
func (l *Lifetime) Go(f func(ctx context.Context)) bool {
	ctx := l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Go(func() { f(ctx) })
	return true
}

// Enter counts the caller, a goroutine l did not start, as l's work until
// it calls done, unless l is closed (ok false, nothing to call).
func (l *Lifetime) Enter() (ctx context.Context, done func(), ok bool) {
	ctx = l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, false
	}
	l.wg.Add(1)
	return ctx, l.wg.Done, true
}

// Closed reports whether l has been closed: work that would start now is
// refused.
func (l *Lifetime) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close refuses new work, cancels l's context and waits for the work
// under way to return.
func (l *Lifetime) Close() {
	l.Context()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
}
