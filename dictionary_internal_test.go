package squeeze

import (
	"crypto/sha256"
	"encoding/base64"
	"math/bits"
	"regexp"
	"strings"
	"testing"
)

// The parsers and serializers of RFC 9842 and RFC 8941 in dictionary.go.

func TestMatchPatternsAcceptOnlyWhatAServerCanCheck(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		ok      bool
	}{
		{"/static/*", true},
		{"/js/app.*.js", true},
		{"/*", true},
		{"/a/b%20c/*", true},
		{"static/*", false},
		{"", false},
		{"https://example.com/x", false},
		{"/x/:id", false},
		{"/x/(\\d+)", false},
		{"/x/{a}?", false},
		{"/x/*+", false},
		{"/x?q=*", false},
		{"/x#y", false},
		{"/a b", false},
		{"/caf\u00e9", false},
		{`/a"b`, false},
		{`/a\*`, false},
	} {
		_, err := parseMatchPattern("WithDictionaryMatch", tt.pattern)
		if (err == nil) != tt.ok {
			t.Errorf("parseMatchPattern(%q) error %v, want ok %v", tt.pattern, err, tt.ok)
		}
	}
}

func TestMatchPathStarMatchesAnyRunIncludingSlash(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"/static/*", "/static/", true},
		{"/static/*", "/static/a/b/c.js", true},
		{"/static/*", "/static", false},
		{"/static/*", "/staticx/a", false},
		{"/js/app.*.js", "/js/app.v1.js", true},
		{"/js/app.*.js", "/js/app..js", true},
		{"/js/app.*.js", "/js/app.v1.css", false},
		{"/js/app.*.js", "/js/app.v1.js.map", false},
		{"/a*b*c", "/aXXbYYbZZc", true},
		{"/a*b*c", "/aXXbYYc", true},
		{"/a*b*c", "/aXXcYY", false},
		{"/exact", "/exact", true},
		{"/exact", "/exact/", false},
		{"/*", "/", true},
		{"/**", "/x", true},
	} {
		if got := matchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestUseAsDictionaryIsAnSFDictionary(t *testing.T) {
	if got := useAsDictionary("/js/app.*.js"); got != `match="/js/app.*.js"` {
		t.Errorf("useAsDictionary = %s", got)
	}
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{`/a`, `"/a"`, true},
		{`a"b`, `"a\"b"`, true},
		{`a\b`, `"a\\b"`, true},
		{"a\tb", "", false},
		{"caf\u00e9", "", false},
	} {
		got, ok := sfString(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("sfString(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAvailableDictionaryIsStrict(t *testing.T) {
	hash := sha256.Sum256([]byte("dictionary"))
	b64 := base64.StdEncoding.EncodeToString(hash[:])
	for _, tt := range []struct {
		name  string
		lines []string
		ok    bool
	}{
		{"byte sequence", []string{":" + b64 + ":"}, true},
		{"with OWS", []string{"  :" + b64 + ":\t"}, true},
		{"unpadded", []string{":" + strings.TrimRight(b64, "=") + ":"}, true},
		{"absent", nil, false},
		{"two lines", []string{":" + b64 + ":", ":" + b64 + ":"}, false},
		{"no colons", []string{b64}, false},
		{"one colon", []string{":" + b64}, false},
		{"parameters", []string{":" + b64 + ":;a=1"}, false},
		{"a list", []string{":" + b64 + ":, :" + b64 + ":"}, false},
		{"url alphabet", []string{":" + base64.URLEncoding.EncodeToString(hash[:]) + ":"}, !strings.ContainsAny(b64, "+/")},
		{"31 bytes", []string{":" + base64.StdEncoding.EncodeToString(hash[:31]) + ":"}, false},
		{"33 bytes", []string{":" + base64.StdEncoding.EncodeToString(append(hash[:], 0)) + ":"}, false},
		{"non-zero trailing bits", []string{":" + b64[:42] + "B=:"}, b64[42] == 'B'},
		{"empty", []string{"::"}, false},
		{"space inside", []string{":" + b64[:10] + " " + b64[11:] + ":"}, false},
	} {
		got, ok := parseAvailableDictionary(tt.lines)
		if ok != tt.ok || ok && got != hash {
			t.Errorf("%s: parseAvailableDictionary(%q) = %x, %v; want ok %v", tt.name, tt.lines, got, ok, tt.ok)
		}
	}
	if got := (&clientDict{hash: hash}).availableDictionary(); got != ":"+b64+":" {
		t.Errorf("clientDict.availableDictionary = %s", got)
	}
}

func TestExplicitCodingIgnoresStarAndRefusals(t *testing.T) {
	both := []string{DCZ, DCB}
	for _, tt := range []struct {
		ae      string
		codings []string
		want    string
	}{
		{"gzip, br, zstd, dcb, dcz", both, DCZ},
		{"gzip, br, zstd, dcb, dcz", []string{DCB, DCZ}, DCB},
		{"dcb", both, DCB},
		{"*", both, ""},
		{"dcz;q=0, dcb", both, DCB},
		{"dcz;q=0.5, dcb", both, DCB},
		{"DCZ", both, DCZ},
		{"dcz, dcb", nil, ""},
		{"gzip", both, ""},
	} {
		if got := explicitCoding([]string{tt.ae}, tt.codings); got != tt.want {
			t.Errorf("explicitCoding(%q, %v) = %q, want %q", tt.ae, tt.codings, got, tt.want)
		}
	}
}

func TestDCZWindowCoversTheDictionaryWithinTheClientsLimit(t *testing.T) {
	for _, n := range []int{1, 60 << 10, 1 << 20, 7 << 20, 8 << 20, 10 << 20, 100 << 20, 200 << 20} {
		w := dczWindow(n)
		limit := min(max(8<<20, n+n/4), 128<<20)
		if w > limit || w&(w-1) != 0 {
			t.Errorf("dczWindow(%d) = %d: not a power of two within %d", n, w, limit)
		}
		// klauspost/compress takes powers of two only: a dictionary whose
		// next power of two passes the limit is reached only in its tail.
		cover := 1 << bits.Len(uint(n+64<<10-1))
		if cover <= limit && w < n+64<<10 {
			t.Errorf("dczWindow(%d) = %d does not cover the dictionary", n, w)
		}
		if cover > limit && w*2 <= limit {
			t.Errorf("dczWindow(%d) = %d is not the largest power of two within %d", n, w, limit)
		}
	}
}

func TestDictionaryOptionErrorsNameTheCall(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithDictionaryMatch(), `squeeze: WithDictionaryMatch(): needs at least one pattern`},
		{WithDictionaryMatch("js/*"), `squeeze: WithDictionaryMatch("js/*"): pattern "js/*" must start with /`},
		{WithDictionaryMatch("/a/*", "/a/*"), `squeeze: WithDictionaryMatch("/a/*", "/a/*"): pattern "/a/*" is listed twice`},
		{WithDictionaryMatch("/x/:id"), `squeeze: WithDictionaryMatch("/x/:id"): pattern "/x/:id" has ':': only * is special (no groups, modifiers, escapes, query or fragment)`},
		{WithDictionaryStoreSize(0), `squeeze: WithDictionaryStoreSize(0): size must be positive`},
		{WithDictionary("/d", "/api/*", nil), `squeeze: WithDictionary("/d", "/api/*", 0 bytes): the dictionary is empty`},
		{WithDictionary("d", "/api/*", []byte("x")), `squeeze: WithDictionary("d", "/api/*", 1 bytes): path must start with /`},
		{WithDictionary("/d", "api/*", []byte("x")), `squeeze: WithDictionary("/d", "api/*", 1 bytes): pattern "api/*" must start with /`},
	} {
		_, err := New(tt.opt)
		if err == nil || err.Error() != tt.want {
			t.Errorf("error %v\nwant  %s", err, tt.want)
		}
	}
	_, err := New(WithDictionary("/d", "/a/*", []byte("x")), WithDictionary("/d", "/b/*", []byte("y")))
	if want := `squeeze: WithDictionary("/d", "/b/*", 1 bytes): path "/d" has a dictionary already`; err == nil || err.Error() != want {
		t.Errorf("duplicate path: %v", err)
	}
}

// FuzzMatchPattern checks the pattern parser and matcher against a regular
// expression built from the same pattern.
func FuzzMatchPattern(f *testing.F) {
	f.Add("/static/*", "/static/a.js")
	f.Add("/a*b*c", "/aXbYc")
	f.Add("/x/:id", "/x/1")
	f.Add("/**/", "//")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		p, err := parseMatchPattern("F", pattern)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") {
			t.Fatalf("accepted %q", p)
		}
		if _, ok := sfString(p); !ok {
			t.Fatalf("accepted %q, which is no sf-string", p)
		}
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile(`^(?s:` + strings.Join(parts, ".*") + `)$`)
		if got, want := matchPath(p, path), re.MatchString(path); got != want {
			t.Fatalf("matchPath(%q, %q) = %v, regexp says %v", p, path, got, want)
		}
	})
}

// FuzzAvailableDictionary checks that whatever the parser accepts is a
// byte sequence whose canonical form decodes to the same hash.
func FuzzAvailableDictionary(f *testing.F) {
	h := sha256.Sum256(nil)
	f.Add((&clientDict{hash: h}).availableDictionary())
	f.Add(":" + base64.RawStdEncoding.EncodeToString(h[:]) + ":")
	f.Add("::")
	f.Add(":" + strings.Repeat("A", 44) + ":")
	f.Fuzz(func(t *testing.T, s string) {
		hash, ok := parseAvailableDictionary([]string{s})
		if !ok {
			return
		}
		inner := strings.TrimRight(strings.Trim(trimOWS(s), ":"), "=")
		if canon := strings.TrimRight(base64.StdEncoding.EncodeToString(hash[:]), "="); inner != canon {
			t.Fatalf("accepted %q, which is not the byte sequence of %x", s, hash)
		}
	})
}
