package cdt_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/sfv"
)

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
		err := cdt.CheckPattern(tt.pattern)
		if (err == nil) != tt.ok {
			t.Errorf("CheckPattern(%q) error %v, want ok %v", tt.pattern, err, tt.ok)
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
		if got := cdt.MatchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestUseAsDictionaryIsAnSFDictionary(t *testing.T) {
	if got, ok := cdt.UseAsDictionary("/js/app.*.js"); got != `match="/js/app.*.js"` || !ok {
		t.Errorf("UseAsDictionary = %s, %v", got, ok)
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
		got, ok := cdt.UseAsDictionary(tt.in)
		if ok != tt.ok || ok && got != "match="+tt.want {
			t.Errorf("UseAsDictionary(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
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
		got, ok := cdt.ParseAvailableDictionary(tt.lines)
		if ok != tt.ok || ok && got != hash {
			t.Errorf("%s: cdt.ParseAvailableDictionary(%q) = %x, %v; want ok %v", tt.name, tt.lines, got, ok, tt.ok)
		}
	}
	if got := cdt.AvailableDictionary(hash); got != ":"+b64+":" {
		t.Errorf("AvailableDictionary = %s", got)
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
		p := pattern
		if err := cdt.CheckPattern(p); err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") {
			t.Fatalf("accepted %q", p)
		}
		if _, ok := sfv.QuoteString(p); !ok {
			t.Fatalf("accepted %q, which is no sf-string", p)
		}
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile(`^(?s:` + strings.Join(parts, ".*") + `)$`)
		if got, want := cdt.MatchPath(p, path), re.MatchString(path); got != want {
			t.Fatalf("MatchPath(%q, %q) = %v, regexp says %v", p, path, got, want)
		}
	})
}

// FuzzAvailableDictionary checks that whatever the parser accepts is a
// byte sequence whose canonical form decodes to the same hash.
func FuzzAvailableDictionary(f *testing.F) {
	h := sha256.Sum256(nil)
	f.Add(cdt.AvailableDictionary(h))
	f.Add(":" + base64.RawStdEncoding.EncodeToString(h[:]) + ":")
	f.Add("::")
	f.Add(":" + strings.Repeat("A", 44) + ":")
	f.Fuzz(func(t *testing.T, s string) {
		hash, ok := cdt.ParseAvailableDictionary([]string{s})
		if !ok {
			return
		}
		inner := strings.TrimRight(strings.Trim(strings.Trim(s, " \t"), ":"), "=")
		if canon := strings.TrimRight(base64.StdEncoding.EncodeToString(hash[:]), "="); inner != canon {
			t.Fatalf("accepted %q, which is not the byte sequence of %x", s, hash)
		}
	})
}

func TestParseUseAsDictionary(t *testing.T) {
	tests := []struct {
		field string
		ok    bool
		want  cdt.UseAs
	}{
		{`match="/app/*.js"`, true, cdt.UseAs{Match: "/app/*.js"}},
		{`match="/a*", id="v1", type=raw`, true, cdt.UseAs{Match: "/a*", ID: "v1"}},
		{`match="/a*";p=1, id="x\"y\\z", match-dest=()`, true, cdt.UseAs{Match: "/a*", ID: `x"y\z`}},
		{`id="1",  match="/a*" , extra=?1, n=-12, d=1.5, b=:AAE=:, tok=abc/def`, true, cdt.UseAs{Match: "/a*", ID: "1"}},
		{`match="/old*", match="/new*"`, true, cdt.UseAs{Match: "/new*"}},
		{``, false, cdt.UseAs{}},
		{`id="only"`, false, cdt.UseAs{}},
		{`match=""`, false, cdt.UseAs{}},
		{`match=/a`, false, cdt.UseAs{}},
		{`match="/a*", type=other`, false, cdt.UseAs{}},
		{`match="/a*", type="raw"`, false, cdt.UseAs{}},
		{`match="/a*", id=v1`, false, cdt.UseAs{}},
		{`match="/a*", match-dest=("document")`, false, cdt.UseAs{}},
		{`match="/a*",`, false, cdt.UseAs{}},
		{`match="/a*" id="x"`, false, cdt.UseAs{}},
		{`Match="/a*"`, false, cdt.UseAs{}},
		{`match="/a*`, false, cdt.UseAs{}},
		{"match=\"/a\t*\"", false, cdt.UseAs{}},
		{`match="/a*", id="` + strings.Repeat("x", 1025) + `"`, false, cdt.UseAs{}},
		{`match="/` + strings.Repeat("a", 2046) + `*"`, true, cdt.UseAs{Match: "/" + strings.Repeat("a", 2046) + "*"}},
		{`match="/` + strings.Repeat("a", 2047) + `*"`, false, cdt.UseAs{}},
	}
	for _, tt := range tests {
		got, ok := cdt.ParseUseAsDictionary(tt.field)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseUseAsDictionary(%q) = %+v, %v; want %+v, %v", tt.field, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolvePattern(t *testing.T) {
	base, _ := url.Parse("https://example.com/app/v2/main.js")
	tests := []struct {
		match, want string
		ok          bool
	}{
		{"/app/*", "/app/*", true},
		{"main.*.js", "/app/v2/main.*.js", true},
		{"https://example.com/app/*", "/app/*", true},
		{"https://EXAMPLE.com:443/app/*", "/app/*", true},
		{"https://other.example/app/*", "", false},
		{"http://example.com/app/*", "", false},
		{"/app/:name", "", false},
		{"/app/(\\d+)", "", false},
		{"/app/*?v=1", "", false},
		{"/app/{x}?", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := cdt.ResolvePattern(tt.match, cdt.Origin(base.Scheme, base.Host), base.EscapedPath())
		if got != tt.want || ok != tt.ok {
			t.Errorf("ResolvePattern(%q) = %q, %v; want %q, %v", tt.match, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/api/*", "/api/products", true},
		{"/api/*", "/api/", true},
		{"/api/*", "/api", false},
		{"/app/*.js", "/app/v1/main.js", true},
		{"/app/*.js", "/app/main.css", false},
		{"/exact", "/exact", true},
		{"/exact", "/exact/", false},
		{"*", "/anything", true},
		{"/a*b*c", "/aXbYbZc", true},
		{"/a*b*c", "/aXbYbZ", false},
	}
	for _, tt := range tests {
		if got := cdt.MatchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// FuzzParseUseAsDictionary checks that any field parses without panicking,
// that what parses meets the rules the store relies on, and that a match
// and an id written back as RFC 8941 strings parse to the same values.
func FuzzParseUseAsDictionary(f *testing.F) {
	for _, s := range []string{`match="/a*", id="v1", type=raw`, `match="/x";a=1, match-dest=()`, `match="\"", id=""`, `a, b=?0, match="/"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		u, ok := cdt.ParseUseAsDictionary(field)
		if !ok {
			return
		}
		if u.Match == "" || len(u.Match) > cdt.MaxPattern || len(u.ID) > cdt.MaxID {
			t.Fatalf("%q parsed to %+v", field, u)
		}
		again := "match=" + cdt.DictionaryID(u.Match)
		if u.ID != "" {
			again += ", id=" + cdt.DictionaryID(u.ID)
		}
		if v, ok := cdt.ParseUseAsDictionary(again); !ok || v != u {
			t.Fatalf("%q parsed to %+v; written back as %q it parses to %+v, %v", field, u, again, v, ok)
		}
	})
}

// FuzzMatchPathAgainstRegexp compares MatchPath with a regular expression built
// from the pattern.
func FuzzMatchPathAgainstRegexp(f *testing.F) {
	f.Add("/api/*", "/api/products")
	f.Add("/a*b*c", "/aXbYbZc")
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 64 || len(path) > 256 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			return // bytes that are not UTF-8
		}
		if got, want := cdt.MatchPath(pattern, path), re.MatchString(path); got != want {
			t.Fatalf("MatchPath(%q, %q) = %v, regexp says %v", pattern, path, got, want)
		}
	})
}

// A header written for a dictionary is read back and names it; a header
// of the other coding, of another dictionary, cut short or absent is not.
func TestHeaderIsReadBackAndChecked(t *testing.T) {
	hash := sha256.Sum256([]byte("dictionary"))
	other := sha256.Sum256([]byte("other"))
	for _, coding := range []string{cdt.DCZ, cdt.DCB} {
		h := cdt.Header(coding, hash)
		if want := map[string]int{cdt.DCZ: 40, cdt.DCB: 36}[coding]; len(h) != want {
			t.Errorf("%s: header of %d bytes, want %d", coding, len(h), want)
		}
		otherCoding := cdt.DCB
		if coding == cdt.DCB {
			otherCoding = cdt.DCZ
		}
		for _, tt := range []struct {
			name string
			in   []byte
			hash [32]byte
			want error
		}{
			{"its own", append(h, "rest"...), hash, nil},
			{"another dictionary", h, other, cdt.ErrMismatch},
			{"the other coding's", cdt.Header(otherCoding, hash), hash, nil},
			{"empty", nil, hash, io.EOF},
			{"cut short", h[:len(h)-1], hash, io.ErrUnexpectedEOF},
		} {
			err := cdt.ReadHeader(coding, bytes.NewReader(tt.in), tt.hash)
			if tt.name == "the other coding's" {
				// dcz's header is longer: read as dcb, it has the wrong
				// magic; read as dcz, dcb's is cut short.
				if err == nil {
					t.Errorf("%s: %s header accepted", coding, tt.name)
				}
				continue
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("%s: %s: ReadHeader = %v, want %v", coding, tt.name, err, tt.want)
			}
		}
		bad := bytes.Clone(h)
		bad[0] ^= 1
		if err := cdt.ReadHeader(coding, bytes.NewReader(bad), hash); err != cdt.ErrHeader {
			t.Errorf("%s: a wrong magic number: %v, want ErrHeader", coding, err)
		}
	}
}

func TestZstdWindowIsTheRFCsLimit(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want int64
	}{
		{0, 8 << 20},
		{1 << 20, 8 << 20},
		{8 << 20, 10 << 20},
		{100 << 20, 125 << 20},
		{200 << 20, 128 << 20},
	} {
		if got := cdt.ZstdWindow(tt.n); got != tt.want {
			t.Errorf("ZstdWindow(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestOriginIsLowerCaseWithoutDefaultPorts(t *testing.T) {
	for _, tt := range []struct{ scheme, host, want string }{
		{"HTTPS", "Example.COM:443", "https://example.com"},
		{"http", "example.com:80", "http://example.com"},
		{"http", "example.com:443", "http://example.com:443"},
		{"https", "example.com:", "https://example.com"},
		{"https", "example.com:8443", "https://example.com:8443"},
	} {
		if got := cdt.Origin(tt.scheme, tt.host); got != tt.want {
			t.Errorf("Origin(%q, %q) = %q, want %q", tt.scheme, tt.host, got, tt.want)
		}
	}
}

func TestDictionaryIDIsAnSFString(t *testing.T) {
	if got := cdt.DictionaryID(`v"1\`); got != `"v\"1\\"` {
		t.Errorf("DictionaryID = %s", got)
	}
}
