package squeeze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/squeezehttp/squeeze/internal/sfv"
)

// This file holds learned dictionaries (WithLearnedDictionary): a route
// whose public responses squeeze samples, trains a dictionary on in the
// background (learned_train.go), publishes at a URL of its own as a
// standalone dictionary, and then sends later responses on the route as
// dcz or dcb deltas against. With a SharedStore one replica of the fleet
// trains and the others take its dictionary by hash (shared_learned.go).
//
// A learned route follows its responses through the dictionary store's
// hook (learnedResponse wraps the hook dictionary.go returns): the store,
// through the learner the routes share (learner.go), answers
// Available-Dictionary from the route's live dictionaries, serves them at
// their URLs and links the newest from every text/html response, as it
// does for the dictionaries of WithDictionary.

// learnedMinSamples is the fewest samples a dictionary is trained on:
// fewer show nothing that repeats across responses.
const learnedMinSamples = 4

// learnedRoundSamples is the fewest samples of a round: learnedMinSamples
// to train on, and one held out (every fourth is; see trainingInput) to
// measure the dictionary on a response it was not trained on.
const learnedRoundSamples = learnedMinSamples + 1

// The guard of streamed deltas. A whole delta goes out only if it is
// smaller than the coding it replaces (sendWhole); a streamed one goes
// out before that can be known, so a route measures its streamed deltas:
// the first learnedProbeFirst after its deltas start, then one in
// learnedProbeEvery, each encoded again without the dictionary once it has
// gone out. Once learnedProbeMin are measured and the deltas saved less
// than learnedDeltaFloor of what the coding they replace took, the route
// sends no delta until a new dictionary, or a round that measures the live
// one saving at least the floor on the route's samples (measured). A
// route of user content poisoned so that every page goes out larger as a
// delta so costs a few responses of a few dozen bytes per round.
const (
	learnedProbeFirst = 8
	learnedProbeEvery = 16
	learnedProbeMin   = 3
	learnedDeltaFloor = 0.02
	// learnedProbeDecay is the count at which the tally is halved.
	learnedProbeDecay = 32
)

// learnedMaxAge is how long a client may keep a learned dictionary fresh
// (its Cache-Control max-age): a superseded dictionary stays served, and
// answered, while a client announced it within this time.
const learnedMaxAge = 24 * time.Hour

// --- the route ----------------------------------------------------------

// learnedRoute is the state of one WithLearnedDictionary: the samples it
// holds, its live dictionaries, and the state of its rounds.
type learnedRoute struct {
	// learner is what the Middleware's routes share (learner.go).
	learner *learner
	cfg     learnedConfig
	// key names the route in the fleet's store (shared_learned.go).
	key string

	// held is the bytes of samples held or being collected, within
	// cfg.budget; reserve and release keep it.
	held atomic.Int64
	// state is learnedCollecting, learnedRound (a round's job runs) or
	// learnedResting (until resumeAt).
	state    atomic.Int32
	resumeAt atomic.Int64 // unix nanoseconds
	// polling is set while a look for the fleet's dictionary runs;
	// nextPoll is when the next may start (unix nanoseconds).
	polling  atomic.Bool
	nextPoll atomic.Int64
	// unshared is the route's dictionary the fleet's store did not take,
	// to be shared again; sharing is set while it is written
	// (shared_learned.go).
	unshared atomic.Pointer[learnedDict]
	sharing  atomic.Bool

	mu      sync.Mutex
	samples [][]byte // guarded by mu
	// sampled is the bytes reserved for samples, guarded by mu.
	sampled int64
	// gen is the generation of the newest dictionary: one more at each
	// training, the fleet's when taken from it. Guarded by mu.
	gen uint64

	// live holds the route's dictionaries, newest first.
	live atomic.Pointer[learnedSet]
	// saved is the bytes a delta saved per plain byte, as the last round
	// measured (math.Float64bits), 0 until measured: it estimates what
	// deltas save.
	saved atomic.Uint64

	// pending is len(samples), for the reports of samples refused; logged
	// has a bit per sampleRefusal logged once already.
	pending atomic.Int64
	logged  atomic.Uint32

	// The guard of streamed deltas (probeStream): stopped is set while
	// the route sends no deltas; probes counts the deltas that may stream
	// since the route's deltas last (re)started; probing is set while one
	// is measured. The tally, guarded by mu, sums what the probes found,
	// halved as it grows so that the newest weigh most.
	stopped atomic.Bool
	probes  atomic.Int64
	probing atomic.Bool
	tally   streamTally

	// dictRoute names the route in the log of its dictionaries served
	// without Use-As-Dictionary (registrable).
	dictRoute dictRoute
}

// streamTally sums what probes of a route's streamed deltas found.
type streamTally struct {
	count                  int
	plain, delta, replaced int64
}

const (
	learnedCollecting int32 = iota
	learnedRound
	learnedResting
)

// learnedSet is a route's live dictionaries, newest first, and the Link
// value of the newest. It is replaced whole, never changed.
type learnedSet struct {
	dicts []*learnedDict
	link  string
}

// learnedDict is one live learned dictionary and what serves it.
type learnedDict struct {
	sd   *standaloneDictionary
	path string
	gen  uint64
	// announced is when a client last named it (unix nanoseconds), or
	// when it was published.
	announced atomic.Int64
}

// newLearnedRoutes builds the routes of c for l.
func newLearnedRoutes(l *learner, c []learnedConfig) []*learnedRoute {
	var routes []*learnedRoute
	for _, lc := range c {
		sum := sha256.Sum256([]byte(lc.pattern))
		r := &learnedRoute{learner: l, cfg: lc, key: base64.RawURLEncoding.EncodeToString(sum[:])}
		r.dictRoute.kind, r.dictRoute.name = "learned dictionary", lc.pattern
		r.live.Store(&learnedSet{})
		routes = append(routes, r)
	}
	return routes
}

// holds reports whether d is one of the route's live dictionaries.
func (r *learnedRoute) holds(d *dictionary) bool {
	for _, ld := range r.live.Load().dicts {
		if ld.sd.d == d {
			return true
		}
	}
	return false
}

// newest returns the route's newest dictionary, or nil.
func (r *learnedRoute) newest() *learnedDict {
	if l := r.live.Load().dicts; len(l) > 0 {
		return l[0]
	}
	return nil
}

// newLearnedDict makes the live dictionary of data, of generation gen,
// for the route: served at the route's path and its hash, with
// Use-As-Dictionary naming the pattern and an id, the hash's base64url,
// which every replica derives alike. codings are the delta codings the
// round that trained it chose (learned_codings.go), nil for the store's.
func (r *learnedRoute) newLearnedDict(data []byte, gen uint64, codings []string) *learnedDict {
	hash := sha256.Sum256(data)
	name := base64.RawURLEncoding.EncodeToString(hash[:])
	id, _ := sfv.QuoteString(name)
	ld := &learnedDict{
		sd: &standaloneDictionary{
			d:           &dictionary{hash: hash, data: data, pattern: r.cfg.pattern, learned: true},
			etag:        `"` + name + `"`,
			useAs:       useAsDictionary(r.cfg.pattern) + ", id=" + id,
			contentType: "text/plain; charset=utf-8", // compressed on the way, as text
			s:           r.learner.s,
			route:       &r.dictRoute,
		},
		path: r.cfg.path + name,
		gen:  gen,
	}
	if codings != nil {
		ld.sd.d.codings.Store(&codings)
	}
	ld.announced.Store(time.Now().UnixNano())
	return ld
}

// publish makes ld the route's newest dictionary, unless it is live
// already or older than the newest, and retires those beyond the route's
// keep or not announced within learnedMaxAge. It reports whether ld was
// added.
func (r *learnedRoute) publish(ld *learnedDict) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.live.Load().dicts
	for _, d := range old {
		if d.sd.d.hash == ld.sd.d.hash {
			return false
		}
	}
	if len(old) > 0 && old[0].gen > ld.gen {
		return false
	}
	r.gen = max(r.gen, ld.gen)
	next := []*learnedDict{ld}
	stale := time.Now().Add(-learnedMaxAge).UnixNano()
	for _, d := range old {
		if len(next) < r.cfg.keep && d.announced.Load() >= stale {
			next = append(next, d)
		}
	}
	r.live.Store(&learnedSet{dicts: next, link: "<" + ld.path + `>; rel="compression-dictionary"`})
	r.restartDeltas()
	return true
}

// restartDeltas (re)starts the route's deltas with a fresh tally of
// probes. Callers hold r.mu.
func (r *learnedRoute) restartDeltas() {
	r.tally = streamTally{}
	r.probes.Store(0)
	r.stopped.Store(false)
}

// measured records what a round found: what deltas save, and, when the
// live dictionary saves at least the floor on the round's samples, the
// restart of deltas the guard stopped (probeStream).
func (r *learnedRoute) measured(m learnedMeasure) {
	r.saved.Store(math.Float64bits(m.savedPerByte))
	if m.ratio > 0 && 1-m.ratio >= learnedDeltaFloor && r.stopped.Load() {
		r.mu.Lock()
		r.restartDeltas()
		r.mu.Unlock()
	}
}

// wantsProbe reports whether a delta on the route that may stream is to be
// measured (see learnedProbeFirst), claiming the route's one probe.
func (r *learnedRoute) wantsProbe() bool {
	n := r.probes.Add(1)
	return (n <= learnedProbeFirst || n%learnedProbeEvery == 0) && r.probing.CompareAndSwap(false, true)
}

// probeStream measures a streamed delta in coding of body that went out
// in sent bytes against the coding it replaced, and stops the route's
// deltas when the tally's saving falls below the floor. It releases the
// route's probe.
func (r *learnedRoute) probeStream(coding string, body []byte, sent int64) {
	defer r.probing.Store(false)
	replaced, ok := r.learner.encodedLen(coding, body)
	if !ok {
		return
	}
	r.mu.Lock()
	t := &r.tally
	t.count++
	t.plain += int64(len(body))
	t.delta += sent
	t.replaced += replaced
	stop := t.count >= learnedProbeMin && float64(t.replaced-t.delta) < learnedDeltaFloor*float64(t.replaced)
	last := *t
	if t.count >= learnedProbeDecay {
		*t = streamTally{count: t.count / 2, plain: t.plain / 2, delta: t.delta / 2, replaced: t.replaced / 2}
	}
	if stop {
		*t = streamTally{}
	}
	r.mu.Unlock()
	if !stop || !r.stopped.CompareAndSwap(false, true) {
		return
	}
	r.learner.report(LearnedInfo{Step: learnedDeltasStopped, Plain: last.plain, Saved: last.replaced - last.delta})
	r.learner.logf("squeeze: learned dictionary %q: %d streamed deltas went out in %d bytes where the coding they replace took %d: below the floor of %.0f%% saved, the route sends no deltas until its next dictionary or a round that measures its dictionary saving",
		r.cfg.pattern, last.count, last.delta, last.replaced, 100*learnedDeltaFloor)
}

// savedPerByte returns the bytes a delta saved per plain byte, as
// measured last; 0 before the first measure.
func (r *learnedRoute) savedPerByte() float64 { return math.Float64frombits(r.saved.Load()) }

// --- sampling -------------------------------------------------------------

// reserve takes n bytes of the route's sample budget, reporting false,
// with nothing taken, when they do not fit.
func (r *learnedRoute) reserve(n int64) bool {
	if r.held.Add(n) > r.cfg.budget {
		r.held.Add(-n)
		return false
	}
	return true
}

// release gives back n bytes of the sample budget.
func (r *learnedRoute) release(n int64) { r.held.Add(-n) }

// collecting reports whether the route samples responses now: it does
// while no round runs and its rest has passed.
func (r *learnedRoute) collecting() bool {
	switch r.state.Load() {
	case learnedCollecting:
		return true
	case learnedResting:
		if time.Now().UnixNano() >= r.resumeAt.Load() {
			return r.state.CompareAndSwap(learnedResting, learnedCollecting) || r.state.Load() == learnedCollecting
		}
	}
	return false
}

// maxSample is the longest body the route samples: a round of the
// longest fits its budget.
func (r *learnedRoute) maxSample() int64 { return r.cfg.budget / learnedRoundSamples }

// addSample keeps body, n bytes of which are reserved already, as a
// sample, and starts a round when the route holds enough; while no round
// is due it gives the reservation back.
func (r *learnedRoute) addSample(body []byte, n int64) {
	r.mu.Lock()
	if r.state.Load() != learnedCollecting {
		r.mu.Unlock()
		r.release(n)
		return
	}
	r.samples = append(r.samples, body)
	r.sampled += n
	r.pending.Store(int64(len(r.samples)))
	full := len(r.samples) >= r.cfg.samples ||
		len(r.samples) >= learnedRoundSamples && r.held.Load() > r.cfg.budget-r.maxSample()
	var round [][]byte
	var cost int64
	if full {
		round, cost = r.samples, r.sampled
		r.samples, r.sampled = nil, 0
		r.pending.Store(0)
		r.state.Store(learnedRound)
	}
	r.mu.Unlock()
	if full && !r.learner.startJob(func(ctx context.Context) { r.round(ctx, round, cost) }) {
		// The Middleware is closed: no round runs, and none is collected.
		r.release(cost)
		r.resumeAt.Store(math.MaxInt64)
		r.state.Store(learnedResting)
	}
}

// learnedResponse follows one response on a learned route: it wraps the
// hook of the dictionary store (the Vary and Link edits, and remembering
// bodies where WithDictionaryMatch applies too), samples the body, and
// reports what a delta against one of the route's dictionaries saved.
type learnedResponse struct {
	inner responseHook // nil when the store has none for the path
	r     *learnedRoute
	req   *http.Request
	// delta is the coding of the offer of a delta against one of the
	// route's dictionaries the response may go out in, "" for none; h is
	// the header, kept to tell at the end whether it did.
	delta string
	h     http.Header
	// innerWants is what inner's committed answered; sampling is set
	// while the body is sampled and probing while it is collected to
	// measure a streamed delta (probeStream), its reserved bytes reserved
	// of the route's sample budget; n counts the plain bytes of a
	// possible delta.
	innerWants, sampling, probing bool
	body                          []byte
	reserved, n                   int64
}

// follow returns the hook of the response to req on the route, wrapping
// inner (nil for none), which may go out in offer o.
func (r *learnedRoute) follow(inner responseHook, req *http.Request, o *offer) responseHook {
	l := &learnedResponse{inner: inner, r: r, req: req}
	if o != nil && o.dict != nil && r.holds(o.dict) {
		l.delta = o.coding
	}
	return l
}

// committed adds Vary for the dictionaries, lets the inner hook make its
// edits, and starts sampling a body squeeze may learn from: a GET 200 of
// an eligible type, not encoded by the handler nor a range nor one of the
// learned dictionaries (a pattern may cover their path), that
// learnedSampleable says may be shared with anyone, while the route
// collects. A response refused for its type or what it says of sharing
// is reported (refused).
func (l *learnedResponse) committed(h http.Header, f facts) bool {
	if l.inner != nil {
		l.innerWants = l.inner.committed(h, f)
	}
	// The route's responses vary on the dictionary whatever the inner
	// hook (or none) wrote; the Links come once, from it if there is one.
	var links []string
	if l.inner == nil {
		links = l.r.learner.s.pageLinks(f.typed, f.contentType)
	}
	dictionaryHeaders(h, true, "", "", links)
	r := l.r
	if l.req.Method == http.MethodGet && f.status == http.StatusOK && !f.encoded && !f.ranged && !f.secret &&
		f.declared <= r.maxSample() && !strings.HasPrefix(l.req.URL.Path, r.cfg.path) && // not a dictionary itself
		r.collecting() && r.sampleable(l.req, h, f) {
		l.sampling = true
		if f.declared > 0 {
			if !r.reserve(f.declared) {
				l.sampling = false
			} else {
				l.reserved = f.declared
				l.body = make([]byte, 0, f.declared)
			}
		}
	}
	if l.delta != "" {
		l.h = h
		// A body that ended within the buffer goes out whole, a delta
		// only if it is the smaller (sendWhole); one that may stream is
		// probed now and then.
		if f.event != atEnd && r.wantsProbe() {
			l.probing = true
			if !l.sampling && f.declared > 0 {
				if f.declared > r.maxSample() || !r.reserve(f.declared) {
					l.probing = false
					r.probing.Store(false)
				} else {
					l.reserved = f.declared
					l.body = make([]byte, 0, f.declared)
				}
			}
		}
	}
	return l.innerWants || l.sampling || l.probing || l.delta != ""
}

// sampleable reports whether the response to req, whose header is h, may
// be sampled (learnedSampleable), reporting why not when it may not.
func (r *learnedRoute) sampleable(req *http.Request, h http.Header, f facts) bool {
	why := sampleType
	if f.eligible {
		why = learnedSampleable(req, h, r.cfg.credentials)
	}
	if why == sampleOK {
		return true
	}
	r.refused(why, req)
	return false
}

// refusalResults maps a sampleRefusal to what it is reported as.
var refusalResults = [...]string{
	samplePrivate:     learnedSkippedPrivate,
	sampleUnmarked:    learnedSkippedUnmarked,
	sampleCredentials: learnedSkippedCredentials,
	sampleQuery:       learnedSkippedQuery,
	sampleType:        learnedSkippedType,
}

// refusalWords says in a log line why a response was not sampled.
var refusalWords = [...]string{
	samplePrivate:     "it is private (Cache-Control private or no-store, Set-Cookie, or Vary: *)",
	sampleUnmarked:    "it says nothing of sharing (neither Cache-Control public nor a max-age or s-maxage)",
	sampleCredentials: "its request carried credentials (Cookie, Authorization or a LearnedCredentialHeaders field) and it does not say Cache-Control public, or it varies on them",
	sampleQuery:       "its URL may carry a secret (a query string, or a path segment that looks like a token) and it does not say Cache-Control public",
	sampleType:        "squeeze does not compress its content type",
}

// refused reports a response to req the route did not sample, for why,
// with the samples the route holds toward its next round, and logs the
// first of each reason on the route. The log names the path alone: a
// query string may be a secret.
func (r *learnedRoute) refused(why sampleRefusal, req *http.Request) {
	held, need := r.pending.Load(), int64(r.cfg.samples)
	r.learner.report(LearnedInfo{Step: refusalResults[why], Samples: held, Size: need})
	bit := uint32(1) << why
	if old := r.logged.Load(); old&bit != 0 || !r.logged.CompareAndSwap(old, old|bit) {
		return
	}
	r.learner.logf("squeeze: learned dictionary %q: a response to %s was not sampled: %s; the route holds %d of the %d samples of its next round (logged once per route and reason; the counters count every one)",
		r.cfg.pattern, req.URL.EscapedPath(), refusalWords[why], held, need)
}

// plain passes p on to the inner hook while it wants it, counts it for a
// possible delta, and collects it while sampling, reserving what the body
// grows by; past the longest sample or the budget it gives up.
func (l *learnedResponse) plain(p []byte) bool {
	if l.innerWants {
		l.innerWants = l.inner.plain(p)
	}
	l.n += int64(len(p))
	if l.sampling || l.probing {
		need := int64(len(l.body) + len(p))
		if grow := need - l.reserved; grow > 0 {
			if need > l.r.maxSample() || !l.r.reserve(grow) {
				l.stopCollecting()
				return l.innerWants || l.delta != ""
			}
			l.reserved = need
		}
		l.body = append(l.body, p...)
	}
	return l.innerWants || l.sampling || l.probing || l.delta != ""
}

// stopCollecting drops the body collected and its reservation, and the
// route's probe if this response held it.
func (l *learnedResponse) stopCollecting() {
	l.r.release(l.reserved)
	if l.probing {
		l.r.probing.Store(false)
	}
	l.sampling, l.probing, l.body, l.reserved = false, false, nil, 0
}

func (l *learnedResponse) flushed() {
	if l.inner != nil {
		l.inner.flushed()
	}
}

// ended ends the inner hook, reports the bytes a delta saved, and keeps
// the sample of a completed response whose body matched its declared
// length.
func (l *learnedResponse) ended(end responseEnd) {
	if l.inner != nil {
		l.inner.ended(end)
	}
	r := l.r
	if end.wentWhole {
		l.n = int64(len(end.whole))
	}
	wentDelta := l.delta != "" && end.completed && !end.lengthMismatch && headerHasToken(l.h["Content-Encoding"], l.delta)
	if wentDelta {
		r.learner.reportDelta(r, l.n)
	}
	l.h = nil
	if l.probing {
		if wentDelta && !end.wentWhole && end.closed && int64(len(l.body)) == l.n {
			r.probeStream(l.delta, l.body, end.sent) // releases the probe
		} else {
			r.probing.Store(false)
		}
		l.probing = false
	}
	if !l.sampling {
		l.stopCollecting()
		return
	}
	body, owned := l.body, true
	if end.wentWhole {
		body, owned = end.whole, false
	}
	n := int64(len(body))
	if !end.completed || end.lengthMismatch || end.secret || n == 0 || end.declared >= 0 && n != end.declared ||
		n > r.maxSample() || n > l.reserved && !r.reserve(n-l.reserved) {
		l.stopCollecting()
		return
	}
	l.reserved = max(l.reserved, n)
	if !owned {
		body = bytes.Clone(body) // the writer's buffer
	}
	r.addSample(body, l.reserved)
	l.body, l.sampling, l.reserved = nil, false, 0
}
