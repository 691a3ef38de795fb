package squeeze

import (
	"iter"
	"strings"
)

// This file holds the one reader of RFC 9110 comma-separated lists
// (§5.6.1) that every header parser in the package shares: Accept-Encoding
// negotiation, Content-Encoding of request bodies, token look-ups such as
// Vary and Cache-Control, and entity-tag lists.

// nextElement splits a field line at its first comma outside a
// quoted-string (RFC 9110 §5.6.1), where a backslash escapes the next byte.
// Accept-Encoding has no quoted parameters, but a client's malformed
// extension such as `br;x="a,gzip"` must not smuggle in a list element of
// its own.
func nextElement(line string) (element, rest string) {
	return splitElement(line, true)
}

// nextTag splits a list of entity tags (If-None-Match, If-Match) at its
// first comma outside a tag. An entity tag has no escapes (RFC 9110
// §8.8.3): a backslash in one is an ordinary byte, so `"a\", "b"` is two
// tags.
func nextTag(line string) (element, rest string) {
	return splitElement(line, false)
}

// splitElement is nextElement, with backslash escapes inside quotes when
// quotedPairs is set, and nextTag otherwise.
func splitElement(line string, quotedPairs bool) (element, rest string) {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quoted && quotedPairs && c == '\\':
			i++ // quoted-pair: the next byte is literal
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}

// contentCodings yields the codings the Content-Encoding field lines name,
// in the order applied, each as written with the space around it trimmed;
// empty elements and identity, which changes nothing, are skipped. Request
// decoding and the Transport's response decoding both read the field so.
func contentCodings(lines []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range lines {
			for v != "" {
				var token string
				token, v = nextElement(v)
				token = trimOWS(token)
				if token == "" || strings.EqualFold(token, "identity") {
					continue
				}
				if !yield(token) {
					return
				}
			}
		}
	}
}

// headerHasToken reports whether the comma-separated field lines contain
// token, compared case-insensitively, ignoring any parameters after ";". It
// does not allocate.
func headerHasToken(lines []string, token string) bool {
	for _, line := range lines {
		for line != "" {
			var elem string
			elem, line = nextElement(line)
			if i := strings.IndexByte(elem, ';'); i >= 0 {
				elem = elem[:i]
			}
			if equalFold(trimOWS(elem), token) {
				return true
			}
		}
	}
	return false
}

// trimOWS removes optional whitespace (SP and HTAB) from both ends of s.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// tokenCharsLo and tokenCharsHi have bit c (c-64 for Hi) set for each
// tchar c of RFC 9110 §5.6.2: "!#$%&'*+-.^_`|~", digits and letters.
// They are uint64, not int, so that the package builds where int is 32 bits.
const tokenCharsLo, tokenCharsHi uint64 = 0x03ff_6cfa_0000_0000, 0x57ff_ffff_c7ff_fffe

// isTokenChar reports whether c is an RFC 9110 §5.6.2 tchar.
func isTokenChar(c byte) bool {
	if c < 64 {
		return tokenCharsLo&(1<<c) != 0
	}
	return c < 128 && tokenCharsHi&(1<<(c-64)) != 0
}

// isToken reports whether s is a non-empty RFC 9110 §5.6.2 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}
