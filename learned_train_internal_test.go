package squeeze

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// learnedSamples returns n generated pages of about size bytes each: a
// shared template and text of many distinct words, the input that costs
// the dictionary builder most per byte.
func learnedSamples(n, size int) [][]byte {
	var out [][]byte
	x := uint32(1)
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>page %d</title><style>body{font:14px system-ui}</style></head><body><ul>", i)
		for b.Len() < size {
			x = x*1664525 + 1013904223
			item := x % 4096 // a catalogue that pages share
			fmt.Fprintf(&b, "<li><a href=/item/%d>item %x, %s</a> price %d.%02d, seen %d</li>\n", item, item*2654435761, learnedWords[item%uint32(len(learnedWords))], item%997, item%100, x%10000)
		}
		b.WriteString("</ul></body></html>")
		out = append(out, []byte(b.String()))
	}
	return out
}

var learnedWords = strings.Fields("red green blue small large heavy light cotton wool steel glass paper oak pine")

func newTestRoute(t *testing.T, opts ...LearnedOption) *learnedRoute {
	t.Helper()
	m, err := New(WithLearnedDictionary("/p/*", opts...))
	if err != nil {
		t.Fatal(err)
	}
	return m.dicts.learner.routes[0]
}

// TestLearnedTrainingStaysWithinItsMemoryBudget trains on 8 MiB of samples
// twice: with the budget at its floor, 16 MiB, it must allocate no more
// than that; with no real budget (the baseline), it allocates past it,
// so the budget is what holds it (the trainer takes a
// smaller table, then fewer samples).
func TestLearnedTrainingStaysWithinItsMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a heap measurement of a training on 8 MiB: it runs without -short (.ci/run runs it without -race, which allocates where the build without it does not: 39 MB within the 16 MiB budget)")
	}
	const budget = 16 << 20
	samples := learnedSamples(128, 64<<10)
	baseline := newTestRoute(t, LearnedTrainingMemory(1<<40))
	unbounded := testtool.AllocatedBy(func() { baseline.train(t.Context(), samples) })
	if baseline.newest() == nil {
		t.Fatal("the baseline trained no dictionary")
	}
	if unbounded <= budget {
		t.Fatalf("training on 8 MiB without a budget allocated %d bytes, within the %d budget: the test shows nothing", unbounded, budget)
	}
	// Other tests' leftovers allocate too, and MemStats counts it: while
	// over the budget, the training is measured again on a new route (up
	// to three times in all), and the least is the training's own.
	used := testtool.LeastWithin(budget, func() uint64 {
		r := newTestRoute(t, LearnedTrainingMemory(budget))
		n := testtool.AllocatedBy(func() { r.train(t.Context(), samples) })
		if r.newest() == nil {
			t.Fatal("no dictionary was trained within the budget")
		}
		return n
	})
	t.Logf("allocated %d bytes within a budget of %d (%d without it)", used, budget, unbounded)
	if used > budget {
		t.Errorf("training allocated %d bytes, over its budget of %d", used, budget)
	}
}

// TestLearnedTrainingIsRefusedWhileAnotherRuns holds the Middleware's one
// training and checks that a route's training is refused and counted.
func TestLearnedTrainingIsRefusedWhileAnotherRuns(t *testing.T) {
	var refused int
	m, err := New(WithLearnedDictionary("/p/*"), WithObserver(Observer{Learned: func(e LearnedInfo) {
		if e.Step == learnedRefused {
			refused++
		}
	}}))
	if err != nil {
		t.Fatal(err)
	}
	r := m.dicts.learner.routes[0]
	m.dicts.learner.training.TryAcquire(1)
	r.train(t.Context(), learnedSamples(8, 4<<10))
	if refused != 1 || r.newest() != nil {
		t.Errorf("with another training running: %d refusals, dictionary %v; want 1 and none", refused, r.newest())
	}
	m.dicts.learner.training.Release(1)
	r.train(t.Context(), learnedSamples(8, 4<<10))
	if refused != 1 || r.newest() == nil {
		t.Errorf("with none running: %d refusals, dictionary %v; want 1 and one", refused, r.newest())
	}
}

// TestLearnedTrainingHoldsOutWhatItMeasures splits rounds of every size
// from learnedMinSamples to 3*learnedMinSamples: the samples a dictionary
// is measured on are never among those it is trained on, and a round of
// learnedRoundSamples or more trains on at least learnedMinSamples and
// holds one out at least.
func TestLearnedTrainingHoldsOutWhatItMeasures(t *testing.T) {
	r := newTestRoute(t)
	for n := learnedMinSamples; n <= 3*learnedMinSamples; n++ {
		input, held := r.trainingInput(learnedSamples(n, 1<<10)) // each distinct
		trained := make(map[string]bool)
		for _, b := range input {
			trained[string(b)] = true
		}
		for i, b := range held {
			if trained[string(b)] {
				t.Errorf("of %d samples, held-out sample %d is also trained on", n, i)
			}
		}
		if n >= learnedRoundSamples && (len(input) < learnedMinSamples || len(held) == 0) {
			t.Errorf("of %d samples, %d trained on and %d held out; want at least %d and 1", n, len(input), len(held), learnedMinSamples)
		}
	}
}

// TestLearnedDictionaryOfSamplesSharingNothingIsNotPublished trains on
// rounds of a few samples of random bytes, which share nothing: a
// dictionary of them saves nothing on a sample it does not hold, so none
// is published (measured on the samples it was trained on, whose median
// one it holds whole, it looked like a saving and was). A round of as few
// generated pages, which share their template, publishes one.
func TestLearnedDictionaryOfSamplesSharingNothingIsNotPublished(t *testing.T) {
	rnd := rand.NewChaCha8([32]byte{1})
	for n := learnedMinSamples; n <= 2*learnedMinSamples; n++ {
		samples := make([][]byte, n)
		for i := range samples {
			samples[i] = make([]byte, 8<<10)
			_, _ = rnd.Read(samples[i])
		}
		r := newTestRoute(t)
		r.train(t.Context(), samples)
		if d := r.newest(); d != nil {
			t.Errorf("of %d samples of random bytes, a dictionary of %d bytes was published, measured to save %.3f per byte",
				n, len(d.sd.d.data), r.savedPerByte())
		}
	}
	r := newTestRoute(t)
	r.train(t.Context(), learnedSamples(learnedRoundSamples, 8<<10))
	if r.newest() == nil {
		t.Errorf("of %d generated pages, no dictionary was published", learnedRoundSamples)
	}
}

// TestLearnedRouteOfTheLongestSamplesTrains samples responses each as
// long as the route samples: its budget fills with a round of them, which
// must be large enough to train on some and measure on another, and a
// dictionary is published.
func TestLearnedRouteOfTheLongestSamplesTrains(t *testing.T) {
	r := newTestRoute(t, LearnedSampleBudget(64<<10), LearnedSamples(64))
	n := r.maxSample()
	added := 0
	for _, b := range learnedSamples(2*learnedRoundSamples, int(n)) {
		if r.state.Load() != learnedCollecting || !r.reserve(n) {
			break
		}
		r.addSample(b[:n], n)
		added++
	}
	r.learner.jobs.Wait()
	if r.newest() == nil {
		t.Errorf("%d samples of %d bytes, the longest a budget of %d bytes samples, published no dictionary", added, n, r.cfg.budget)
	}
}

// TestLearnedDictionaryFillsItsSize trains a route on a round of 40 pages
// of 4 KiB, far more distinct content than its dictionary size: the
// dictionary published fills the size (the fragments and a median page it
// was made of before held at most half of it and one page).
func TestLearnedDictionaryFillsItsSize(t *testing.T) {
	const size = 32 << 10
	r := newTestRoute(t, LearnedDictionarySize(size), LearnedSamples(40))
	r.train(t.Context(), learnedSamples(40, 4<<10))
	d := r.newest()
	if d == nil {
		t.Fatal("no dictionary was published")
	}
	if n := len(d.sd.d.data); n != size {
		t.Errorf("the dictionary holds %d bytes of the %d it may", n, size)
	}
}
