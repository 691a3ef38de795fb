package squeeze_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A store's failures say what failed: each is counted with its kind, the
// observer receives the kind and the cause, and the log says each kind
// once a minute, with its cause.

// failingStore is a SharedStore whose every call fails with its error,
// or, without one, waits until its context ends.
type failingStore struct {
	mu  sync.Mutex
	err error
}

func newFailingStore(err error) *failingStore { return &failingStore{err: err} }

func (s *failingStore) set(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *failingStore) fail(ctx context.Context) error {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (s *failingStore) Get(ctx context.Context, _ string, _ int) ([]byte, bool, error) {
	return nil, false, s.fail(ctx)
}

func (s *failingStore) Set(ctx context.Context, _ string, _ []byte, _ time.Duration) error {
	return s.fail(ctx)
}

func (s *failingStore) Claim(ctx context.Context, _ string, _ []byte, _ time.Duration) (bool, error) {
	return false, s.fail(ctx)
}

// kindErr is a store's error that tells squeeze its kind.
type kindErr struct{ msg, kind string }

func (e kindErr) Error() string           { return e.msg }
func (e kindErr) SharedErrorKind() string { return e.kind }

func TestSharedStoreFailuresAreCountedAndLoggedByKind(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		kind  string
		err   error  // nil: the store hangs past the timeout
		cause string // in the log line
	}{
		{"timeout", nil, "context deadline exceeded"},
		{"timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, "i/o timeout"},
		{"refused", refused, "connection refused"},
		{"too_large", kindErr{"OOM command not allowed", "too_large"}, "OOM command not allowed"},
		{"bad_value", fmt.Errorf("get: %w", kindErr{"WRONGTYPE", "bad_value"}), "WRONGTYPE"},
		{"other", errors.New("NOAUTH Authentication required"), "NOAUTH"},
		{"other", kindErr{"a kind squeeze does not know", "sideways"}, "a kind squeeze does not know"},
	} {
		t.Run(tc.kind+"/"+tc.cause, func(t *testing.T) {
			var mu sync.Mutex
			var events []squeeze.SharedStoreInfo
			counters := &squeeze.Counters{}
			obs := counters.Observer()
			count := obs.SharedStore
			obs.SharedStore = func(e squeeze.SharedStoreInfo) {
				count(e)
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
			m := newMiddleware(t, squeeze.WithDictionaryMatch(fleetPattern),
				squeeze.WithSharedStore(newFailingStore(tc.err), squeeze.SharedTimeout(20*time.Millisecond)),
				squeeze.WithObserver(obs))
			logs := &logLines{}
			squeeze.SetSharedStoreLog(m, logs.logf)
			squeeze.SetSharedBreakerCooldown(m, time.Millisecond)
			h := m.Handler(scripts(map[string][]byte{"/js/app.v2.js": textBody(2, 8<<10)}))
			// Requests naming dictionaries no replica holds: each a read
			// of the store, which fails.
			const calls = 8
			for i := range calls {
				serveAt(h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(textBody(100+i, 4<<10)))
				time.Sleep(2 * time.Millisecond) // past the breaker's cooldown
			}
			mu.Lock()
			failed := 0
			for _, e := range events {
				if e.Result != squeeze.SharedError {
					if e.ErrorKind != "" || e.Err != nil {
						t.Errorf("a %v event carries the error %v (%v)", e.Result, e.ErrorKind, e.Err)
					}
					continue
				}
				failed++
				if e.ErrorKind != tc.kind || e.Err == nil || !strings.Contains(e.Err.Error(), tc.cause) {
					t.Errorf("an error event of kind %v, cause %v; want %v, %q", e.ErrorKind, e.Err, tc.kind, tc.cause)
				}
			}
			mu.Unlock()
			if failed < 2 {
				t.Fatalf("%d error events; want one per call the breaker let through, at least 2", failed)
			}
			var got struct {
				Shared struct {
					Errors int64            `json:"errors"`
					ByKind map[string]int64 `json:"errors_by_kind"`
				} `json:"shared_store"`
			}
			if err := json.Unmarshal([]byte(counters.String()), &got); err != nil {
				t.Fatal(err)
			}
			if got.Shared.ByKind[tc.kind] != int64(failed) || got.Shared.Errors != int64(failed) {
				t.Errorf("counters: errors %d, by kind %v; want %d of kind %v", got.Shared.Errors, got.Shared.ByKind, failed, tc.kind)
			}
			logs.mu.Lock()
			defer logs.mu.Unlock()
			if len(logs.lines) != 1 || !strings.Contains(logs.lines[0], tc.kind) || !strings.Contains(logs.lines[0], tc.cause) {
				t.Errorf("%d failures logged %q; want one line naming the kind %v and the cause %q", failed, logs.lines, tc.kind, tc.cause)
			}
		})
	}
}

// Failures of two kinds are logged once each: a flood of one kind does not
// hide the other.
func TestSharedStoreFailuresOfEachKindAreLogged(t *testing.T) {
	store := newFailingStore(kindErr{"malformed", "bad_value"})
	m := newMiddleware(t, squeeze.WithDictionaryMatch(fleetPattern), squeeze.WithSharedStore(store))
	logs := &logLines{}
	squeeze.SetSharedStoreLog(m, logs.logf)
	squeeze.SetSharedBreakerCooldown(m, time.Millisecond)
	h := m.Handler(scripts(map[string][]byte{"/js/app.v2.js": textBody(2, 8<<10)}))
	for i := range 20 {
		if i == 10 {
			store.set(kindErr{"OOM", "too_large"})
		}
		serveAt(h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(textBody(100+i, 4<<10)))
		time.Sleep(2 * time.Millisecond)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.lines) != 2 || !strings.Contains(logs.lines[0], "bad_value") || !strings.Contains(logs.lines[1], "too_large") {
		t.Errorf("logged %q; want one bad_value line, then one too_large line", logs.lines)
	}
}
