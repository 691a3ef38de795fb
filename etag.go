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
//
// Requests come back with the suffixed tags in their preconditions, which
// the handler does not know. withPlainTags adds each tag's plain form next
// to it, and a 304 carries the suffixed tag when that is the one the
// client named.

// suffixETag makes a strong ETag in h specific to coding. A tag set under
// the non-canonical key "ETag" or with surrounding spaces counts too; it is
// moved to the canonical key, so the response carries one validator.
func suffixETag(h http.Header, coding string) {
	key, v := etagField(h)
	if len(v) != 1 {
		return
	}
	tag := trimOWS(v[0])
	if !isStrongETag(tag) {
		return
	}
	if key != "Etag" {
		delete(h, key)
	}
	// A new slice: the handler may share its header values between
	// responses.
	h["Etag"] = []string{codedTag(tag, coding)}
}

// etagField returns the key and values of the ETag field in h: the
// canonical key, or else "ETag", the spelling a handler that assigns to the
// map directly is most likely to use. Two look-ups rather than a pass over
// the map, which would cost every response without an ETag.
func etagField(h http.Header) (string, []string) {
	if v, ok := h["Etag"]; ok {
		return "Etag", v
	}
	//lint:ignore SA1008 the non-canonical key is the point: a handler that assigns to the map directly leaves it as written
	if v, ok := h["ETag"]; ok { //nolint:staticcheck // SA1008, as above
		return "ETag", v
	}
	return "", nil
}

// codedTag returns the strong tag with the coding's suffix.
func codedTag(tag, coding string) string {
	return tag[:len(tag)-1] + "-" + coding + `"`
}

func isStrongETag(tag string) bool {
	return len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"'
}

// entityTag splits a list element into its opaque part and weakness. ok is
// false for anything but a well-formed entity-tag ("*" included).
func entityTag(elem string) (opaque string, weak, ok bool) {
	elem = trimOWS(elem)
	if strings.HasPrefix(elem, "W/") {
		elem, weak = elem[2:], true
	}
	if !isStrongETag(elem) || strings.IndexByte(elem[1:len(elem)-1], '"') >= 0 {
		return "", false, false
	}
	return elem[1 : len(elem)-1], weak, true
}

// withPlainTags returns r, whose If-None-Match and If-Match field lines are
// inm and im, with the plain form of every suffixed tag added to its
// preconditions, next to the tag as sent, so that the handler (or
// [http.ServeContent]) finds the tags it knows and a tag of its own that
// happens to end like a suffix ("doc-pt-br") still matches as it is.
//
// If-None-Match gains the plain forms for coding, the coding this response
// will use ("" for none): a tag for another coding names a representation
// this response will not be. Weak tags count, since If-None-Match compares
// weakly (RFC 9110 §13.1.2). If-Match guards a state change, and any
// coding's tag names the same stored state, so it gains the plain form for
// every offered coding, for strong tags only, since it compares strongly.
// The request is copied, with a cloned header, only when something is
// added.
func withPlainTags(r *http.Request, inm, im []string, coding string, offers []offer) *http.Request {
	if len(inm) == 0 && len(im) == 0 {
		return r
	}
	var newINM, newIM string
	var changedINM, changedIM bool
	if len(inm) > 0 && coding != "" {
		newINM, changedINM = addPlainTags(inm, true, func(opaque string) string {
			if strings.HasSuffix(opaque, "-"+coding) {
				return coding
			}
			return ""
		})
	}
	if len(im) > 0 {
		newIM, changedIM = addPlainTags(im, false, func(opaque string) string {
			for _, o := range offers {
				if strings.HasSuffix(opaque, "-"+o.coding) {
					return o.coding
				}
			}
			// The dictionary codings are never in offers.
			for _, coding := range [...]string{DCZ, DCB} {
				if strings.HasSuffix(opaque, "-"+coding) {
					return coding
				}
			}
			return ""
		})
	}
	if !changedINM && !changedIM {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	if changedINM {
		r2.Header["If-None-Match"] = []string{newINM}
	}
	if changedIM {
		r2.Header["If-Match"] = []string{newIM}
	}
	return r2
}

// addPlainTags rewrites a list of entity tags (RFC 9110 §8.8.3) as one
// line, following each tag whose opaque part ends in "-" plus the coding
// suffixOf returns with the same tag without that suffix. Weak tags are
// considered only when weakToo is set. It reports whether anything was
// added. Elements that are not well-formed tags ("*" included) are kept as
// they are; empty ones are dropped.
func addPlainTags(lines []string, weakToo bool, suffixOf func(opaque string) string) (string, bool) {
	var b strings.Builder
	added := false
	put := func(s string) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	for _, line := range lines {
		for line != "" {
			var elem string
			elem, line = nextTag(line)
			elem = trimOWS(elem)
			if elem == "" {
				continue
			}
			put(elem)
			opaque, weak, ok := entityTag(elem)
			if !ok || weak && !weakToo {
				continue
			}
			if coding := suffixOf(opaque); coding != "" {
				plain := `"` + strings.TrimSuffix(opaque, "-"+coding) + `"`
				if weak {
					plain = "W/" + plain
				}
				put(plain)
				added = true
			}
		}
	}
	return b.String(), added
}

// notModifiedETag gives a 304 the tag of the representation it confirms
// (RFC 9110 §15.4.5). When If-None-Match names tags, the client said which
// it holds: the suffixed form of the handler's tag if it named that, the
// plain one otherwise. When it names none (If-Modified-Since alone, or
// "*"), the 304 should carry the tag its 200 would, but a 304 has no body
// to show whether that 200 was long enough to encode, and
// [http.ServeContent] drops its Content-Type: the tag is suffixed only when
// the handler declared a type to compress, and never when it already ends
// like a coded tag (a handler that encodes for itself, such as a
// [Middleware.FileServer] behind a Middleware, sends its 304 with the tag of its
// encoded 200). Otherwise the handler's tag goes out as it is. Vary, by
// contrast, is added where unsure (notModifiedVaries): one too many costs
// a cache some sharing, a wrong tag a revalidation.
//
// coding is the negotiated coding, inm the request's If-None-Match and
// types the content types to compress.
func notModifiedETag(h http.Header, coding string, inm []string, types []typePattern) {
	_, v := etagField(h)
	if len(v) != 1 {
		return
	}
	tag := trimOWS(v[0])
	if !isStrongETag(tag) {
		return
	}
	star := len(inm) == 1 && trimOWS(inm[0]) == "*"
	switch {
	case len(inm) > 0 && !star:
		if !listHasTag(inm, codedTag(tag, coding)) {
			return
		}
	case !declaresEligibleType(types, h) || endsLikeCodedTag(tag):
		return
	}
	suffixETag(h, coding)
}

// declaresEligibleType reports whether h declares a Content-Type that is
// one to compress.
func declaresEligibleType(types []typePattern, h http.Header) bool {
	ct := h["Content-Type"]
	return len(ct) > 0 && matchTypes(types, ct[0])
}

// endsLikeCodedTag reports whether the strong tag ends with the suffix of
// a coding squeeze knows, as the tags it makes do.
func endsLikeCodedTag(tag string) bool {
	opaque := tag[1 : len(tag)-1]
	for _, coding := range [...]string{Zstd, Brotli, Gzip, Deflate, DCZ, DCB} {
		if strings.HasSuffix(opaque, "-"+coding) {
			return true
		}
	}
	return false
}

// notModifiedVaries reports whether a 304 stands for a response that
// varies with Accept-Encoding. [http.ServeContent] removes Content-Type
// before a 304, so a missing type counts as one that could be compressed.
func notModifiedVaries(types []typePattern, h http.Header) bool {
	_, typed := h["Content-Type"]
	return !typed || declaresEligibleType(types, h)
}

// listHasTag reports whether the entity-tag list names tag, compared
// weakly. It does not allocate.
func listHasTag(lines []string, tag string) bool {
	want := tag[1 : len(tag)-1]
	for _, line := range lines {
		for line != "" {
			var elem string
			elem, line = nextTag(line)
			if opaque, _, ok := entityTag(elem); ok && opaque == want {
				return true
			}
		}
	}
	return false
}

// ifRangeNeverHolds reports whether an If-Range field (RFC 9110 §13.1.5)
// names an entity tag the handler's representation cannot match, so that
// the Range it guards is to be ignored and the whole body sent: a weak
// tag, which never matches (If-Range compares strongly), or a strong tag
// with a coding's suffix, which names an encoded representation squeeze
// made, whose bytes the handler cannot cut a range from. That whole body
// may then go out encoded, in the coding the client holds the start of;
// left as a Range request it would go out plain, another representation
// than the client's. An HTTP-date, or a plain tag, is the handler's to
// judge.
func ifRangeNeverHolds(lines []string) bool {
	if len(lines) != 1 {
		return false
	}
	v := trimOWS(lines[0])
	_, weak, ok := entityTag(v)
	return ok && (weak || endsLikeCodedTag(v))
}

// withoutRange returns a copy of r without Range and If-Range, with a
// cloned header: the request the handler sees when its If-Range never
// holds (ifRangeNeverHolds).
func withoutRange(r *http.Request) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	delete(r2.Header, "Range")
	delete(r2.Header, "If-Range")
	return r2
}
