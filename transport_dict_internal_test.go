package squeeze

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestParseUseAsDictionary(t *testing.T) {
	tests := []struct {
		field string
		ok    bool
		want  useAsField
	}{
		{`match="/app/*.js"`, true, useAsField{match: "/app/*.js"}},
		{`match="/a*", id="v1", type=raw`, true, useAsField{match: "/a*", id: "v1"}},
		{`match="/a*";p=1, id="x\"y\\z", match-dest=()`, true, useAsField{match: "/a*", id: `x"y\z`}},
		{`id="1",  match="/a*" , extra=?1, n=-12, d=1.5, b=:AAE=:, tok=abc/def`, true, useAsField{match: "/a*", id: "1"}},
		{`match="/old*", match="/new*"`, true, useAsField{match: "/new*"}},
		{``, false, useAsField{}},
		{`id="only"`, false, useAsField{}},
		{`match=""`, false, useAsField{}},
		{`match=/a`, false, useAsField{}},
		{`match="/a*", type=other`, false, useAsField{}},
		{`match="/a*", type="raw"`, false, useAsField{}},
		{`match="/a*", id=v1`, false, useAsField{}},
		{`match="/a*", match-dest=("document")`, false, useAsField{}},
		{`match="/a*",`, false, useAsField{}},
		{`match="/a*" id="x"`, false, useAsField{}},
		{`Match="/a*"`, false, useAsField{}},
		{`match="/a*`, false, useAsField{}},
		{"match=\"/a\t*\"", false, useAsField{}},
		{`match="/a*", id="` + strings.Repeat("x", 1025) + `"`, false, useAsField{}},
	}
	for _, tt := range tests {
		got, ok := parseUseAsDictionary(tt.field)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseUseAsDictionary(%q) = %+v, %v; want %+v, %v", tt.field, got, ok, tt.want, tt.ok)
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
		got, ok := resolvePattern(tt.match, base)
		if got != tt.want || ok != tt.ok {
			t.Errorf("resolvePattern(%q) = %q, %v; want %q, %v", tt.match, got, ok, tt.want, tt.ok)
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
		if got := matchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
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
		u, ok := parseUseAsDictionary(field)
		if !ok {
			return
		}
		if u.match == "" || len(u.id) > maxDictionaryID {
			t.Fatalf("%q parsed to %+v", field, u)
		}
		again := "match=" + quoteSFString(u.match)
		if u.id != "" {
			again += ", id=" + quoteSFString(u.id)
		}
		if v, ok := parseUseAsDictionary(again); !ok || v != u {
			t.Fatalf("%q parsed to %+v; written back as %q it parses to %+v, %v", field, u, again, v, ok)
		}
	})
}

// FuzzMatchPathAgainstRegexp compares matchPath with a regular expression built
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
		if got, want := matchPath(pattern, path), re.MatchString(path); got != want {
			t.Fatalf("matchPath(%q, %q) = %v, regexp says %v", pattern, path, got, want)
		}
	})
}
