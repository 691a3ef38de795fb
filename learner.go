package squeeze

import (
	"context"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/lifetime"
)

// This file holds the learner: the routes of WithLearnedDictionary
// (learned.go) and what their background work shares within a
// Middleware: the one training at a time, the jobs it waits for, the
// Middleware's offers their deltas are measured against, the observer
// and the log. The dictionary store (dictionary.go) holds a learner and
// asks it for what concerns learned dictionaries only: a live one by
// hash or path, the Links to the newest, whether a dictionary is live.

// learner holds a Middleware's learned routes and what they share. Every
// dictionary store has one, without routes when no WithLearnedDictionary
// is given: the store reports its unregistrable responses through it too
// (registrable).
type learner struct {
	s      *dictStore // the store the routes' dictionaries are served and remembered by
	routes []*learnedRoute
	// training lets one of the routes' trainings run at a time, jobs
	// counts their background work, and observe is the Middleware's
	// observer.
	training *semaphore.Weighted
	jobs     sync.WaitGroup
	observe  func(LearnedInfo)
	// logf logs what an operator must hear of once (learned.go,
	// registrable).
	logf func(format string, args ...any)
	// offers are the Middleware's offers without a dictionary: a learned
	// route measures its streamed deltas against them (learned.go).
	offers []offer
	// pollEvery is the least time between two reads of a learned route's
	// pointer in the fleet's store (shared_learned.go).
	pollEvery time.Duration
	// life is the Middleware's, which runs the jobs (internal/lifetime).
	life *lifetime.Lifetime
}

// newLearner builds the learner of store s from the configuration. New
// gives it the Middleware's offers and lifetime.
func newLearner(c *config, s *dictStore) *learner {
	l := &learner{
		s:         s,
		training:  semaphore.NewWeighted(1),
		observe:   c.observer.Learned,
		logf:      log.Printf,
		pollEvery: learnedPollEvery,
		life:      new(lifetime.Lifetime), // New gives it the Middleware's
	}
	l.routes = newLearnedRoutes(l, c.learned)
	return l
}

// routeFor returns the learned route whose pattern path matches, or nil.
func (l *learner) routeFor(path string) *learnedRoute {
	for _, r := range l.routes {
		if cdt.MatchPath(r.cfg.pattern, path) {
			return r
		}
	}
	return nil
}

// lookup returns the live learned dictionary with this hash, noting that
// a client announced it, or nil.
func (l *learner) lookup(hash [32]byte) *dictionary {
	for _, r := range l.routes {
		for _, ld := range r.live.Load().dicts {
			if ld.sd.d.hash == hash {
				ld.announced.Store(time.Now().UnixNano())
				return ld.sd.d
			}
		}
	}
	return nil
}

// server returns the handler of the learned dictionary served at path, or
// nil: one of a route's live dictionaries, or, with a SharedStore, one
// another replica linked (serveFromFleet), within ctx.
func (l *learner) server(ctx context.Context, path string) http.Handler {
	for _, r := range l.routes {
		if !strings.HasPrefix(path, r.cfg.path) {
			continue
		}
		for _, ld := range r.live.Load().dicts {
			if ld.path == path {
				return ld.sd
			}
		}
		if l.s.shared != nil {
			if h := r.serveFromFleet(ctx, path); h != nil {
				return h
			}
		}
	}
	return nil
}

// maybePoll looks for the fleet's newest dictionary of every route within
// the request whose context is ctx (learnedRoute.maybePoll).
func (l *learner) maybePoll(ctx context.Context) {
	for _, r := range l.routes {
		r.maybePoll(ctx)
	}
}

// appendLinks returns links with the Link value to each route's newest
// live dictionary appended, links itself unchanged.
func (l *learner) appendLinks(links []string) []string {
	for _, r := range l.routes {
		if lk := r.live.Load().link; lk != "" {
			links = append(links[:len(links):len(links)], lk)
		}
	}
	return links
}

// holds reports whether d is one of the live dictionaries of a learned
// route.
func (l *learner) holds(d *dictionary) bool {
	for _, r := range l.routes {
		if r.holds(d) {
			return true
		}
	}
	return false
}

// startJob runs f in the background, counted in l.jobs, as the
// Middleware's work (internal/lifetime); it reports false, running
// nothing, once the Middleware is closed.
func (l *learner) startJob(f func(ctx context.Context)) bool {
	l.jobs.Add(1)
	if !l.life.Go(func(ctx context.Context) {
		defer l.jobs.Done()
		f(ctx)
	}) {
		l.jobs.Done()
		return false
	}
	return true
}

// reportDelta reports the bytes a response of plain bytes, sent as a
// delta against one of r's dictionaries, saved: an estimate, from what the
// last round measured per plain byte, of what zstd without the dictionary
// would have sent less what the delta did.
func (l *learner) reportDelta(r *learnedRoute, plain int64) {
	per := r.savedPerByte()
	if l.observe == nil || per <= 0 || plain <= 0 {
		return
	}
	l.report(LearnedInfo{Step: learnedDelta, Plain: plain, Saved: int64(float64(plain) * per)})
}

// report sends e to the observer, if any.
func (l *learner) report(e LearnedInfo) {
	if l.observe != nil {
		l.observe(e)
	}
}

// encodedLen returns the length of body encoded in the coding a delta in
// coding replaces: the same codec without the dictionary (zstd for dcz, br
// for dcb) when the Middleware offers it, else its first offer, from the
// Middleware's pools. ok is false when there is none or it failed.
func (l *learner) encodedLen(coding string, body []byte) (n int64, ok bool) {
	var fb *offer
	for i := range l.offers {
		if l.offers[i].coding == deltaCodec(coding) {
			fb = &l.offers[i]
			break
		}
	}
	if fb == nil && len(l.offers) > 0 {
		fb = &l.offers[0]
	}
	if fb == nil {
		return 0, false
	}
	var c byteCount
	e, err := fb.encoders.Get(&c)
	if err != nil {
		return 0, false
	}
	defer fb.encoders.Put(e)
	if _, err := e.Write(body); err != nil {
		return 0, false
	}
	if err := e.Close(); err != nil {
		return 0, false
	}
	return int64(c), true
}

// byteCount is an io.Writer that counts what is written to it.
type byteCount int64

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}
