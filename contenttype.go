package squeeze

import (
	"fmt"
	"strings"
)

// Content-type patterns: the WithContentTypes syntax and the matcher that
// decides whether a response's media type is one to compress.

// parseTypePattern checks a WithContentTypes pattern and returns it in
// lower case. Its errors say what is wrong with the pattern; the option
// names the call.
func parseTypePattern(p string) (string, error) {
	lower := strings.ToLower(strings.TrimSpace(p))
	typ, sub, ok := strings.Cut(lower, "/")
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("pattern %q %s", p, why)
	}
	switch {
	case !ok || typ == "" || sub == "":
		return bad("is not of the form type/subtype")
	case !isTypePatternText(typ) || !isTypePatternText(sub):
		return bad("has characters a media type cannot have (parameters, spaces, a second /)")
	case strings.Contains(typ, "*") && typ != "*":
		return bad("has a partial wildcard in its type")
	case sub == "*":
		return lower, nil
	case strings.HasPrefix(sub, "*+"):
		if len(sub) == 2 || strings.Contains(sub[2:], "*") {
			return bad("has an empty or wildcard suffix")
		}
		return lower, nil
	case strings.Contains(sub, "*"):
		return bad("has a wildcard that is neither * nor *+suffix")
	case typ == "*":
		return bad("has a wildcard type with a concrete subtype")
	}
	return lower, nil
}

// isTypePatternText reports whether s is made of token characters and the
// wildcard "*".
func isTypePatternText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '*' && !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// matchType reports whether the Content-Type value ct (parameters allowed)
// matches one of the lower-case patterns. It does not allocate.
func matchType(patterns []string, ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	typ, sub, ok := strings.Cut(ct, "/")
	if !ok || typ == "" || sub == "" || strings.IndexByte(sub, '/') >= 0 {
		return false // not a media type
	}
	for _, p := range patterns {
		ptyp, psub, _ := strings.Cut(p, "/")
		if ptyp != "*" && !strings.EqualFold(ptyp, typ) {
			continue
		}
		switch {
		case psub == "*":
			return true
		case strings.HasPrefix(psub, "*+"):
			suffix := psub[1:] // "+json"
			if len(sub) > len(suffix) && strings.EqualFold(sub[len(sub)-len(suffix):], suffix) {
				return true
			}
		case strings.EqualFold(psub, sub):
			return true
		}
	}
	return false
}
