// Package cdt holds the pure parts of Compression Dictionary Transport (RFC
// 9842) that squeeze's server (the Middleware and the FileServer) and
// client (the Transport) share: match patterns and the linear matcher that
// tries them against paths, the Use-As-Dictionary, Available-Dictionary and
// Dictionary-ID fields parsed and serialised (through package sfv), the
// origins dictionaries are kept for, and the dcz and dcb framing with its
// window limits. Nothing here holds state: the stores of dictionaries stay
// with the server and the client.
package cdt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/squeezehttp/squeeze/internal/sfv"
)

// Content-coding names of RFC 9842, the dictionary-compressed codings: a
// zstd frame or a brotli stream made with a dictionary the client already
// holds, behind a header naming that dictionary.
const (
	DCZ = "dcz"
	DCB = "dcb"
)

// MaxID is the longest Dictionary-ID RFC 9842 §2.1.3 lets a client keep, in
// characters.
const MaxID = 1024

// MaxPattern is the longest match pattern the client stores, in bytes, as
// written and once resolved against the response's URL. RFC 9842 sets no
// limit; a pattern is a URL path with wildcards, and 2 KiB is the longest
// whole URL the sitemaps protocol admits and about what older browsers
// took, so a pattern longer than that only spends the client's memory. It
// also sizes the table indexKMP keeps on its stack for a pattern's
// literals.
const MaxPattern = 2048

// MaxPath is the longest escaped path, in bytes, that a match pattern is
// tried against, on both sides; a longer path matches no pattern, so it is
// neither offered nor sent a dictionary. 8 KiB is the request line the
// common servers take by default (Apache's LimitRequestLine is 8190 bytes,
// nginx's large header buffers 8 KiB), so a path beyond it is not one a
// dictionary was made for; the bound caps what one request's matching can
// cost, whatever the patterns.
const MaxPath = 8 << 10

// Window limits of RFC 9842 §4: a dcz client accepts a zstd window of
// max(8 MB, 1.25 x the dictionary) up to 128 MB (see ZstdWindow); a dcb
// client a brotli window of 16 MB (lgwin 24).
const (
	MinZstdWindow = 8 << 20
	MaxZstdWindow = 128 << 20
	BrotliWindow  = 16 << 20
)

// ZstdWindow returns the largest window a dcz stream with a dictionary of n
// bytes may declare: max(8 MB, 1.25 times the dictionary), at most 128 MB
// (RFC 9842 §4).
func ZstdWindow(n int) int64 {
	w := max(int64(MinZstdWindow), int64(n)+int64(n)/4)
	return min(w, MaxZstdWindow)
}

// The magic numbers that start the two framings (RFC 9842 §4): dcz's is a
// zstd skippable frame of 32 bytes, which the dictionary's SHA-256 fills;
// dcb's a magic number of its own, followed by the hash.
const (
	dczMagic = "\x5e\x2a\x4d\x18\x20\x00\x00\x00"
	dcbMagic = "\xff\x44\x43\x42"
)

// ErrHeader and ErrMismatch are the errors of ReadHeader: a dcz or dcb
// stream whose header is wrong, or names another dictionary than the one
// expected. ErrTrailingData is the error of a dictionary-compressed stream
// followed by other bytes.
var (
	ErrHeader       = errors.New("squeeze: not a dictionary-compressed stream header")
	ErrMismatch     = errors.New("squeeze: stream compressed with another dictionary than the one offered")
	ErrTrailingData = errors.New("squeeze: data after the end of the stream")
)

// magic returns the magic number of coding, DCZ or DCB.
func magic(coding string) string {
	if coding == DCB {
		return dcbMagic
	}
	return dczMagic
}

// Header returns the header a dcz or dcb stream (coding) with the
// dictionary whose SHA-256 is hash starts with.
func Header(coding string, hash [sha256.Size]byte) []byte {
	m := magic(coding)
	h := make([]byte, 0, len(m)+len(hash))
	return append(append(h, m...), hash[:]...)
}

// ReadHeader reads the header of a dcz or dcb stream (coding) from r and
// checks it names the dictionary whose SHA-256 is hash: ErrHeader if it is
// no such header, ErrMismatch if it names another dictionary. An input
// without a byte fails with io.EOF, one cut short with r's error
// (io.ErrUnexpectedEOF for a plain end).
func ReadHeader(coding string, r io.Reader, hash [sha256.Size]byte) error {
	m := magic(coding)
	hdr := make([]byte, len(m)+sha256.Size)
	if n, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF && n == 0 {
			return io.EOF
		}
		return err
	}
	if string(hdr[:len(m)]) != m {
		return ErrHeader
	}
	if !bytes.Equal(hdr[len(m):], hash[:]) {
		return ErrMismatch
	}
	return nil
}

// CheckPattern checks a match pattern a server is configured with: a path
// starting with "/" in which "*" matches any run of characters. The
// URLPattern syntax squeeze cannot check (named groups, regular
// expressions, modifiers, escapes, a search or hash part) is refused, and
// so is anything a URL path cannot hold unescaped. The error says why, to
// follow the pattern in a message.
func CheckPattern(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must start with /")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c <= ' ' || c >= 0x7f:
			return errors.New("has a space, a control or a non-ASCII character (percent-encode it)")
		case strings.IndexByte(`(){}:\?+#"`, c) >= 0:
			return fmt.Errorf("has %q: only * is special (no groups, modifiers, escapes, query or fragment)", c)
		}
	}
	return nil
}

// MatchPath reports whether path matches pattern, where "*" matches any run
// of bytes, "/" included, and every other byte only itself; a path longer
// than MaxPath matches nothing. It does not allocate, and runs in one pass:
// the literal before the first "*" must start path and the one after the
// last must end it; each literal between is then searched for leftmost in
// what lies between those two. Taking the leftmost occurrence is never
// wrong when the only wildcard is "*": any match that uses a later
// occurrence of a literal still matches with the leftmost one, since the
// "*" after it can absorb the difference. So no choice is ever revisited,
// and the time is linear in len(pattern) + len(path) (see indexLiteral).
func MatchPath(pattern, path string) bool {
	if len(path) > MaxPath {
		return false
	}
	first, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == path
	}
	if !strings.HasPrefix(path, first) {
		return false
	}
	path = path[len(first):]
	var last string
	if i := strings.LastIndexByte(rest, '*'); i >= 0 {
		rest, last = rest[:i], rest[i+1:]
	} else {
		rest, last = "", rest
	}
	if !strings.HasSuffix(path, last) {
		return false
	}
	path = path[:len(path)-len(last)]
	for rest != "" {
		var lit string
		lit, rest, _ = strings.Cut(rest, "*")
		if lit == "" {
			continue
		}
		i := indexLiteral(path, lit)
		if i < 0 {
			return false
		}
		path = path[i+len(lit):]
	}
	return true
}

// shortLiteral is the longest literal indexLiteral leaves to strings.Index
// unconditionally: up to it, strings.Index compares the literal at each
// place with a few vector instructions, so its time is linear in the text.
const shortLiteral = 64

// indexLiteral is strings.Index(s, lit), in time linear in len(s) +
// len(lit). A longer literal strings.Index searches by Rabin-Karp, whose
// hash (fixed, not seeded) a peer can make collide at every place of a
// path it also chose, for len(s) x len(lit) byte comparisons; those of up
// to MaxPattern bytes, all a peer can send, are searched by
// Knuth-Morris-Pratt instead. Longer ones come only from the server's own
// configuration.
func indexLiteral(s, lit string) int {
	if len(lit) <= shortLiteral || len(lit) > MaxPattern {
		return strings.Index(s, lit)
	}
	return indexKMP(s, lit)
}

// indexKMP is strings.Index(s, lit) by Knuth-Morris-Pratt, for a literal
// of 1 to MaxPattern bytes: at most 2 x len(s) + 2 x len(lit) byte
// comparisons, with no allocation. While no prefix of lit is matched, it
// skips to the next occurrence of lit's first byte.
func indexKMP(s, lit string) int {
	// border[i] is the length of the longest proper prefix of lit[:i+1]
	// that is also its suffix.
	var table [MaxPattern]int16
	border := table[:len(lit)]
	k := 0
	for i := 1; i < len(lit); i++ {
		for k > 0 && lit[i] != lit[k] {
			k = int(border[k-1])
		}
		if lit[i] == lit[k] {
			k++
		}
		border[i] = int16(k)
	}
	k = 0
	for i := 0; i < len(s); i++ {
		if k == 0 {
			j := strings.IndexByte(s[i:], lit[0])
			if j < 0 {
				return -1
			}
			i += j
		}
		for k > 0 && s[i] != lit[k] {
			k = int(border[k-1])
		}
		if s[i] == lit[k] {
			k++
		}
		if k == len(lit) {
			return i + 1 - len(lit)
		}
	}
	return -1
}

// UseAsDictionary returns the Use-As-Dictionary field value a server sends
// for pattern: an RFC 8941 dictionary with the one member match (RFC 9842
// §2.1). ok is false for a pattern that is no sf-string, which CheckPattern
// lets none through.
func UseAsDictionary(pattern string) (string, bool) {
	s, ok := sfv.QuoteString(pattern)
	return "match=" + s, ok
}

// UseAs is a parsed Use-As-Dictionary field: its match pattern, as
// written, and its id.
type UseAs struct {
	Match string
	ID    string
}

// ParseUseAsDictionary parses the RFC 8941 dictionary of a Use-As-Dictionary
// field (RFC 9842 §2.1). It reports false for a field that does not parse,
// lacks a string match, has an id that is not a string of at most MaxID
// characters, a match longer than MaxPattern bytes, a type other than the
// token raw, or a non-empty match-dest (a destination only browsers have).
// Unknown keys and all parameters are ignored; a repeated key keeps its
// last value, as RFC 8941 says.
func ParseUseAsDictionary(field string) (UseAs, bool) {
	var u UseAs
	hasMatch := false
	ok := sfv.ParseDictionary(field, func(key string, v sfv.Value) bool {
		switch key {
		case "match":
			if v.Kind != sfv.String || len(v.Str) > MaxPattern {
				return false
			}
			u.Match, hasMatch = v.Str, true
		case "id":
			if v.Kind != sfv.String || len(v.Str) > MaxID {
				return false
			}
			u.ID = v.Str
		case "type":
			if v.Kind != sfv.Token || v.Str != "raw" {
				return false
			}
		case "match-dest":
			if v.Kind != sfv.InnerList || v.Len != 0 {
				return false
			}
		}
		return true
	})
	if !ok {
		return UseAs{}, false
	}
	return u, hasMatch && u.Match != ""
}

// DictionaryID returns the Dictionary-ID field value for id, as the client
// echoes it: an RFC 8941 string. ParseUseAsDictionary admits no id that is
// not one.
func DictionaryID(id string) string {
	q, _ := sfv.QuoteString(id)
	return q
}

// AvailableDictionary returns the Available-Dictionary field value naming
// the dictionary whose SHA-256 is hash: an RFC 8941 byte sequence.
func AvailableDictionary(hash [sha256.Size]byte) string {
	return sfv.Binary(hash[:])
}

// ParseAvailableDictionary reads the Available-Dictionary field (RFC 9842
// §2.2): one field line holding an RFC 8941 byte sequence, ":base64:", of
// a 32-byte SHA-256. Anything else, parameters included, is not valid. It
// does not allocate.
func ParseAvailableDictionary(lines []string) (hash [sha256.Size]byte, ok bool) {
	if len(lines) != 1 {
		return hash, false
	}
	n, ok := sfv.ParseBinary(hash[:], lines[0])
	if !ok || n != len(hash) {
		return [sha256.Size]byte{}, false
	}
	return hash, true
}

// Origin returns scheme://host[:port] in lower case, without the scheme's
// default port or an empty one: the origin a dictionary is kept for and
// offered to (RFC 9842 §2.2).
func Origin(scheme, host string) string {
	scheme = strings.ToLower(scheme)
	host = strings.ToLower(strings.TrimSuffix(host, ":"))
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = host[:len(host)-3]
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = host[:len(host)-4]
	}
	return scheme + "://" + host
}

// ResolvePattern turns a match value into a path pattern for origin, given
// the escaped path of the request the response answered. The client
// understands the URLPattern subset that dictionaries use in practice: a
// path of literal characters and '*' wildcards (each matching any run of
// characters, '/' included), absolute or relative to basePath, or a full
// URL of origin itself. It reports false for a pattern of another origin
// and for any other URLPattern syntax (named groups, regular expressions,
// groups, modifiers, escapes, search or hash parts), which is then not
// stored: a dictionary the client cannot match would only cost memory.
func ResolvePattern(match, origin, basePath string) (string, bool) {
	if i := strings.Index(match, "://"); i >= 0 {
		// A full URL: only of the request's own origin.
		j := strings.IndexByte(match[i+3:], '/')
		if j < 0 {
			return "", false
		}
		o, err := url.Parse(match[:i+3+j])
		if err != nil || Origin(o.Scheme, o.Host) != origin {
			return "", false
		}
		match = match[i+3+j:]
	}
	if match == "" || strings.ContainsAny(match, ":(){}?+#\\") {
		return "", false
	}
	if !strings.HasPrefix(match, "/") {
		dir := basePath
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			dir = dir[:i+1]
		} else {
			dir = "/"
		}
		match = dir + match
	}
	return match, true
}
