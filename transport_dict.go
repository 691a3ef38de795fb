package squeeze

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the client side of Compression Dictionary Transport (RFC
// 9842) for Transport: parsing Use-As-Dictionary, the store of dictionaries
// (LRU within a byte budget, keyed by origin and match pattern), the
// Available-Dictionary a request sends, and the dcz and dcb decoders.

// errDictionaryHeader and errDictionaryMismatch are the codec errors of a
// dcz or dcb stream whose header is wrong, or names another dictionary than
// the one the request offered. Both reach the caller wrapped with
// ErrInvalidBody.
var (
	errDictionaryHeader   = errors.New("squeeze: not a dictionary-compressed stream header")
	errDictionaryMismatch = errors.New("squeeze: stream compressed with another dictionary than the one offered")
	errTrailingData       = errors.New("squeeze: data after the end of the stream")
)

// maxDictionaryID is the longest id RFC 9842 §2.1.3 lets a client keep.
const maxDictionaryID = 1024

// dictionary is one stored dictionary. Everything but elem and expires is
// immutable once stored, so a response being decoded may keep using it after
// the store has dropped it.
type clientDict struct {
	origin  string
	pattern string // a path pattern: literal bytes and '*' wildcards
	id      string
	data    []byte
	hash    [sha256.Size]byte
	expires time.Time
	elem    *list.Element // in the store's LRU list
}

// zstdWindow returns the largest window a dcz stream with d may declare:
// max(8 MB, 1.25 times the dictionary), at most 128 MB (RFC 9842 §4).
func (d *clientDict) zstdWindow() int64 {
	w := max(int64(writers.ZstdMaxWindow), int64(len(d.data))+int64(len(d.data))/4)
	return min(w, 128<<20)
}

// availableDictionary formats d's hash as the Available-Dictionary field
// value, an RFC 8941 byte sequence.
func (d *clientDict) availableDictionary() string {
	return ":" + base64.StdEncoding.EncodeToString(d.hash[:]) + ":"
}

// checkHeader reads the header of a dcz or dcb stream from r and checks it
// names d.
func (d *clientDict) checkHeader(coding string, r io.Reader) error {
	magic := dczMagic[:]
	if coding == DCB {
		magic = dcbMagic[:]
	}
	hdr := make([]byte, len(magic)+sha256.Size)
	if n, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF && n == 0 {
			return io.EOF // layer.fail tells an empty input from a cut one
		}
		return err
	}
	if !bytes.Equal(hdr[:len(magic)], magic) {
		return errDictionaryHeader
	}
	if !bytes.Equal(hdr[len(magic):], d.hash[:]) {
		return errDictionaryMismatch
	}
	return nil
}

// newDecoder returns a decoder for the rest of a dcz (kind zstd) or dcb
// (kind br) stream read from r, with d as its dictionary. These decoders are
// not pooled: one is built for each response and dropped by close.
func (d *clientDict) newDecoder(kind string, r io.Reader) (*dictDecoder, error) {
	dd := &dictDecoder{src: countingReader{r: r}}
	if kind == writers.Zstd {
		w := uint64(d.zstdWindow())
		z, err := zstd.NewReader(&dd.src,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(w),
			zstd.WithDecoderMaxMemory(w+uint64(len(d.data))),
			zstd.WithDecodeBuffersBelow(0),
			zstd.WithDecoderDictRaw(0, d.data),
		)
		if err != nil {
			return nil, err
		}
		dd.zstd, dd.window = z, int64(w)
		return dd, nil
	}
	br, err := brrr.NewReaderOptions(&dd.src, brrr.ReaderOptions{Dictionaries: [][]byte{d.data}})
	if err != nil {
		return nil, err
	}
	dd.br, dd.window = br, 16<<20
	return dd, nil
}

// dictDecoder decodes the body of a dcz or dcb stream after its header.
type dictDecoder struct {
	src    countingReader
	zstd   *zstd.Decoder
	br     *brrr.Reader
	window int64
	err    error // sticky end or failure of the br stream
}

// Read decodes. A stream followed by more bytes is an error, as it is for
// the pooled decoders; so is a dcz stream with no frame at all.
func (d *dictDecoder) Read(p []byte) (int, error) {
	if d.zstd != nil {
		n, err := d.zstd.Read(p)
		if err == io.EOF && d.src.n == 0 {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.br.Read(p)
	if err == io.EOF {
		// The br reader stops at the end of its stream; so must the input.
		var one [1]byte
		switch k, perr := io.ReadFull(&d.src, one[:]); {
		case k > 0:
			err = errTrailingData
		case perr != io.EOF:
			err = perr
		}
	}
	if err != nil {
		d.err = err
	}
	return n, err
}

// Window reports the window charged for the stream.
func (d *dictDecoder) Window() int64 { return d.window }

// close drops the decoder's buffers and its source.
func (d *dictDecoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
	} else {
		_ = d.br.Close()
	}
	d.src.r = nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// clientDictStore holds a Transport's dictionaries within a byte budget, the
// least recently used dropped first.
type clientDictStore struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	lru     list.List // of *clientDict, most recently used first
	entries map[string]*clientDict
}

func newClientDictStore(budget int64) *clientDictStore {
	return &clientDictStore{budget: budget, entries: map[string]*clientDict{}}
}

func storeKey(origin, pattern string) string { return origin + " " + pattern }

// match returns the fresh dictionary of u's origin whose pattern matches
// u's path, the longest pattern winning and then the most recently used
// (RFC 9842 §2.2.2), or nil. Expired dictionaries it meets are dropped.
func (s *clientDictStore) match(u *url.URL, now time.Time) *clientDict {
	origin := originOf(u)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *clientDict
	for e := s.lru.Front(); e != nil; {
		d := e.Value.(*clientDict)
		e = e.Next()
		if !now.Before(d.expires) {
			s.removeLocked(d)
			continue
		}
		if d.origin == origin && (best == nil || len(d.pattern) > len(best.pattern)) && matchPath(d.pattern, path) {
			best = d
		}
	}
	if best != nil {
		s.lru.MoveToFront(best.elem)
	}
	return best
}

// add stores d, replacing a dictionary with the same origin and pattern and
// dropping the least recently used ones until the budget holds it. A
// dictionary larger than the whole budget is not stored.
func (s *clientDictStore) add(d *clientDict) {
	size := int64(len(d.data))
	if size > s.budget || size == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[storeKey(d.origin, d.pattern)]; old != nil {
		s.removeLocked(old)
	}
	for s.used+size > s.budget {
		s.removeLocked(s.lru.Back().Value.(*clientDict))
	}
	d.elem = s.lru.PushFront(d)
	s.entries[storeKey(d.origin, d.pattern)] = d
	s.used += size
}

func (s *clientDictStore) removeLocked(d *clientDict) {
	s.lru.Remove(d.elem)
	delete(s.entries, storeKey(d.origin, d.pattern))
	s.used -= int64(len(d.data))
}

// originOf returns the origin of u as scheme://host[:port], lower case,
// without the scheme's default port.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = host[:len(host)-3]
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = host[:len(host)-4]
	}
	return scheme + "://" + host
}

// dictOffer describes the dictionary a response asks to become: what
// Use-As-Dictionary said, resolved against the response's URL, and how long
// it stays fresh.
type dictOffer struct {
	origin  string
	pattern string
	id      string
	expires time.Time
}

// offerOf returns what resp, the answer to a request for base, asks to be
// stored as, or false when it asks for
// nothing, asks with an invalid or unsupported Use-As-Dictionary, is not a
// 200, or is not fresh (RFC 9842 §2.1: the dictionary lives as long as the
// response is fresh).
func offerOf(base *url.URL, resp *http.Response, now time.Time) (dictOffer, bool) {
	values := resp.Header.Values("Use-As-Dictionary")
	if len(values) == 0 || resp.StatusCode != http.StatusOK || base == nil {
		return dictOffer{}, false
	}
	u, ok := parseUseAsDictionary(strings.Join(values, ", "))
	if !ok {
		return dictOffer{}, false
	}
	pattern, ok := resolvePattern(u.match, base)
	if !ok {
		return dictOffer{}, false
	}
	life, ok := freshness(resp.Header, now)
	if !ok {
		return dictOffer{}, false
	}
	return dictOffer{origin: originOf(base), pattern: pattern, id: u.id, expires: now.Add(life)}, true
}

// useAsField is a parsed Use-As-Dictionary field.
type useAsField struct {
	match string
	id    string
}

// parseUseAsDictionary parses the RFC 8941 dictionary of a Use-As-Dictionary
// field (RFC 9842 §2.1). It reports false for a field that does not parse,
// lacks a string match, has an id that is not a string of at most 1024
// characters, a type other than the token raw, or a non-empty match-dest (a
// destination only browsers have). Unknown keys and all parameters are
// ignored; a repeated key keeps its last value, as RFC 8941 says.
func parseUseAsDictionary(field string) (useAsField, bool) {
	var u useAsField
	var hasMatch bool
	p := sfParser{s: field}
	p.ows()
	if p.done() {
		return u, false
	}
	for {
		key, ok := p.key()
		if !ok {
			return u, false
		}
		v, ok := p.itemOrInnerList()
		if !ok {
			return u, false
		}
		switch key {
		case "match":
			if v.kind != sfStr {
				return u, false
			}
			u.match, hasMatch = v.str, true
		case "id":
			if v.kind != sfStr || len(v.str) > maxDictionaryID {
				return u, false
			}
			u.id = v.str
		case "type":
			if v.kind != sfToken || v.str != "raw" {
				return u, false
			}
		case "match-dest":
			if v.kind != sfInnerList || v.n != 0 {
				return u, false
			}
		}
		p.ows()
		if p.done() {
			break
		}
		if !p.eat(',') {
			return u, false
		}
		p.ows()
		if p.done() {
			return u, false // a trailing comma
		}
	}
	return u, hasMatch && u.match != ""
}

// sfParser reads the parts of RFC 8941 structured fields that
// Use-As-Dictionary needs.
type sfParser struct {
	s string
	i int
}

type sfKind uint8

const (
	sfBare sfKind = iota // a key with no value: boolean true
	sfStr
	sfToken
	sfOther // integer, decimal, byte sequence or boolean
	sfInnerList
)

type sfValue struct {
	kind sfKind
	str  string
	n    int // items of an inner list
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) ows() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) sp() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

// key reads an RFC 8941 key: lcalpha or "*", then lcalpha, DIGIT, "_", "-",
// "." or "*".
func (p *sfParser) key() (string, bool) {
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

// itemOrInnerList reads "=value;params" after a dictionary key, or just
// ";params" for a bare key.
func (p *sfParser) itemOrInnerList() (sfValue, bool) {
	if !p.eat('=') {
		return sfValue{kind: sfBare}, p.params()
	}
	var v sfValue
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

func (p *sfParser) innerList() (sfValue, bool) {
	p.i++ // '('
	v := sfValue{kind: sfInnerList}
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
		v.n++
		if c := p.peek(); c != ' ' && c != ')' {
			return v, false
		}
	}
}

// params reads (";" key ["=" bare-item])* and ignores them.
func (p *sfParser) params() bool {
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

func (p *sfParser) bareItem() (sfValue, bool) {
	c := p.peek()
	switch {
	case p.done():
		return sfValue{}, false
	case c == '"':
		return p.str()
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '*':
		start := p.i
		p.i++
		for !p.done() && (isTokenChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfValue{kind: sfToken, str: p.s[start:p.i]}, true
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		p.i++
		for !p.done() && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
			p.i++
		}
		if p.s[start:p.i] == "-" {
			return sfValue{}, false
		}
		return sfValue{kind: sfOther}, true
	case c == '?':
		p.i++
		if c := p.peek(); c != '0' && c != '1' {
			return sfValue{}, false
		}
		p.i++
		return sfValue{kind: sfOther}, true
	case c == ':':
		end := strings.IndexByte(p.s[p.i+1:], ':')
		if end < 0 {
			return sfValue{}, false
		}
		if _, err := base64.StdEncoding.DecodeString(p.s[p.i+1 : p.i+1+end]); err != nil {
			return sfValue{}, false
		}
		p.i += end + 2
		return sfValue{kind: sfOther}, true
	}
	return sfValue{}, false
}

// str reads an RFC 8941 string: printable ASCII in double quotes, with \"
// and \\ the only escapes.
func (p *sfParser) str() (sfValue, bool) {
	p.i++ // '"'
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return sfValue{}, false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return sfValue{kind: sfStr, str: b.String()}, true
		case c < 0x20 || c > 0x7e:
			return sfValue{}, false
		default:
			b.WriteByte(c)
		}
	}
	return sfValue{}, false
}

// resolvePattern turns a match value into a path pattern for base's origin.
// The client understands the URLPattern subset that dictionaries use in
// practice: a path of literal characters and '*' wildcards (each matching
// any run of characters, '/' included), absolute or relative to base, or a
// full URL of base's own origin. It reports false for a pattern of another
// origin and for any other URLPattern syntax (named groups, regular
// expressions, groups, modifiers, escapes, search or hash parts), which is
// then not stored: a dictionary the client cannot match would only cost
// memory.
func resolvePattern(match string, base *url.URL) (string, bool) {
	if i := strings.Index(match, "://"); i >= 0 {
		// A full URL: only of base's own origin.
		j := strings.IndexByte(match[i+3:], '/')
		if j < 0 {
			return "", false
		}
		o, err := url.Parse(match[:i+3+j])
		if err != nil || originOf(o) != originOf(base) {
			return "", false
		}
		match = match[i+3+j:]
	}
	if match == "" || strings.ContainsAny(match, ":(){}?+#\\") {
		return "", false
	}
	if !strings.HasPrefix(match, "/") {
		dir := base.EscapedPath()
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			dir = dir[:i+1]
		} else {
			dir = "/"
		}
		match = dir + match
	}
	return match, true
}

// freshness returns how long a response with header h stays fresh for a
// private cache (RFC 9111 §4.2): max-age, else Expires minus Date, less
// Age. no-store and no-cache responses, and those with neither max-age nor
// Expires, are not fresh: a client that stores dictionaries does not
// revalidate them, and applies no heuristic freshness.
func freshness(h http.Header, now time.Time) (time.Duration, bool) {
	cc := h.Values("Cache-Control")
	if headerHasToken(cc, "no-store") || headerHasToken(cc, "no-cache") {
		return 0, false
	}
	var life time.Duration
	found := false
	for _, line := range cc {
		for line != "" {
			var elem string
			elem, line = nextElement(line)
			name, value, _ := strings.Cut(trimOWS(elem), "=")
			if !strings.EqualFold(trimOWS(name), "max-age") {
				continue
			}
			secs, err := strconv.ParseInt(strings.Trim(trimOWS(value), `"`), 10, 64)
			if err != nil || secs < 0 {
				return 0, false
			}
			life, found = time.Duration(min(secs, 1<<31))*time.Second, true
		}
	}
	if !found {
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return 0, false
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = now
		}
		life = exp.Sub(date)
	}
	if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 {
		life -= time.Duration(min(age, 1<<31)) * time.Second
	}
	return life, life > 0
}

// dictCapture keeps the decoded bytes of a response that asked to become a
// dictionary, and stores them when the body has been read to its end. A
// body cut short, failed or larger than the store's budget stores nothing.
type dictCapture struct {
	store *clientDictStore
	offer dictOffer
	buf   []byte
	over  bool
}

func (c *dictCapture) write(p []byte) {
	if c.over {
		return
	}
	if int64(len(c.buf)+len(p)) > c.store.budget {
		c.over, c.buf = true, nil
		return
	}
	c.buf = append(c.buf, p...)
}

func (c *dictCapture) finish() {
	if c.over || len(c.buf) == 0 {
		return
	}
	d := &clientDict{
		origin:  c.offer.origin,
		pattern: c.offer.pattern,
		id:      c.offer.id,
		data:    c.buf,
		hash:    sha256.Sum256(c.buf),
		expires: c.offer.expires,
	}
	c.buf, c.over = nil, true
	c.store.add(d)
}
