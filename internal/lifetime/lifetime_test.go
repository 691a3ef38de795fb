package lifetime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/lifetime"
)

func TestLifetime(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, l *lifetime.Lifetime)
	}{
		{"Close cancels the work's context and waits for it", func(t *testing.T, l *lifetime.Lifetime) {
			var ended atomic.Bool
			started := make(chan struct{})
			if !l.Go(func(ctx context.Context) {
				close(started)
				<-ctx.Done()
				time.Sleep(10 * time.Millisecond) // Close waits for this too
				ended.Store(true)
			}) {
				t.Fatal("Go refused work before Close")
			}
			<-started
			l.Close()
			if !ended.Load() {
				t.Error("Close returned before the work")
			}
		}},
		{"Enter counts a goroutine it did not start", func(t *testing.T, l *lifetime.Lifetime) {
			ctx, done, ok := l.Enter()
			if !ok {
				t.Fatal("Enter refused before Close")
			}
			closed := make(chan struct{})
			go func() { l.Close(); close(closed) }()
			<-ctx.Done()
			select {
			case <-closed:
				t.Fatal("Close returned before done")
			case <-time.After(10 * time.Millisecond):
			}
			done()
			<-closed
		}},
		{"after Close nothing starts", func(t *testing.T, l *lifetime.Lifetime) {
			l.Close()
			l.Close() // again
			if l.Go(func(context.Context) { t.Error("work ran after Close") }) {
				t.Error("Go took work after Close")
			}
			if _, _, ok := l.Enter(); ok {
				t.Error("Enter took work after Close")
			}
			if !l.Closed() || l.Context().Err() == nil {
				t.Error("a closed lifetime says it is open")
			}
		}},
		{"Close concurrent with Go", func(t *testing.T, l *lifetime.Lifetime) {
			var running atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 100 {
						l.Go(func(ctx context.Context) {
							running.Add(1)
							<-ctx.Done()
							running.Add(-1)
						})
					}
				})
			}
			wg.Go(l.Close)
			wg.Go(l.Close)
			wg.Wait()
			l.Close()
			if n := running.Load(); n != 0 {
				t.Errorf("%d goroutines run after Close", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l lifetime.Lifetime // the zero value is ready
			tc.run(t, &l)
		})
	}
}
