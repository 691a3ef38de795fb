package squeeze

import (
	"bytes"
	"net/http"

	"github.com/squeezehttp/squeeze/internal/cdt"
)

// dictResponse is the dictionary state of one response to a path that
// matches a pattern, and the hook that follows it.
type dictResponse struct {
	s *dictStore
	// req is the request the response answers.
	req *http.Request
	// pattern is the index of the WithDictionaryMatch pattern the path
	// matched, plus one; 0 when the path matches only the pattern of a
	// standalone dictionary. Either way the response varies on
	// Available-Dictionary. An int32, so that it and remember share a
	// word: the struct fits the 48-byte size class.
	pattern int32
	// remember is set when the response carries Use-As-Dictionary from
	// squeeze and is a GET: its plain body is collected in body, whose
	// capacity is reserved of the store's budget (dictStore.reserve)
	// until ended hands it to the dictionary or gives it back.
	remember bool
	body     []byte
	// expect, when set, is the dictionary the body is expected to equal
	// (dictStore.expected): its first matched bytes have, and body is
	// empty; its length is what is reserved. The first byte that differs
	// starts body from the bytes that matched.
	expect  *dictionary
	matched int
	// validators are the response's ETag and Last-Modified, as
	// expectedBodies keys them.
	validators uint64
}

// captureChunk is the least a body collected to remember grows by: the
// reservation grows with the capacity, doubling from it, so a body takes
// the store's lock a few times, not once per write.
const captureChunk = 32 << 10

// follow returns the dictionary offer the client of r may get, or nil, and
// the hook that follows the response: a dictResponse on a path that matches
// a pattern, allocated only there; on any other, s.linkHook (which adds the
// Link to standalone dictionaries), nil without standalone dictionaries. A
// delta needs all of: a dictionary
// coding named explicitly in Accept-Encoding ("*" does not count), a valid
// Available-Dictionary naming a held dictionary, a path matching that
// dictionary's pattern, and a request from the same origin, a direct one,
// or a same-site CORS request (RFC 9842 §9: see deltaSite); at the verdict,
// deltaAllowed may still refuse it for what the response's header says.
func (s *dictStore) follow(r *http.Request, ranged bool) (*offer, responseHook) {
	if s.shared != nil {
		// Every response may link a learned dictionary: the fleet's
		// newest is looked for now and then (shared_learned.go).
		s.learner.maybePoll(r.Context())
	}
	path := r.URL.EscapedPath()
	o, pattern, varies := s.begin(r, path, ranged)
	var hook responseHook
	if varies {
		hook = &dictResponse{s: s, req: r, pattern: int32(pattern)}
	} else if s.linkHook != nil {
		hook = s.linkHook
	}
	if lr := s.learner.routeFor(path); lr != nil {
		if o != nil && lr.stopped.Load() && lr.holds(o.dict) {
			o = nil // the route's deltas fell below their floor (learned.go)
		}
		hook = lr.follow(hook, r, o)
	}
	return o, hook
}

// begin is follow for a request to path (escaped): it returns the
// dictionary offer the client may get, or nil, the index plus one of the
// WithDictionaryMatch pattern path matches (0 for none), and whether the
// response varies on Available-Dictionary. The file server calls it with
// the path the request arrived with, before any prefix was stripped.
func (s *dictStore) begin(r *http.Request, path string, ranged bool) (o *offer, pattern int, varies bool) {
	pattern = s.matchIndex(path) + 1
	varies = pattern > 0
	for _, p := range s.standaloneMatch {
		varies = varies || cdt.MatchPath(p, path)
	}
	lr := s.learner.routeFor(path)
	varies = varies || lr != nil
	avail := r.Header["Available-Dictionary"]
	if _, ok := deltaSite(r.Header); ranged || len(avail) == 0 || len(s.codings) == 0 || !ok {
		return nil, pattern, varies
	}
	coding := explicitCoding(r.Header["Accept-Encoding"], s.codings)
	if coding == "" {
		return nil, pattern, varies
	}
	hash, ok := cdt.ParseAvailableDictionary(avail)
	if !ok {
		return nil, pattern, varies
	}
	d := s.lookup(hash)
	if d == nil && pattern > 0 && s.shared != nil {
		d = s.fetch(r.Context(), hash)
	}
	if d == nil && lr != nil && s.shared != nil {
		d = lr.fetchForClient(r.Context(), hash)
	}
	if d == nil || !cdt.MatchPath(d.pattern, path) {
		return nil, pattern, varies
	}
	s.seen(d, byHash) // a client holds it: it has earned the fleet's store
	codings := s.codings
	if chosen := d.codings.Load(); chosen != nil {
		// A learned dictionary's round chose its codings and their order.
		codings = *chosen
		if coding = explicitCoding(r.Header["Accept-Encoding"], codings); coding == "" {
			return nil, pattern, varies
		}
	}
	if o = s.offerFor(d, coding); o == nil && len(codings) == 2 {
		// The other dictionary coding, if the client names it too: dcb
		// is refused for a dictionary whose tables do not fit the budget.
		other := codings[0]
		if other == coding {
			other = codings[1]
		}
		if explicitCoding(r.Header["Accept-Encoding"], []string{other}) != "" {
			o = s.offerFor(d, other)
		}
	}
	return o, pattern, varies
}

// deltaAllowed reports whether a response whose header is resp, to a
// request whose header is req, may go out as a delta against d: always
// against a dictionary of WithDictionary, whose bytes the operator chose;
// against one remembered from a response (a body whose content a client
// may have chosen, such as a page that reflects its query) only when the
// response is public (publicResponse). A delta's size tells how much of
// the response the dictionary holds: a client that had a guess of another
// user's private page remembered as a dictionary, and that can see the
// size of that user's response, would learn whether the guess was right.
// Refusing such deltas also makes the answer to a private request the same
// whether or not the dictionary it names is held: no private page confirms
// a guess by coming back as dcz rather than zstd.
//
// A request from another origin of the site (deltaSite) gets a delta only
// if the response is readable by that origin (corsReadable), which its
// header says only now: the handler sets Access-Control-Allow-Origin.
func deltaAllowed(req, resp http.Header, d *dictionary) bool {
	if origin, _ := deltaSite(req); origin != "" && !corsReadable(resp, origin) {
		return false
	}
	return d.static || publicResponse(req, resp)
}

// deltaSite reports whether the request's Sec-Fetch-Site allows a delta,
// and returns the Origin whose reading of the response it then depends
// on, "" for none. A delta's size tells how much of the response the
// dictionary holds, so it goes only where the page that asked may read
// both (RFC 9842 §9):
//   - no Sec-Fetch-Site (not a browser, or an old one), same-origin, or
//     none (the user's own navigation): yes;
//   - same-site, another origin of the site (a static or CDN subdomain,
//     another port): only for a CORS request (Sec-Fetch-Mode: cors) with
//     one Origin, and then only if the response turns out readable there
//     (corsReadable, in deltaAllowed); a browser names no dictionary in a
//     no-cors request anyway;
//   - cross-site, or anything else: never, whatever the response allows.
func deltaSite(h http.Header) (origin string, ok bool) {
	site := h["Sec-Fetch-Site"]
	if len(site) == 0 {
		return "", true
	}
	if len(site) > 1 {
		return "", false
	}
	switch v := trimOWS(site[0]); {
	case equalFold(v, "same-origin") || equalFold(v, "none"):
		return "", true
	case !equalFold(v, "same-site"):
		return "", false
	}
	mode, from := h["Sec-Fetch-Mode"], h["Origin"]
	if len(mode) != 1 || !equalFold(trimOWS(mode[0]), "cors") || len(from) != 1 {
		return "", false
	}
	origin = trimOWS(from[0])
	if origin == "" || origin == "null" {
		return "", false
	}
	return origin, true
}

// corsReadable reports whether a response with header h passes the CORS
// check of a request from origin: its one Access-Control-Allow-Origin is
// that origin, byte for byte, or "*". "*" counts because a response any
// page may read hides nothing a delta's size could tell: the page could
// read the response, and the dictionary (a response the browser kept only
// because that page could read it). A request with credentials does not
// pass the browser's check with "*", so its page reads neither the body
// nor, with it, the size.
func corsReadable(h http.Header, origin string) bool {
	v := h["Access-Control-Allow-Origin"]
	if len(v) != 1 {
		return false
	}
	allow := trimOWS(v[0])
	return allow == "*" || allow == origin
}

// explicitCoding returns the one of codings that Accept-Encoding names
// explicitly with the highest weight above zero, ties going to the earlier,
// or "" when it names none of them.
func explicitCoding(acceptEncoding []string, codings []string) string {
	var weights [2]int
	for i := range weights {
		weights[i] = qUnnamed
	}
	for token, q := range weightedTokens(acceptEncoding) {
		for i, c := range codings {
			if equalFold(token, c) {
				weights[i] = mergeWeight(weights[i], q)
			}
		}
	}
	best, bestQ := "", 0
	for i, c := range codings {
		if weights[i] > bestQ {
			best, bestQ = c, weights[i]
		}
	}
	return best
}

// htmlTypes is the pattern the Link to standalone dictionaries goes with.
var htmlTypes = compileTypes([]string{"text/html"})

// committed makes the header edits of dictionaries on a path that matches
// a pattern: Vary, Use-As-Dictionary on a body to remember (a GET or HEAD
// 200 of an eligible type, not encoded by the handler, not a range, without
// a Use-As-Dictionary of the handler's own, public (see publicResponse),
// and with caching headers that let a browser register it: see
// unregistrable), and the Link to standalone dictionaries on
// text/html.
// It asks for the body of a GET to remember.
func (d *dictResponse) committed(h http.Header, f facts) bool {
	s := d.s
	useAs := ""
	if p := d.pattern; p > 0 {
		method := d.req.Method
		if (method == http.MethodGet || method == http.MethodHead) && f.status == http.StatusOK &&
			f.eligible && !f.encoded && !f.ranged && !f.secret && len(h["Use-As-Dictionary"]) == 0 &&
			publicResponse(d.req.Header, h) && s.registrable(h, "", d.req, &s.routes[p-1]) {
			useAs = s.useAs[p-1]
			d.remember = method == http.MethodGet
			if d.remember && f.declared > 0 && f.declared <= s.maxBody {
				d.validators = s.expect.validators(h)
				e, checked := s.expected(d.req.URL.EscapedPath(), f.declared, d.validators)
				switch {
				case checked && s.shared == nil:
					// Its path's body was found equal lately under
					// the same validators: it is not collected
					// (expected_bodies.go). A fleet counts every
					// response (dictStore.seen).
					d.remember = false
				case !s.reserve(f.declared):
					// Without room in the budget, the body is not
					// remembered.
					d.remember = false
				case e != nil:
					d.expect = e
				default:
					d.body = make([]byte, 0, f.declared)
				}
			}
		}
	}
	dictionaryHeaders(h, true, useAs, "", s.pageLinks(f.typed, f.contentType))
	return d.remember
}

// plain collects the plain body of a response to remember, reserving of
// the store's budget the capacity it grows to, and giving up past the
// largest body the store takes or when the budget has no room. It reports
// whether it wants more.
func (d *dictResponse) plain(p []byte) bool {
	if e := d.expect; e != nil {
		if expectPlain(e, d.matched, p) {
			d.matched += len(p)
			return true
		}
		// The body parts from e: it is collected from here, in a
		// buffer of the capacity reserved.
		d.body = make([]byte, d.matched, len(e.data))
		copy(d.body, e.data)
		d.expect, d.matched = nil, 0
	}
	if need := len(d.body) + len(p); need > cap(d.body) && !d.grow(need) {
		d.stopCapture()
		return false
	}
	d.body = append(d.body, p...) // within the capacity reserved
	return true
}

// grow gives body room for need bytes, doubling its capacity (at least
// captureChunk, at most the largest body remembered) and reserving what
// the capacity grows by, or exactly need when the budget has no room for
// more. It reports false, changing nothing, when need bytes do not fit.
func (d *dictResponse) grow(need int) bool {
	s, old := d.s, cap(d.body)
	if int64(need) > s.maxBody {
		return false
	}
	c := int(min(int64(max(need, 2*old, captureChunk)), s.maxBody))
	if !s.reserve(int64(c - old)) {
		if c = need; !s.reserve(int64(c - old)) {
			return false
		}
	}
	body := make([]byte, len(d.body), c)
	copy(body, d.body)
	d.body = body
	return true
}

// stopCapture drops the body collected and gives its reservation back.
func (d *dictResponse) stopCapture() {
	d.s.release(d.reserved())
	d.remember, d.body, d.expect, d.matched = false, nil, nil, 0
}

// reserved returns what the body collected holds of the store's budget.
func (d *dictResponse) reserved() int64 {
	if d.expect != nil {
		return int64(len(d.expect.data))
	}
	return int64(cap(d.body))
}

func (d *dictResponse) flushed() {}

// ended stores the body of a completed response that carried
// Use-As-Dictionary, unless it did not match its declared length. A whole
// body encoded from the buffer is still there; any other was collected by
// plain, or matched the dictionary expected. The reservation of the body
// collected is given back, or handed to the dictionary remembered,
// whichever way the response ended; the path then expects that
// dictionary's body.
func (d *dictResponse) ended(end responseEnd) {
	if !end.completed || !d.remember || end.lengthMismatch || end.secret {
		d.stopCapture()
		return
	}
	s, pattern, path := d.s, d.s.patterns[d.pattern-1], d.req.URL.EscapedPath()
	if e := d.expect; e != nil && (!end.wentWhole || bytes.Equal(end.whole, e.data)) {
		// Every byte was e's: no copy was made.
		if !end.wentWhole && d.matched != len(e.data) { // shorter than declared
			d.stopCapture()
			return
		}
		s.expectAt(path, s.rememberExpected(e, pattern, d.reserved(), d.req), d.validators)
		d.remember, d.expect, d.matched = false, nil, 0
		return
	}
	body, owned := d.body, true
	if end.wentWhole {
		body, owned = end.whole, false
	}
	if end.declared >= 0 && int64(len(body)) != end.declared {
		d.stopCapture()
		return
	}
	s.expectAt(path, s.rememberServed(body, pattern, owned, d.reserved(), d.req), d.validators)
	d.remember, d.body, d.expect = false, nil, nil
}

// dictLinks is the hook of a response to a path that matches no pattern,
// when there are standalone or learned dictionaries: it adds the Link to
// them on text/html, wants no body and keeps nothing. One serves every such
// response (dictStore.linkHook).
type dictLinks struct {
	links []string
	s     *dictStore // for the links to learned dictionaries
}

func (l *dictLinks) committed(h http.Header, f facts) bool {
	dictionaryHeaders(h, false, "", "", l.s.pageLinks(f.typed, f.contentType))
	return false
}

func (l *dictLinks) plain([]byte) bool { return false }

func (l *dictLinks) flushed() {}

func (l *dictLinks) ended(responseEnd) {}
