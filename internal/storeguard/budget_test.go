package storeguard

import "testing"

// A write takes one write and its bytes from the budget, or nothing: a
// write refused for its bytes leaves the write count alone, and one
// refused for the count leaves the bytes.
func TestWriteBudgetTakesBothOrNeither(t *testing.T) {
	b := newWriteBudget(2, 100)
	for i, step := range []struct {
		n    int
		want bool
	}{
		{60, true},  // 1 write, 40 bytes left
		{60, false}, // over the bytes: nothing taken
		{40, true},  // the second write, the last bytes
		{0, false},  // no write left
	} {
		if got := b.take(step.n); got != step.want {
			t.Fatalf("step %d: take(%d) = %v, want %v", i, step.n, got, step.want)
		}
	}
}

// The budget a Guard is built with bounds every write it makes, and a
// write over it is reported Refused; the bytes default to at least the
// size limit, so that the largest value may always be written. Each write
// refused would take the budget seconds to refill, so that a slow run
// (-race) does not see it refilled.
func TestGuardWritesWithinItsBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      Config
		values []int // lengths written, in order
		want   []bool
	}{
		{"count binds", Config{Writes: 2, WriteBytes: 1 << 20}, []int{1, 1, 1}, []bool{true, true, false}},
		{"bytes bind", Config{Writes: 10, WriteBytes: 2 << 10, MaxValue: 2 << 10}, []int{1 << 10, 1 << 10, 1 << 10}, []bool{true, true, false}},
		{"bytes default to the size limit", Config{Writes: 10, MaxValue: 32 << 20}, []int{32 << 20, 1 << 20}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused int
			g := New(&claimStore{values: map[string][]byte{}}, Config{
				Writes: tc.c.Writes, WriteBytes: tc.c.WriteBytes, MaxValue: tc.c.MaxValue,
				Observe: func(i Info) {
					if i.Result == Refused {
						refused++
					}
				},
			})
			wantRefused := 0
			for i, n := range tc.values {
				if got := g.Admit(n); got != tc.want[i] {
					t.Fatalf("write %d of %d bytes: admitted %v, want %v", i, n, got, tc.want[i])
				}
				if !tc.want[i] {
					wantRefused++
				}
			}
			if refused != wantRefused {
				t.Errorf("%d writes reported refused, want %d", refused, wantRefused)
			}
		})
	}
}
