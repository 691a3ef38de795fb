package squeeze

import "net/http"

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
