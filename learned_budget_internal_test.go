package squeeze

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLearnedSamplesStayWithinTheirBudget follows ten responses of 12 KiB
// at once on a route whose sample budget is 64 KiB: the bodies collected
// while they stream count against it, so at most five are sampled, and
// what is held never passes the budget.
func TestLearnedSamplesStayWithinTheirBudget(t *testing.T) {
	const budget = 64 << 10
	r := newTestRoute(t, LearnedSampleBudget(budget), LearnedSamples(64))
	var hooks []*learnedResponse
	for range 10 {
		req := httptest.NewRequest(http.MethodGet, "/p/x", nil)
		l := r.follow(nil, req, nil).(*learnedResponse)
		f := facts{status: http.StatusOK}
		f.eligible, f.declared = true, -1
		l.committed(http.Header{"Content-Type": {"text/html"}}, f)
		hooks = append(hooks, l)
	}
	chunk := make([]byte, 4<<10)
	for range 3 {
		for _, l := range hooks {
			l.plain(chunk)
			if held := r.held.Load(); held > budget {
				t.Fatalf("%d bytes held for samples, over the budget of %d", held, budget)
			}
		}
	}
	sampling := 0
	for _, l := range hooks {
		if l.sampling {
			sampling++
		}
	}
	if sampling > budget/(12<<10) {
		t.Errorf("%d responses of 12 KiB sampled at once within a budget of %d", sampling, budget)
	}
	for _, l := range hooks {
		l.ended(responseEnd{completed: true, declared: -1})
	}
	if held := r.held.Load(); held > budget {
		t.Errorf("%d bytes held once the responses ended, over the budget of %d", held, budget)
	}
}
