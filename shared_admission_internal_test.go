package squeeze

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

// A candidate is due once it is public and has earned its write, and
// only once, unless its write is given back.
func TestSharedCandidateIsDueOnceEarnedAndPublic(t *testing.T) {
	var c sharedCandidate
	c.served(defaultSharedAdmitAfter)
	c.earn()
	if c.start() {
		t.Fatal("due before it went out in a public response")
	}
	c.markPublic()
	if !c.start() || c.start() {
		t.Fatal("want due once")
	}
	c.abort()
	if !c.start() {
		t.Fatal("a write given back is due again")
	}
	var served sharedCandidate
	served.markPublic()
	for range defaultSharedAdmitAfter - 1 {
		served.served(defaultSharedAdmitAfter)
	}
	if served.start() {
		t.Fatalf("due after %d serves", defaultSharedAdmitAfter-1)
	}
	served.served(defaultSharedAdmitAfter)
	if !served.start() {
		t.Fatalf("not due after %d serves", defaultSharedAdmitAfter)
	}
	var taken sharedCandidate
	taken.markPublic()
	taken.earn()
	taken.taken()
	if taken.start() {
		t.Fatal("a value read from the store is written back")
	}
}
