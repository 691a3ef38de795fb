package squeeze

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// claimedStore is a SharedStore whose every claim another replica holds:
// it stores nothing and wins no claim.
type claimedStore struct{}

func (claimedStore) Get(context.Context, string, int) ([]byte, bool, error) { return nil, false, nil }
func (claimedStore) Set(context.Context, string, []byte, time.Duration) error {
	return nil
}

func (claimedStore) Claim(context.Context, string, []byte, time.Duration) (bool, error) {
	return false, nil
}

// TestLearnedRoundReportsEveryEnd runs a round to each of its ends and
// checks that exactly one step reports it, counted by Counters as that
// step: none of them returns silently.
func TestLearnedRoundReportsEveryEnd(t *testing.T) {
	pages := learnedSamples(8, 8<<10)
	noise := func(n, size int) [][]byte {
		rng := rand.New(rand.NewPCG(1, 2))
		var out [][]byte
		for range n {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			out = append(out, b)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		opts        []Option
		learnedOpts []LearnedOption
		// before readies the route; the round then runs on samples.
		before  func(t *testing.T, r *learnedRoute)
		samples [][]byte
		want    string
	}{
		{name: "trained", samples: pages, want: learnedTrained},
		{
			name:    "kept: the live dictionary saves enough",
			before:  func(t *testing.T, r *learnedRoute) { r.round(t.Context(), pages, 0) },
			samples: pages, want: learnedKept,
		},
		{
			name: "refused: another training runs",
			before: func(t *testing.T, r *learnedRoute) {
				if !r.learner.training.TryAcquire(1) {
					t.Fatal("a training runs already")
				}
				t.Cleanup(func() { r.learner.training.Release(1) })
			},
			samples: pages, want: learnedRefused,
		},
		{name: "refused: too few samples to train on", samples: pages[:learnedMinSamples], want: learnedRefused},
		{
			name:    "refused: the Middleware is closed",
			before:  func(t *testing.T, r *learnedRoute) { r.learner.life.Close() },
			samples: pages, want: learnedRefused,
		},
		{name: "refused: no samples", samples: nil, want: learnedRefused},
		{
			name:    "claim_lost: another replica trains it",
			opts:    []Option{WithSharedStore(claimedStore{})},
			samples: pages, want: learnedClaimLost,
		},
		{name: "discarded: the dictionary saves nothing held out", samples: noise(8, 8<<10), want: learnedDiscarded},
		{name: "discarded: the training gives no dictionary", samples: noise(8, 1), want: learnedDiscarded},
		{
			// The live dictionary saves less than the threshold, and the
			// training gives the same one again.
			name:        "superseded: the same dictionary is live",
			learnedOpts: []LearnedOption{LearnedRetrainBelow(0.99)},
			before:      func(t *testing.T, r *learnedRoute) { r.round(t.Context(), pages, 0) },
			samples:     pages, want: learnedSuperseded,
		},
		{
			name:    "unmeasured: nothing to measure the live dictionary on",
			before:  func(t *testing.T, r *learnedRoute) { r.round(t.Context(), pages, 0) },
			samples: nil, want: learnedUnmeasured,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var steps []string
			var counters Counters
			feed := counters.Observer().Learned
			opts := append([]Option{WithObserver(Observer{Learned: func(e LearnedInfo) {
				mu.Lock()
				steps = append(steps, e.Step)
				mu.Unlock()
				feed(e)
			}}), WithLearnedDictionary("/q/*", tc.learnedOpts...)}, tc.opts...)
			m, err := New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			r := m.dicts.learner.routes[0]
			if tc.before != nil {
				tc.before(t, r)
			}
			mu.Lock()
			steps = steps[:0]
			mu.Unlock()
			was := counters.learnedCount(tc.want)
			r.round(t.Context(), tc.samples, 0)
			mu.Lock()
			defer mu.Unlock()
			if len(steps) != 1 || steps[0] != tc.want {
				t.Errorf("the round reported %q, want exactly %q", steps, tc.want)
			}
			if got := counters.learnedCount(tc.want) - was; got != 1 {
				t.Errorf("Counters counted %d %q, want 1", got, tc.want)
			}
			key := tc.want
			if key == learnedRefused {
				key = "refused_budget"
			}
			if want := `"` + key + `":1`; !strings.Contains(counters.String(), want) {
				t.Errorf("Counters.String lacks %s: %s", want, counters.String())
			}
		})
	}
}
