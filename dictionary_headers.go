package squeeze

import (
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// dictionaryCacheControl is the Cache-Control a file marked
// Use-As-Dictionary gets from a [Middleware.FileServer] when the handler in
// front set none, and, after "public, ", a [WithDictionary] or learned
// dictionary ([WithLearnedDictionary]): a browser keeps a dictionary only
// while the response it came in is fresh (RFC 9842), so a response served
// without freshness is never used for a delta. A day; the client revalidates with the ETag after
// that. Set a Cache-Control in the handler (or in front of the file
// server) to choose another (a year and immutable for names that carry a
// version). A handler's own response behind [Middleware.Handler] keeps the
// freshness its handler gave it: the Middleware cannot tell a versioned
// asset from a page that must not be reused for a day, so one its handler
// gave no freshness (no max-age, Expires or Last-Modified) goes without
// Use-As-Dictionary, counted and logged once per pattern.
// Only a public response is marked (not private, no-store, nor
// setting a cookie or answering credentials unless public), so the
// freshness added never lets a shared cache keep what is one client's.
const dictionaryCacheControl = "max-age=86400"

// dictionaryHeaders writes the RFC 9842 header fields of a response, the
// one place they are written, for the Middleware's responses, the
// FileServer's files and the WithDictionary dictionaries alike:
//
//   - varies (the path matches a dictionary pattern): Vary names
//     Available-Dictionary and Sec-Fetch-Site beside Accept-Encoding
//     (dictVary), since whether the response is a delta depends on them;
//   - useAs, unless "" (the response, public, is one to keep as a
//     dictionary): Use-As-Dictionary, and, unless fresh is "" (a file:
//     dictionaryCacheControl; a WithDictionary or learned dictionary, the
//     same bytes for every client: "public, " before it), fresh as the
//     Cache-Control a browser needs to keep it, unless the handler set one.
//     The caller passes a useAs only for a response a browser can register
//     (unregistrable, through dictStore.registrable, which counts and
//     logs the others);
//   - links, the Link values to the standalone dictionaries, added to a
//     text/html response (the caller passes nil for any other).
func dictionaryHeaders(h http.Header, varies bool, useAs, fresh string, links []string) {
	if varies {
		if v := h["Vary"]; len(v) == 1 && v[0] == "Accept-Encoding" {
			h["Vary"] = []string{dictVary}
		} else {
			addVaryTokens(h, "Accept-Encoding", "Available-Dictionary", "Sec-Fetch-Site")
		}
	}
	if useAs != "" {
		h["Use-As-Dictionary"] = []string{useAs}
		if fresh != "" && !hasField(h, "Cache-Control") {
			h["Cache-Control"] = []string{fresh}
		}
	}
	if len(links) > 0 {
		v := h["Link"]
		h["Link"] = append(v[:len(v):len(v)], links...)
	}
}

// Why a browser would not register a response as a dictionary
// (unregistrable), as the once-per-route log line says it.
const (
	unregistrableBlocked = "its caching headers say no-cache or no-store (Cache-Control, or Pragma: no-cache)"
	unregistrableStale   = "it has no freshness: neither a max-age nor a stale-while-revalidate above zero, an Expires later than its Date, nor a Last-Modified before it; give it a max-age above zero"
)

// unregistrable returns why a browser would not store a response with
// header h as a dictionary, "" when it would; fresh is the Cache-Control
// the response gets when it has none ("" for none). RFC 9842 section
// 2.2.1 has the client keep a dictionary only while its response is
// fresh, and Chromium, the one client that does, registers one only while
// its freshness and stale-while-revalidate exceed its age
// (HttpResponseHeaders::GetFreshnessLifetimes): none whose Cache-Control
// says no-cache or no-store, or whose Pragma says no-cache; freshness from
// max-age, else from an Expires later than its Date (or now), else, for a
// 200, a tenth of the time since its Last-Modified; must-revalidate drops
// that heuristic and stale-while-revalidate; s-maxage, for shared caches,
// does not count; the age is its Age, or how long ago its Date was.
// TestChromiumRegistersTheDictionariesSqueezeMarks checks the rule against
// Chromium. squeeze is stricter in one place: an invalid max-age or
// Expires is stale (RFC 9111 §4.2.1, §5.3). A Use-As-Dictionary the client
// ignores only costs a remembered body and misleads whoever reads the
// header, so none is sent.
func unregistrable(h http.Header, fresh string) string {
	cc := h
	if fresh != "" && !hasField(h, "Cache-Control") {
		cc = http.Header{"Cache-Control": {fresh}}
	}
	blocked, revalidate := false, false
	maxAge, hasMaxAge, swr := int64(0), false, int64(0)
	eachCacheDirective(cc, func(name, value string) {
		switch {
		case equalFold(name, "no-cache"), equalFold(name, "no-store"):
			blocked = true
		case equalFold(name, "must-revalidate"):
			revalidate = true
		case equalFold(name, "max-age"):
			n, ok := deltaSeconds(value)
			if !ok {
				n = -1 // an invalid max-age is stale (RFC 9111 §4.2.1)
			}
			maxAge, hasMaxAge = n, true
		case equalFold(name, "stale-while-revalidate"):
			if n, ok := deltaSeconds(value); ok {
				swr = n
			}
		}
	})
	switch {
	case blocked || headerHasToken(fieldValues(h, "Pragma"), "no-cache"):
		return unregistrableBlocked
	case hasMaxAge && maxAge < 0:
		return unregistrableStale
	}
	if revalidate {
		swr = 0
	}
	now := time.Now()
	date, age := now, time.Duration(0)
	if t, ok := oneTime(h, "Date"); ok {
		date = t
		age = max(age, now.Sub(t))
	}
	if v := fieldValues(h, "Age"); len(v) == 1 {
		if n, ok := deltaSeconds(trimOWS(v[0])); ok {
			age = max(age, durationSeconds(n))
		}
	}
	var freshness time.Duration
	switch {
	case hasMaxAge:
		freshness = durationSeconds(maxAge)
	case len(fieldValues(h, "Expires")) > 0:
		if t, ok := oneTime(h, "Expires"); ok && t.After(date) {
			freshness = t.Sub(date)
		}
	case !revalidate:
		if t, ok := oneTime(h, "Last-Modified"); ok && !t.After(date) {
			freshness = date.Sub(t) / 10
		}
	}
	if freshness+durationSeconds(swr) > age {
		return ""
	}
	return unregistrableStale
}

// seconds returns n seconds as a Duration, the longest for those beyond it.
func durationSeconds(n int64) time.Duration {
	if n > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}

// fieldValues returns the values of the field name in h under any case of
// the name: net/http sends a key as it was written.
func fieldValues(h http.Header, name string) []string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if equalFold(k, name) {
			return v
		}
	}
	return nil
}

// oneTime parses the one value of the date field name in h; ok is false
// when it has none, more than one, or one that is not an HTTP date (which
// RFC 9111 §5.3 has a cache read as in the past).
func oneTime(h http.Header, name string) (t time.Time, ok bool) {
	v := fieldValues(h, name)
	if len(v) != 1 {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v[0])
	return t, err == nil
}

// dictRoute names what a dictionary response was refused under, for
// the log line of registrable: a WithDictionaryMatch pattern (which a
// FileServer's files share), a WithDictionary path, or a learned route.
// logged is set once its line was logged.
type dictRoute struct {
	kind, name string
	logged     atomic.Bool
}

// registrable reports whether a response to req with header h, given
// fresh as its Cache-Control when it has none, is one a browser registers
// as a dictionary (unregistrable); when it is not, it counts it
// ("unregistrable") and logs the first on its route. The log names the
// path alone: a query string may be a secret.
func (s *dictStore) registrable(h http.Header, fresh string, req *http.Request, route *dictRoute) bool {
	why := unregistrable(h, fresh)
	if why == "" {
		return true
	}
	s.learner.report(LearnedInfo{Step: learnedUnregistrable})
	if route.logged.CompareAndSwap(false, true) {
		s.learner.logf("squeeze: %s %q: a response to %s went out without Use-As-Dictionary, as a browser would not keep it as a dictionary (RFC 9842 section 2.2.1): %s (logged once per route; the counters count every one as unregistrable)",
			route.kind, route.name, req.URL.EscapedPath(), why)
	}
	return false
}

// dictVary is the Vary of a response on a dictionary path: whether it is a
// delta depends on Available-Dictionary, and on Sec-Fetch-Site too, since a
// cross-site request never gets one (RFC 9842 §9); without it a shared
// cache could hand a same-origin delta to a cross-site request. The file
// server's Vary, Accept-Encoding alone, becomes it as it is; a handler's
// gets the same tokens added (dictionaryHeaders, both).
//
// A same-site request's delta depends on Sec-Fetch-Mode and Origin as well
// (deltaSite), which Vary need not name: a browser sends
// Available-Dictionary only in CORS mode, so a no-cors request never
// matches a stored delta; and a delta stored for one origin carries the
// Access-Control-Allow-Origin that allowed it, which fails the CORS check
// of any origin it does not name, as the response without a delta would.
// A handler that writes that field from Origin varies on Origin already,
// as CORS asks.
const dictVary = "Accept-Encoding, Available-Dictionary, Sec-Fetch-Site"

// addVaryTokens adds each token to Vary unless it, or "*", is there.
func addVaryTokens(h http.Header, tokens ...string) {
	v := h["Vary"]
	if headerHasToken(v, "*") {
		return
	}
	var add []string
	for _, t := range tokens {
		if !headerHasToken(v, t) {
			add = append(add, t)
		}
	}
	if len(add) > 0 {
		h["Vary"] = append(v[:len(v):len(v)], strings.Join(add, ", "))
	}
}

// hasField reports whether h has the field name under any case: net/http
// sends a key as it was written.
func hasField(h http.Header, name string) bool {
	if _, ok := h[name]; ok {
		return true
	}
	for k := range h {
		if equalFold(k, name) {
			return true
		}
	}
	return false
}

// htmlLinks returns the Link values to the standalone dictionaries that a
// response carries: links on text/html (typed: contentType is the
// response's own, not sniffed), else nil.
func htmlLinks(links []string, typed bool, contentType string) []string {
	if len(links) == 0 || !typed || !matchTypes(htmlTypes, contentType) {
		return nil
	}
	return links
}

// pageLinks returns the Link values a response carries (typed: contentType
// is the response's own, not sniffed): on text/html, one to each standalone
// dictionary and to each learned route's newest live dictionary; else nil.
func (s *dictStore) pageLinks(typed bool, contentType string) []string {
	links := htmlLinks(s.links, typed, contentType)
	if len(s.learner.routes) == 0 || !typed || !matchTypes(htmlTypes, contentType) {
		return links
	}
	return s.learner.appendLinks(links)
}
