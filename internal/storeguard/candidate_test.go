package storeguard

import "testing"

// A candidate is due once it is public and has earned its write, and
// only once, unless its write is given back; one read from the store is
// never due.
func TestCandidateIsDueOnceEarnedAndPublic(t *testing.T) {
	const after = DefaultAdmitAfter
	for _, tc := range []struct {
		name  string
		steps func(c *Candidate)
		want  []bool // Start, called in turn after steps
	}{
		{"earned, not public", func(c *Candidate) { c.Served(after); c.Earn() }, []bool{false}},
		{"earned and public", func(c *Candidate) { c.Earn(); c.MarkPublic() }, []bool{true, false}},
		{"given back", func(c *Candidate) { c.Earn(); c.MarkPublic(); c.Start(); c.Abort() }, []bool{true, false}},
		{"served one time short", func(c *Candidate) {
			c.MarkPublic()
			for range after - 1 {
				c.Served(after)
			}
		}, []bool{false}},
		{"served enough", func(c *Candidate) {
			c.MarkPublic()
			for range after {
				c.Served(after)
			}
		}, []bool{true, false}},
		{"read from the store", func(c *Candidate) { c.MarkPublic(); c.Earn(); c.Taken() }, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Candidate
			tc.steps(&c)
			for i, want := range tc.want {
				if got := c.Start(); got != want {
					t.Fatalf("Start %d = %v, want %v", i+1, got, want)
				}
				if want && !c.InStore() {
					t.Fatal("a candidate started is not in the store")
				}
			}
		})
	}
}
