package train_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/squeezehttp/squeeze/internal/train"
)

// distinct returns n samples of size bytes, each its own.
func distinct(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte(fmt.Sprintf("%08d", i)), size/8)
	}
	return out
}

// HoldOut never trains on a sample it holds out, holds out every fourth,
// and keeps the newest samples to train on that fit the memory.
func TestHoldOut(t *testing.T) {
	const size = 1 << 10
	plenty := train.MaxCost(1<<20, size)
	for _, tc := range []struct {
		name      string
		n         int
		memory    int64
		wantInput []int // indices of the samples trained on
		wantHeld  []int
	}{
		{"none", 0, plenty, nil, nil},
		{"fewer than four", 3, plenty, []int{0, 1, 2}, nil},
		{"four", 4, plenty, []int{0, 1, 2}, []int{3}},
		{"five", 5, plenty, []int{0, 1, 2, 4}, []int{3}},
		{"nine", 9, plenty, []int{0, 1, 2, 4, 5, 6, 8}, []int{3, 7}},
		{"twelve", 12, plenty, []int{0, 1, 2, 4, 5, 6, 8, 9, 10}, []int{3, 7, 11}},
		{"the newest two fit", 9, train.MinCost(2*size, size), []int{6, 8}, []int{3, 7}},
		{"none fits", 5, train.MinCost(size, size) - 1, []int{}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := distinct(tc.n, size)
			input, held := train.HoldOut(samples, size, tc.memory)
			index := func(got [][]byte) []int {
				out := []int{}
				for _, b := range got {
					for i, s := range samples {
						if &s[0] == &b[0] {
							out = append(out, i)
						}
					}
				}
				return out
			}
			if got, want := index(input), tc.wantInput; fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("trained on %v, want %v", got, want)
			}
			if got, want := index(held), tc.wantHeld; fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("held out %v, want %v", got, want)
			}
		})
	}
}
