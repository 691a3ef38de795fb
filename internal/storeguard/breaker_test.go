package storeguard

import (
	"testing"
	"time"
)

// One probe at a time goes through an open breaker once its cooldown has
// passed.
func TestBreakerLetsOneProbeThrough(t *testing.T) {
	b := breaker{report: func(Result, int64, int64, time.Duration) {}, cooldown: time.Millisecond}
	for range breakerFailures {
		b.failure()
	}
	if b.allow() {
		t.Fatal("open breaker allowed a call before its cooldown")
	}
	time.Sleep(2 * time.Millisecond)
	if !b.allow() {
		t.Fatal("no probe after the cooldown")
	}
	if b.allow() {
		t.Fatal("a second call while the probe is in flight")
	}
	b.failure()
	if b.allow() {
		t.Fatal("a failed probe did not reopen the breaker")
	}
	time.Sleep(2 * time.Millisecond)
	if !b.allow() {
		t.Fatal("no probe after the second cooldown")
	}
	b.success()
	for range 2 {
		if !b.allow() {
			t.Fatal("a successful probe did not close the breaker")
		}
	}
}
