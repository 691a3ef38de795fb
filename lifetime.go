package squeeze

import (
	"context"
	"sync"
)

// This file holds the one owner of a Middleware's background work: every
// goroutine the package starts (the Cache's upgrade worker, the
// FileServer's best-level encodings, learned rounds and shares, the shared
// store's writes and refreshes) is started by lifetime.goWork, and the
// work a library runs on a goroutine of its own (singleflight's fetch of
// a shared-store value) enters it with lifetime.enter. The context they
// get is the one every background call to the shared store is made
// within, so that Middleware.Close cancels the calls in flight and then
// waits for everything to return.
//
// The wait is a sync.WaitGroup and the cancellation a context: what is
// left is refusing new work once Close has begun, which a mutex does, since
// WaitGroup.Add must not race with Wait when the count may be zero.
// golang.org/x/sync/errgroup has the same rule and adds nothing here: the
// work returns no error, and its context must end at Close, not at a
// goroutine's first failure.

// lifetime is a Middleware's background work. Its zero value is ready to
// use (the zero Middleware's), and it may be closed once or many times,
// concurrently with goWork and enter.
type lifetime struct {
	init   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// context returns the context of l's work, which ends when l is closed.
func (l *lifetime) context() context.Context {
	l.init.Do(func() { l.ctx, l.cancel = context.WithCancel(context.Background()) })
	return l.ctx
}

// goWork runs f on a goroutine of its own with l's context, unless l is
// closed; it reports whether it did.
func (l *lifetime) goWork(f func(ctx context.Context)) bool {
	ctx := l.context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Go(func() { f(ctx) })
	return true
}

// enter counts the caller, a goroutine l did not start, as l's work until
// it calls done, unless l is closed (ok false, nothing to call).
func (l *lifetime) enter() (ctx context.Context, done func(), ok bool) {
	ctx = l.context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, false
	}
	l.wg.Add(1)
	return ctx, l.wg.Done, true
}

// isClosed reports whether l has been closed: work that would start now
// is refused.
func (l *lifetime) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// close refuses new work, cancels l's context and waits for the work
// under way to return.
func (l *lifetime) close() {
	l.context()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
}
