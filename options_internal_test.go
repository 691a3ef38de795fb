package squeeze

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

func TestMatchType(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		ct      string
		want    bool
	}{
		{"exact", "application/json", "application/json", true},
		{"parameters are ignored", "application/json", "application/json; charset=utf-8", true},
		{"case is ignored", "text/html", "TEXT/HTML", true},
		{"type wildcard", "text/*", "text/event-stream", true},
		{"type wildcard is per type", "text/*", "image/png", false},
		{"structured suffix", "*/*+json", "application/ld+json", true},
		{"suffix needs a name before it", "*/*+json", "application/+json", false},
		{"suffix is a suffix", "*/*+json", "application/json+zip", false},
		{"typed suffix", "image/*+xml", "image/svg+xml", true},
		{"typed suffix is per type", "image/*+xml", "application/rss+xml", false},
		{"no subtype", "text/*", "text", false},
		{"empty", "text/*", "", false},
		{"spaces around", "text/plain", "  text/plain  ", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseTypePattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := matchTypes(compileTypes([]string{p}), tt.ct); got != tt.want {
				t.Errorf("matchTypes(%q, %q) = %v, want %v", tt.pattern, tt.ct, got, tt.want)
			}
		})
	}
}

func TestMatchTypeDoesNotAllocate(t *testing.T) {
	patterns := DefaultContentTypes()
	for i, p := range patterns {
		patterns[i], _ = parseTypePattern(p)
	}
	types := compileTypes(patterns)
	allocs := testing.AllocsPerRun(100, func() {
		matchTypes(types, "application/vnd.api+json; charset=utf-8")
	})
	if allocs != 0 {
		t.Errorf("matchTypes allocates %v times per call", allocs)
	}
}

// FuzzContentType compares matchType with path.Match, an independent
// matcher for the same glob shapes, on every pattern parseTypePattern
// accepts.
func FuzzContentType(f *testing.F) {
	for _, p := range DefaultContentTypes() {
		f.Add(p, "application/json; charset=utf-8")
	}
	f.Add("image/*+xml", "image/svg+xml")
	f.Add("*/*", "x/y")
	f.Fuzz(func(t *testing.T, pattern, ct string) {
		p, err := parseTypePattern(pattern)
		if err != nil {
			return
		}
		got := matchTypes(compileTypes([]string{p}), ct)
		if strings.ContainsAny(p, `[]\?`) {
			return // path.Match reads these as syntax; they are literal here
		}
		mediaType, _, _ := strings.Cut(ct, ";")
		mediaType = strings.ToLower(strings.Trim(mediaType, " \t"))
		if strings.Contains(mediaType, "*") {
			return // a wildcard in the value itself is no media type
		}
		typ, sub, ok := strings.Cut(mediaType, "/")
		want, _ := path.Match(p, mediaType)
		// A type and a subtype are tokens: ASCII letters, digits and
		// !#$%&'*+-.^_`|~ (RFC 9110 §8.3.1, §5.6.2).
		tokenRE := regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
		want = want && ok && tokenRE.MatchString(typ) && tokenRE.MatchString(sub)
		if _, suffix, isSuffix := strings.Cut(p, "/*+"); isSuffix && want {
			want = len(sub) > len(suffix)+1 // a name must precede "+suffix"
		}
		if got != want {
			t.Fatalf("matchTypes(%q, %q) = %v, path.Match says %v", p, ct, got, want)
		}
	})
}
