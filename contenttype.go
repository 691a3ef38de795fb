package squeeze

import (
	"fmt"
	"slices"
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

// typePattern is a WithContentTypes pattern taken apart once, so that
// matching a response's type costs no parsing of the patterns.
type typePattern struct {
	typ string // "*" for any
	sub string // "*" for any; the suffix with its "+" ("+json") when suffix is set
	// suffix is set for a structured-suffix pattern, "type/*+suffix".
	suffix bool
	// except is set for a pattern of WithoutContentTypes: a type it
	// matches is not compressed.
	except bool
}

// compileTypes takes the lower-case patterns apart.
func compileTypes(patterns []string) []typePattern {
	return compileTypesExcept(patterns, nil)
}

// compileTypesExcept takes apart the patterns to compress and, before
// them, the patterns not to compress, so that matchTypes meets an
// exclusion first.
func compileTypesExcept(patterns, except []string) []typePattern {
	out := make([]typePattern, 0, len(except)+len(patterns))
	for i, p := range append(slices.Clone(except), patterns...) {
		typ, sub, _ := strings.Cut(p, "/")
		tp := typePattern{typ: typ, sub: sub, except: i < len(except)}
		if rest, ok := strings.CutPrefix(sub, "*+"); ok {
			tp.sub, tp.suffix = "+"+rest, true
		}
		out = append(out, tp)
	}
	return out
}

// matchTypes reports whether the Content-Type value ct (parameters allowed)
// matches one of the compiled patterns, and no exclusion before it. It
// does not allocate.
func matchTypes(patterns []typePattern, ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = trimOWS(ct)
	typ, sub, ok := strings.Cut(ct, "/")
	if !ok || !isToken(typ) || !isToken(sub) {
		return false // not a media type (RFC 9110 §8.3.1)
	}
	for _, p := range patterns {
		if p.typ != "*" && !equalFold(p.typ, typ) {
			continue
		}
		switch {
		case p.sub == "*":
			return !p.except
		case p.suffix:
			if len(sub) > len(p.sub) && equalFold(sub[len(sub)-len(p.sub):], p.sub) {
				return !p.except
			}
		case equalFold(p.sub, sub):
			return !p.except
		}
	}
	return false
}

// Compresses reports whether m compresses responses of the media type ct
// (parameters allowed), as [WithContentTypes] configured it. The command
// squeeze precompress asks the defaults which files to precompress.
func (m *Middleware) Compresses(ct string) bool {
	if m == nil || m.buffers == nil {
		m = defaultMiddleware()
	}
	return matchTypes(m.types, ct)
}
