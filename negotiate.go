package squeeze

import (
	"iter"

	"github.com/squeezehttp/squeeze/internal/pool"
)

// offer is one coding the middleware may answer with, and its encoders.
// A dictionary coding's offer carries its dictionary too (dictionary.go).
type offer struct {
	coding   string
	encoders *pool.Encoders
	dict     *dictionary
}

// dictionaryID returns the identity of the offer's dictionary, its SHA-256
// as a string, or "" when it has none.
func (o *offer) dictionaryID() string {
	if o.dict == nil {
		return ""
	}
	return string(o.dict.hash[:])
}

// qUnnamed is the weight of a coding the Accept-Encoding field does not name.
// Weights are qvalues in thousandths, 0..1000, so it sorts below every real
// weight, including the refusal q=0.
const qUnnamed = -1

// negotiate picks the coding for a response from the request's
// Accept-Encoding field lines (r.Header["Accept-Encoding"], nil when absent),
// following RFC 9110 §12.5.3. offers are the codings on offer in server
// preference order, with canonical lower-case names. It returns the index
// into offers of the chosen coding, or -1 for identity.
//
// The offered coding with the highest weight above zero wins, ties going to
// the earlier offer. Identity wins instead only when the client gives it
// (explicitly or through "*") a strictly higher weight, since compressing is
// the point of the middleware. When nothing is acceptable, not even identity,
// the answer is still -1: an unencoded response is more useful than a 406.
//
// Malformed list elements are ignored one by one, so a client's odd entry
// never costs it the codings it named correctly. negotiate does not allocate
// for up to eight offers.
func negotiate(acceptEncoding []string, offers []offer) int {
	if len(acceptEncoding) == 1 && isToken(acceptEncoding[0]) {
		// One bare coding, as Go's Transport sends ("gzip"): the list
		// has a single element of weight 1, so an offer of it wins.
		for i := range offers {
			if codingIs(acceptEncoding[0], offers[i].coding) {
				return i
			}
		}
	}
	var weightsBuf [8]int
	weights := weightsBuf[:0]
	if len(offers) > len(weightsBuf) {
		weights = make([]int, 0, len(offers))
	}
	for range offers {
		weights = append(weights, qUnnamed)
	}
	star, identity := qUnnamed, qUnnamed

	for token, q := range weightedTokens(acceptEncoding) {
		switch {
		case token == "*":
			star = mergeWeight(star, q)
		case equalFold(token, "identity"):
			identity = mergeWeight(identity, q)
		default:
			for i := range offers {
				if codingIs(token, offers[i].coding) {
					weights[i] = mergeWeight(weights[i], q)
				}
			}
		}
	}

	best, bestQ := -1, 0
	for i, q := range weights {
		if q == qUnnamed {
			q = star
		}
		if q > bestQ {
			best, bestQ = i, q
		}
	}
	if identity == qUnnamed {
		identity = star
	}
	if best < 0 || identity > bestQ {
		return -1
	}
	return best
}

// codingIs reports whether the Accept-Encoding token names the canonical
// coding, reading "x-gzip" as gzip (RFC 9110 §8.4.1.3).
func codingIs(token, coding string) bool {
	return equalFold(token, coding) || coding == Gzip && equalFold(token, "x-gzip")
}

// equalFold reports whether the ASCII strings s and t are equal ignoring
// case. Tokens, codings and media types are ASCII by their grammar (RFC 9110
// §5.6.2), so the Unicode folding of strings.EqualFold, which would take the
// Kelvin sign for a "k", is both slower and wrong here. It rejects most
// comparisons on length without looking at a byte.
func equalFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if a == b {
			continue
		}
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// mergeWeight combines the weights of two mentions of one coding. A refusal is
// final, whatever the other mention says; otherwise the higher weight
// counts.
func mergeWeight(old, q int) int {
	if old == 0 || q == 0 {
		return 0
	}
	return max(old, q)
}

// weightedTokens yields each well-formed element of the Accept-Encoding
// field lines as its token and weight (see parseElement); malformed
// elements are skipped one by one.
func weightedTokens(lines []string) iter.Seq2[string, int] {
	return func(yield func(string, int) bool) {
		for _, line := range lines {
			for line != "" {
				var element string
				element, line = nextElement(line)
				if token, q, ok := parseElement(element); ok && !yield(token, q) {
					return
				}
			}
		}
	}
}

// parseElement parses one list element, `coding [ OWS ";" OWS "q=" qvalue ]`
// with surrounding OWS, returning the coding token and its weight. ok is
// false for an empty or malformed element. Whitespace around "=" is
// tolerated although the grammar has none.
func parseElement(s string) (token string, q int, ok bool) {
	s = trimOWS(s)
	n := 0
	for n < len(s) && isTokenChar(s[n]) {
		n++
	}
	if n == 0 {
		return "", 0, false
	}
	token, s = s[:n], trimOWS(s[n:])
	if s == "" {
		return token, 1000, true
	}
	if s[0] != ';' {
		return "", 0, false
	}
	s = trimOWS(s[1:])
	if s == "" || (s[0] != 'q' && s[0] != 'Q') {
		return "", 0, false
	}
	s = trimOWS(s[1:])
	if s == "" || s[0] != '=' {
		return "", 0, false
	}
	q, ok = parseQvalue(trimOWS(s[1:]))
	return token, q, ok
}

// parseQvalue parses an RFC 9110 §12.4.2 qvalue,
// ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), into thousandths.
func parseQvalue(s string) (int, bool) {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	q := int(s[0]-'0') * 1000
	frac := s[1:]
	if frac == "" {
		return q, true
	}
	if frac[0] != '.' || len(frac) > 4 {
		return 0, false
	}
	scale := 100
	for i := 1; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	if q > 1000 {
		return 0, false
	}
	return q, true
}
