package squeeze

import (
	"math"
	"net/http"
	"strings"
)

// This file holds the one rule for what squeeze may share beyond the
// client that asked: a body becomes a dictionary (local or in the fleet's
// store), a stored encoding in a SharedStore, or training data for a
// learned dictionary only if publicResponse says so. The Cache keeps its
// own, looser rule for what one process may reuse (cacheFields, RFC 9111
// §3.5), since it never hands a body to another replica.

// publicResponse reports whether the response whose header is resp, to a
// request whose header is req, may be shared with other clients: it is
// not marked private or no-store, sets no cookie, does not vary on
// everything (Vary: *), and, when the request carried credentials
// (Authorization or Cookie, under any case), the response says
// Cache-Control: public explicitly. s-maxage and must-revalidate, which
// let a shared cache reuse an answer to Authorization (RFC 9111 §3.5), do
// not count: a page rendered for a logged-in user with a cookie often
// carries them and still holds that user's data.
func publicResponse(req, resp http.Header) bool {
	cf := readCacheFields(resp)
	if cf.never {
		return false
	}
	return cf.public || !hasCredentials(req)
}

// hasCredentials reports whether a request header carries Authorization
// or Cookie, under any case of the name.
func hasCredentials(h http.Header) bool {
	if len(h["Authorization"]) > 0 || len(h["Cookie"]) > 0 {
		return true
	}
	for k, v := range h {
		if len(v) > 0 && (equalFold(k, "Authorization") || equalFold(k, "Cookie")) {
			return true
		}
	}
	return false
}

// sampleRefusal says why a response may not become training data for a
// learned dictionary (learnedSampleable), sampleOK when it may.
type sampleRefusal uint8

const (
	sampleOK sampleRefusal = iota
	// samplePrivate: the response is private, no-store, sets a cookie or
	// varies on everything (Vary: *).
	samplePrivate
	// sampleUnmarked: it says nothing of sharing: neither public nor a
	// max-age or s-maxage.
	sampleUnmarked
	// sampleCredentials: the request carried credentials (Authorization,
	// Cookie, Proxy-Authorization, or a header the operator named:
	// LearnedCredentialHeaders) and the response has a freshness but not
	// public, or varies on one of those it carried.
	sampleCredentials
	// sampleQuery: it has a freshness but not public, and the request's
	// URL may carry a secret (a share or reset link): it had a query
	// string, or a path segment that looks like a token (pathHasToken).
	sampleQuery
	// sampleType: of a content type squeeze does not compress.
	sampleType
)

// learnedSampleable returns whether a response whose header is resp, to
// req, may be sampled to train a learned dictionary, which is published
// to everyone, and if not, why: only one that says it may be shared with
// anyone is. That is stricter than publicResponse, which the fleet's
// stored encodings and remembered dictionaries follow: those go only to a
// client that asks for the same URL or names the dictionary by hash,
// while a learned dictionary is linked from every page. So
// Cache-Control: public lets a response in whatever its request carried
// (unless it varies on credentials the request carried), and a max-age or
// s-maxage (above zero) does only for a request whose URL carries no sign
// of a secret, neither a query string nor a path segment that looks like
// a token (a capability URL such as /docs/7?key=... or /reset/k7Qx9f...
// sends no cookie and often no Cache-Control), and no credentials of any
// kind: Cookie, Authorization, Proxy-Authorization, and the header names
// of creds. A response that says nothing of sharing is never sampled.
// creds are canonical header names.
func learnedSampleable(req *http.Request, resp http.Header, creds []string) sampleRefusal {
	cf := readCacheFields(resp)
	if cf.never {
		return samplePrivate
	}
	if variesOnSentCredentials(req.Header, resp, creds) {
		return sampleCredentials
	}
	if cf.public {
		return sampleOK
	}
	if !sharedFreshness(resp) {
		return sampleUnmarked
	}
	if hasCredentials(req.Header) || len(req.Header["Proxy-Authorization"]) > 0 || hasAnyField(req.Header, creds) {
		return sampleCredentials
	}
	if req.URL.RawQuery != "" || req.URL.ForceQuery || strings.Contains(req.RequestURI, "?") || pathHasToken(req.URL.Path) {
		return sampleQuery
	}
	return sampleOK
}

// A path segment with at least tokenLetters letters and digits that
// change from one to the other at least tokenChanges times looks like a
// token (pathHasToken). Random letters and digits change about every
// fourth character (base64) or every second (hex), so a 22-character
// base64 token changes about five times and a UUID a dozen; a word, a
// dated slug (2026-12-07-release-notes: once) or a version (python3.12:
// once) seldom does.
const (
	tokenLetters = 16
	tokenChanges = 4
)

// pathHasToken reports whether a segment of path looks like a secret, a
// reset, share or download token, by the count of its letters and digits
// and of the changes between the two (tokenLetters, tokenChanges); other
// bytes, such as '-', '_' and '.', are skipped. It reads path once. A
// guess that errs toward not sampling: a token of letters alone passes,
// which is why the docs say to leave paths that carry secrets out of a
// learned route's pattern.
func pathHasToken(path string) bool {
	letters, changes, last := 0, 0, byte(0)
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if letters >= tokenLetters && changes >= tokenChanges {
				return true
			}
			letters, changes, last = 0, 0, 0
			continue
		}
		var class byte
		switch c := path[i]; {
		case '0' <= c && c <= '9':
			class = '0'
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			class = 'a'
		default:
			continue
		}
		if last != 0 && class != last {
			changes++
		}
		letters++
		last = class
	}
	return false
}

// variesOnSentCredentials reports whether a Vary field of resp names a
// credential field (Cookie, Authorization, Proxy-Authorization or one of
// creds) that req carries: even under Cache-Control public such a
// response is for the holders of those credentials alone, since a shared
// cache gives it only to requests that carry the same ones.
func variesOnSentCredentials(req, resp http.Header, creds []string) bool {
	for k, lines := range resp {
		if cacheFieldName(k) != "Vary" {
			continue
		}
		for _, line := range lines {
			for line != "" {
				var name string
				name, line = nextElement(line)
				name = trimOWS(name)
				for _, c := range [...]string{"Cookie", "Authorization", "Proxy-Authorization"} {
					if equalFold(name, c) && hasAnyField(req, []string{c}) {
						return true
					}
				}
				for _, c := range creds {
					if equalFold(name, c) && hasAnyField(req, []string{c}) {
						return true
					}
				}
			}
		}
	}
	return false
}

// sharedFreshness reports whether the Cache-Control of h gives a shared
// cache a freshness: max-age or s-maxage above zero.
func sharedFreshness(h http.Header) bool {
	fresh := false
	eachCacheDirective(h, func(name, value string) {
		if equalFold(name, "max-age") || equalFold(name, "s-maxage") {
			if n, ok := deltaSeconds(value); ok && n > 0 {
				fresh = true
			}
		}
	})
	return fresh
}

// hasAnyField reports whether h has a value for any of names (canonical),
// under any case of the name.
func hasAnyField(h http.Header, names []string) bool {
	for _, name := range names {
		if len(h[name]) > 0 {
			return true
		}
	}
	if len(names) == 0 {
		return false
	}
	for k, v := range h {
		if len(v) == 0 {
			continue
		}
		for _, name := range names {
			if equalFold(k, name) {
				return true
			}
		}
	}
	return false
}

// eachCacheDirective calls f with the name and value (unquoted, "" for
// none) of each directive of the Cache-Control fields of h, under any
// case of the field name.
func eachCacheDirective(h http.Header, f func(name, value string)) {
	for k, lines := range h {
		if cacheFieldName(k) != "Cache-Control" {
			continue
		}
		for _, line := range lines {
			for line != "" {
				var d string
				d, line = nextElement(line)
				name, value, _ := strings.Cut(d, "=")
				value = trimOWS(value)
				if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
					value = value[1 : len(value)-1]
				}
				f(trimOWS(name), value)
			}
		}
	}
}

// deltaSeconds parses a delta-seconds value (RFC 9111 §1.2.2): digits, a
// value too large for an int64 read as the largest.
func deltaSeconds(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
