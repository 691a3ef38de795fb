package squeeze

import (
	"net/http"
	"strings"
	"testing"
)

func zstdSuffix(string) string { return Zstd }

func TestStripTags(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    string
		changed bool
	}{
		{"suffix of the coding is removed", []string{`"abc-zstd"`}, `"abc"`, true},
		{"plain tag is kept", []string{`"abc"`}, `"abc"`, false},
		{"other coding's suffix is kept", []string{`"abc-gzip"`}, `"abc-gzip"`, false},
		{"weak tags are never ours", []string{`W/"abc-zstd"`}, `W/"abc-zstd"`, false},
		{"star is kept", []string{`*`}, `*`, false},
		{"list keeps its order", []string{`"a", "b-zstd", W/"c"`}, `"a", "b", W/"c"`, true},
		{"comma inside a tag is not a separator", []string{`"a,b-zstd"`}, `"a,b"`, true},
		{"several field lines are one list", []string{`"a-zstd"`, `"b-zstd"`}, `"a", "b"`, true},
		{"only the last suffix goes", []string{`"a-zstd-zstd"`}, `"a-zstd"`, true},
		{"tag that is only the suffix", []string{`"-zstd"`}, `""`, true},
		{"unterminated tag is kept as it is", []string{`"abc-zstd`}, `"abc-zstd`, false},
		{"garbage between commas is kept", []string{`junk, "x-zstd"`}, `junk, "x"`, true},
		{"empty elements vanish", []string{` , ,"x" ,`}, `"x"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := stripTags(tt.lines, zstdSuffix)
			if got != tt.want || changed != tt.changed {
				t.Errorf("stripTags(%q) = %q, %v; want %q, %v", tt.lines, got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestSuffixETag(t *testing.T) {
	tests := []struct {
		name string
		etag []string
		want []string
	}{
		{"strong tag gets the coding", []string{`"abc"`}, []string{`"abc-br"`}},
		{"empty strong tag", []string{`""`}, []string{`"-br"`}},
		{"weak tag is left alone", []string{`W/"abc"`}, []string{`W/"abc"`}},
		{"malformed tag is left alone", []string{`abc`}, []string{`abc`}},
		{"two ETag lines are left alone", []string{`"a"`, `"b"`}, []string{`"a"`, `"b"`}},
		{"no ETag stays absent", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := append([]string(nil), tt.etag...)
			h := http.Header{}
			if tt.etag != nil {
				h["Etag"] = shared
			}
			suffixETag(h, Brotli)
			if got := h["Etag"]; strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("ETag = %q, want %q", got, tt.want)
			}
			if strings.Join(shared, "|") != strings.Join(tt.etag, "|") {
				t.Errorf("the handler's slice changed to %q", shared)
			}
		})
	}
}

// FuzzStripTags checks that stripping never panics, removes exactly one
// suffix from each tag that has it, and undoes what suffixETag does.
func FuzzStripTags(f *testing.F) {
	for _, seed := range []string{`"abc-zstd"`, `W/"a", "b-zstd"`, `*`, `"a,b-zstd", junk`, `"`, `,,`, `"x-zstd`} {
		f.Add(seed, "v1")
	}
	f.Fuzz(func(t *testing.T, line, opaque string) {
		out, changed := stripTags([]string{line}, zstdSuffix)
		// The same list with nothing stripped: stripping may only shorten
		// tags by whole suffixes, and only tags that carry one.
		norm, _ := stripTags([]string{line}, func(string) string { return "" })
		removed := len(norm) - len(out)
		if changed != (removed > 0) || removed%len("-zstd") != 0 ||
			removed/len("-zstd") > strings.Count(norm, `-zstd"`) {
			t.Fatalf("stripTags(%q) = %q, %v; unstripped %q", line, out, changed, norm)
		}
		if strings.ContainsAny(opaque, "\"\x00") {
			return
		}
		h := http.Header{"Etag": {`"` + opaque + `"`}}
		suffixETag(h, Zstd)
		back, changed := stripTags(h["Etag"], zstdSuffix)
		if !changed || back != `"`+opaque+`"` {
			t.Fatalf("stripTags(suffixETag(%q)) = %q, %v", opaque, back, changed)
		}
	})
}

func TestHeaderHasToken(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		token string
		want  bool
	}{
		{"exact", []string{"Accept-Encoding"}, "accept-encoding", true},
		{"among others", []string{"Origin, accept-encoding"}, "accept-encoding", true},
		{"second line", []string{"Origin", " ACCEPT-ENCODING "}, "accept-encoding", true},
		{"with parameters", []string{"no-cache, no-transform;x=1"}, "no-transform", true},
		{"prefix is not a match", []string{"accept-encodings"}, "accept-encoding", false},
		{"substring is not a match", []string{"max-age=0, x-no-transform"}, "no-transform", false},
		{"absent", nil, "upgrade", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := headerHasToken(tt.lines, tt.token); got != tt.want {
				t.Errorf("headerHasToken(%q, %q) = %v, want %v", tt.lines, tt.token, got, tt.want)
			}
		})
	}
}
