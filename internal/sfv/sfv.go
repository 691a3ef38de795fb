// Package sfv parses and serialises the parts of RFC 8941 structured field
// values that squeeze needs: sf-strings, byte sequences, and dictionaries
// whose members are items or inner lists, with parameters. Parsing is one
// pass over the field, in time linear in its length, and refuses anything
// RFC 8941 does not admit; a caller that needs a member's value of a kind
// gets it, and members of other kinds parse and are skipped.
package sfv

import (
	"encoding/base64"
	"strings"
)

// Kind is the kind of a dictionary member's value.
type Kind uint8

// The kinds of value ParseDictionary reports.
const (
	Bare      Kind = iota // a key with no value: boolean true
	String                // an sf-string; Value.Str holds it unescaped
	Token                 // an sf-token; Value.Str holds it
	Other                 // an integer, decimal, byte sequence or boolean
	InnerList             // an inner list; Value.Len counts its items
)

// Value is the value of a dictionary member, without its parameters.
type Value struct {
	Kind Kind
	Str  string // for String and Token
	Len  int    // items of an InnerList
}

// ParseDictionary parses field as an RFC 8941 dictionary (§4.2.2) and calls
// member for each member in order, with its key and value; parameters are
// checked and ignored. It reports false when the field is empty or does not
// parse, or as soon as member returns false. Leading and trailing OWS (space
// and tab) are allowed, as HTTP field values have them trimmed.
func ParseDictionary(field string, member func(key string, v Value) bool) bool {
	p := parser{s: field}
	p.ows()
	if p.done() {
		return false
	}
	for {
		key, ok := p.key()
		if !ok {
			return false
		}
		v, ok := p.itemOrInnerList()
		if !ok || !member(key, v) {
			return false
		}
		p.ows()
		if p.done() {
			return true
		}
		if !p.eat(',') {
			return false
		}
		p.ows()
		if p.done() {
			return false // a trailing comma
		}
	}
}

// QuoteString serialises s as an RFC 8941 §3.3.3 sf-string: in double
// quotes, with '"' and '\' escaped. ok is false if s has a byte outside
// printable ASCII, which an sf-string cannot hold.
func QuoteString(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", false
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), true
}

// Binary serialises b as an RFC 8941 §3.3.5 byte sequence: ":base64:".
func Binary(b []byte) string {
	return ":" + base64.StdEncoding.EncodeToString(b) + ":"
}

// binaryChunk is how many base64 characters ParseBinary decodes at once,
// through a buffer on its stack: a multiple of 4, so that every chunk but
// the last is whole quads.
const binaryChunk = 64

// ParseBinary parses field, an RFC 8941 byte sequence with nothing else
// (no parameters), into dst and returns the bytes decoded. The base64 may
// lack its padding (§4.2.7: parsers should not fail on it), but must use
// the standard alphabet and leave no non-zero trailing bits. It reports
// false for anything else, and when the bytes would not fit dst. Leading
// and trailing OWS are allowed. It does not allocate.
func ParseBinary(dst []byte, field string) (int, bool) {
	s := strings.Trim(field, " \t")
	if len(s) < 2 || s[0] != ':' || s[len(s)-1] != ':' {
		return 0, false
	}
	s = s[1 : len(s)-1]
	if base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(s, "="))) > len(dst) {
		return 0, false
	}
	var buf [binaryChunk]byte
	n := 0
	for len(s) > 0 {
		chunk := s[:min(len(s), binaryChunk)]
		s = s[len(chunk):]
		enc := base64.StdEncoding.Strict()
		if len(s) == 0 && len(chunk)%4 != 0 {
			enc = base64.RawStdEncoding.Strict()
		}
		k := copy(buf[:], chunk)
		m, err := enc.Decode(dst[n:], buf[:k])
		if err != nil {
			return 0, false
		}
		n += m
	}
	return n, true
}

// parser reads a structured field.
type parser struct {
	s string
	i int
}

func (p *parser) done() bool { return p.i >= len(p.s) }

func (p *parser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *parser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *parser) ows() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) sp() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

// key reads an RFC 8941 key: lcalpha or "*", then lcalpha, DIGIT, "_", "-",
// "." or "*".
func (p *parser) key() (string, bool) {
	start := p.i
	c := p.peek()
	if !isKeyStart(c) {
		return "", false
	}
	for !p.done() && isKeyChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i], true
}

func isKeyStart(c byte) bool { return c >= 'a' && c <= 'z' || c == '*' }

func isKeyChar(c byte) bool {
	return isKeyStart(c) || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// isTokenChar reports whether c is a tchar of RFC 9110 §5.6.2.
func isTokenChar(c byte) bool {
	return c < 0x80 && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 ||
		c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// itemOrInnerList reads "=value;params" after a dictionary key, or just
// ";params" for a bare key.
func (p *parser) itemOrInnerList() (Value, bool) {
	if !p.eat('=') {
		return Value{Kind: Bare}, p.params()
	}
	var v Value
	var ok bool
	if p.peek() == '(' {
		v, ok = p.innerList()
	} else {
		v, ok = p.bareItem()
	}
	if !ok {
		return v, false
	}
	return v, p.params()
}

func (p *parser) innerList() (Value, bool) {
	p.i++ // '('
	v := Value{Kind: InnerList}
	for {
		p.sp()
		if p.eat(')') {
			return v, true
		}
		if _, ok := p.bareItem(); !ok {
			return v, false
		}
		if !p.params() {
			return v, false
		}
		v.Len++
		if c := p.peek(); c != ' ' && c != ')' {
			return v, false
		}
	}
}

// params reads (";" key ["=" bare-item])* and ignores them.
func (p *parser) params() bool {
	for p.eat(';') {
		p.sp()
		if _, ok := p.key(); !ok {
			return false
		}
		if p.eat('=') {
			if _, ok := p.bareItem(); !ok {
				return false
			}
		}
	}
	return true
}

func (p *parser) bareItem() (Value, bool) {
	c := p.peek()
	switch {
	case p.done():
		return Value{}, false
	case c == '"':
		return p.str()
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '*':
		start := p.i
		p.i++
		for !p.done() && (isTokenChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return Value{Kind: Token, Str: p.s[start:p.i]}, true
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		p.i++
		for !p.done() && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
			p.i++
		}
		if p.s[start:p.i] == "-" {
			return Value{}, false
		}
		return Value{Kind: Other}, true
	case c == '?':
		p.i++
		if c := p.peek(); c != '0' && c != '1' {
			return Value{}, false
		}
		p.i++
		return Value{Kind: Other}, true
	case c == ':':
		end := strings.IndexByte(p.s[p.i+1:], ':')
		if end < 0 {
			return Value{}, false
		}
		if _, err := base64.StdEncoding.DecodeString(p.s[p.i+1 : p.i+1+end]); err != nil {
			return Value{}, false
		}
		p.i += end + 2
		return Value{Kind: Other}, true
	}
	return Value{}, false
}

// str reads an RFC 8941 string: printable ASCII in double quotes, with \"
// and \\ the only escapes.
func (p *parser) str() (Value, bool) {
	p.i++ // '"'
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return Value{}, false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return Value{Kind: String, Str: b.String()}, true
		case c < 0x20 || c > 0x7e:
			return Value{}, false
		default:
			b.WriteByte(c)
		}
	}
	return Value{}, false
}
