package testtool

import "testing"

func TestLeastWithinMeasuresAgainOnlyWhileOverBound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		runs      []int64
		want      int64
		wantCalls int
	}{
		{"within at once", []int64{5, 1, 1}, 5, 1},
		{"within at the second", []int64{12, 9, 1}, 9, 2},
		{"over three times: the least", []int64{14, 12, 13, 1}, 12, 3},
	} {
		calls := 0
		got := LeastWithin(10, func() int64 { calls++; return tc.runs[calls-1] })
		if got != tc.want || calls != tc.wantCalls {
			t.Errorf("%s: %d after %d measurements, want %d after %d", tc.name, got, calls, tc.want, tc.wantCalls)
		}
	}
}

func TestAllocatedByCountsWhatFAllocates(t *testing.T) {
	var keep []byte
	if n := AllocatedBy(func() { keep = make([]byte, 1<<20) }); n < 1<<20 {
		t.Errorf("AllocatedBy a 1 MiB slice: %d bytes", n)
	}
	_ = keep
}
