package storeguard

import (
	"fmt"
	"testing"
	"time"
)

// A key is remembered for the memory's lifetime and no longer, forgotten
// when told, and a flood of keys beyond the budget pushes out the oldest
// only.
func TestRecentKeysRememberWithinLifetimeAndBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		steps    func(r *RecentKeys)
		key      string
		want     bool
	}{
		{"noted", time.Hour, func(r *RecentKeys) { r.Note("a") }, "a", true},
		{"never noted", time.Hour, func(r *RecentKeys) { r.Note("a") }, "b", false},
		{"past its lifetime", time.Nanosecond, func(r *RecentKeys) { r.Note("a"); time.Sleep(time.Millisecond) }, "a", false},
		{"forgotten", time.Hour, func(r *RecentKeys) { r.Note("a"); r.Forget("a") }, "a", false},
		{"pushed out by a flood", time.Hour, func(r *RecentKeys) {
			r.Note("a")
			for i := range 1000 {
				r.Note(fmt.Sprint("flood", i))
			}
		}, "a", false},
		{"newest of a flood kept", time.Hour, func(r *RecentKeys) {
			for i := range 1000 {
				r.Note(fmt.Sprint("flood", i))
			}
		}, "flood999", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecentKeys(16*(recentKeyBytes+8), tc.lifetime)
			tc.steps(r)
			if got := r.Has(tc.key); got != tc.want {
				t.Errorf("Has(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
	r := NewRecentKeys(1<<10, time.Hour)
	r.Note("k")
	if !r.Forget("k") || r.Forget("k") {
		t.Error("Forget does not report once that the key was remembered")
	}
}
