package squeeze

import (
	"net/http"
	"strings"
)

// A strong ETag names one representation, and the encoded body is a
// different one from the plain body (RFC 9110 §8.8.3.3), so a compressed
// response carries the handler's tag with the coding appended:
// "abc" becomes "abc-zstd". Weak tags already allow equivalent bodies and
// are left alone.

// suffixETag makes a strong ETag in h specific to coding.
func suffixETag(h http.Header, coding string) {
	v := h["Etag"]
	if len(v) != 1 || !isStrongETag(v[0]) {
		return
	}
	tag := v[0]
	// A new slice: the handler may share its header values between
	// responses.
	h["Etag"] = []string{tag[:len(tag)-1] + "-" + coding + `"`}
}

func isStrongETag(tag string) bool {
	return len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"'
}

// stripETagSuffixes undoes suffixETag in the request's preconditions, so
// the handler (or http.ServeContent) compares the tags it knows. If-None-Match
// loses only the suffix of the coding this response would use: a tag for
// another coding names a representation this response will not be. If-Match
// guards a state change, and any coding's tag names the same stored state,
// so every offered coding's suffix is stripped. The request is copied, with
// a cloned header, only when something changes.
func (cw *responseWriter) stripETagSuffixes(r *http.Request) *http.Request {
	inm, im := r.Header["If-None-Match"], r.Header["If-Match"]
	if len(inm) == 0 && len(im) == 0 {
		return r
	}
	var newINM, newIM string
	var changedINM, changedIM bool
	if len(inm) > 0 && cw.offer >= 0 {
		coding := cw.m.offers[cw.offer].coding
		newINM, changedINM = stripTags(inm, func(string) string { return coding })
	}
	if len(im) > 0 {
		newIM, changedIM = stripTags(im, cw.m.offeredSuffix)
	}
	if !changedINM && !changedIM {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	if changedINM {
		cw.clientHasCoded = true
		r2.Header["If-None-Match"] = []string{newINM}
	}
	if changedIM {
		r2.Header["If-Match"] = []string{newIM}
	}
	return r2
}

// offeredSuffix returns the offered coding whose suffix ends the opaque
// tag, or "".
func (m *Middleware) offeredSuffix(opaque string) string {
	for _, o := range m.offers {
		if strings.HasSuffix(opaque, "-"+o.coding) {
			return o.coding
		}
	}
	return ""
}

// stripTags rewrites a list of entity tags (RFC 9110 §8.8.3), removing
// "-coding" from the end of each strong tag for which suffixOf returns a
// coding that the tag really ends with. It reports whether anything changed.
// Elements that are not well-formed tags ("*" included) are kept as they are.
func stripTags(lines []string, suffixOf func(opaque string) string) (string, bool) {
	var b strings.Builder
	changed := false
	for _, line := range lines {
		for rest := line; ; {
			rest = strings.TrimLeft(rest, " \t,")
			if rest == "" {
				break
			}
			// A tag may contain commas inside its quotes, so find its
			// end by the closing quote rather than by splitting.
			tag, weak := rest, false
			if strings.HasPrefix(tag, "W/") {
				tag, weak = tag[2:], true
			}
			end := -1
			if strings.HasPrefix(tag, `"`) {
				if i := strings.IndexByte(tag[1:], '"'); i >= 0 {
					end = i + 2
				}
			}
			var elem string
			if end < 0 {
				// Not a tag: keep up to the next comma.
				elem, rest, _ = strings.Cut(rest, ",")
				elem = strings.TrimSpace(elem)
			} else {
				elem = rest[:len(rest)-len(tag)+end]
				rest = tag[end:]
				if !weak {
					opaque := tag[1 : end-1]
					if coding := suffixOf(opaque); coding != "" && strings.HasSuffix(opaque, "-"+coding) {
						elem = `"` + strings.TrimSuffix(opaque, "-"+coding) + `"`
						changed = true
					}
				}
			}
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(elem)
		}
	}
	return b.String(), changed
}
