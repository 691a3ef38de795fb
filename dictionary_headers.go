package squeeze

import (
	"net/http"
	"strings"
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
// freshness its handler gave it, none included: the Middleware cannot tell
// a versioned asset from a page that must not be reused for a day, so such
// a handler sets a Cache-Control for browsers to keep its dictionaries.
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
//     (dictionaryRegistrable, through dictStore.registrable, which counts
//     the others);
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

// dictionaryRegistrable reports whether a browser stores a response with
// header h as a dictionary, fresh being the Cache-Control it gets when it
// has none ("" for none): RFC 9842 section 2.2.1 has the client keep one
// only while its response is fresh, and Chromium, the one client that
// does, registers none whose Cache-Control says no-cache, no-store or
// must-revalidate, nor one without freshness: a max-age above zero, a
// stale-while-revalidate above zero, or, without max-age, an Expires
// later than its Date (or now). s-maxage, for shared caches, does not
// count. A Use-As-Dictionary the client ignores only costs a remembered
// body and misleads whoever reads the header, so none is sent.
func dictionaryRegistrable(h http.Header, fresh string) bool {
	if !hasField(h, "Cache-Control") {
		if fresh == "" {
			return expiresLater(h)
		}
		h = http.Header{"Cache-Control": {fresh}}
	}
	blocked, maxAge, hasMaxAge, swr := false, int64(0), false, int64(0)
	eachCacheDirective(h, func(name, value string) {
		switch {
		case equalFold(name, "no-cache"), equalFold(name, "no-store"), equalFold(name, "must-revalidate"):
			blocked = true
		case equalFold(name, "max-age"):
			n, ok := deltaSeconds(value)
			if !ok {
				blocked = true // an invalid max-age is stale (RFC 9111 §4.2.1)
			}
			maxAge, hasMaxAge = n, true
		case equalFold(name, "stale-while-revalidate"):
			if n, ok := deltaSeconds(value); ok {
				swr = n
			}
		}
	})
	switch {
	case blocked:
		return false
	case maxAge > 0 || swr > 0:
		return true
	case hasMaxAge:
		return false
	}
	return expiresLater(h)
}

// expiresLater reports whether h has one Expires later than its Date, or
// than now without one.
func expiresLater(h http.Header) bool {
	v := h.Values("Expires")
	if len(v) != 1 {
		return false
	}
	exp, err := http.ParseTime(v[0])
	if err != nil {
		return false
	}
	now := time.Now()
	if d := h.Values("Date"); len(d) == 1 {
		if t, err := http.ParseTime(d[0]); err == nil {
			now = t
		}
	}
	return exp.After(now)
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
