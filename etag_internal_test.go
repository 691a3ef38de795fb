package squeeze

import (
	"net/http"
	"strings"
	"testing"
)

func zstdSuffix(opaque string) string {
	if strings.HasSuffix(opaque, "-zstd") {
		return Zstd
	}
	return ""
}

func TestAddPlainTagsKeepsEachTagAndAddsItsPlainForm(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		weakToo bool
		want    string
		added   bool
	}{
		{"suffixed tag keeps its place, plain form follows", []string{`"abc-zstd"`}, false, `"abc-zstd", "abc"`, true},
		{"plain tag is kept", []string{`"abc"`}, false, `"abc"`, false},
		{"other coding's suffix is kept", []string{`"abc-gzip"`}, false, `"abc-gzip"`, false},
		{"weak tags are skipped for If-Match", []string{`W/"abc-zstd"`}, false, `W/"abc-zstd"`, false},
		{"weak tags stay weak for If-None-Match", []string{`W/"abc-zstd"`}, true, `W/"abc-zstd", W/"abc"`, true},
		{"star is kept", []string{`*`}, true, `*`, false},
		{"list keeps its order", []string{`"a", "b-zstd", W/"c"`}, false, `"a", "b-zstd", "b", W/"c"`, true},
		{"comma inside a tag is not a separator", []string{`"a,b-zstd"`}, false, `"a,b-zstd", "a,b"`, true},
		{"several field lines are one list", []string{`"a-zstd"`, `"b-zstd"`}, false, `"a-zstd", "a", "b-zstd", "b"`, true},
		{"only the last suffix goes", []string{`"a-zstd-zstd"`}, false, `"a-zstd-zstd", "a-zstd"`, true},
		{"tag that is only the suffix", []string{`"-zstd"`}, false, `"-zstd", ""`, true},
		{"unterminated tag is kept as it is", []string{`"abc-zstd`}, false, `"abc-zstd`, false},
		{"garbage between commas is kept", []string{`junk, "x-zstd"`}, false, `junk, "x-zstd", "x"`, true},
		{"empty elements vanish", []string{` , ,"x" ,`}, false, `"x"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, added := addPlainTags(tt.lines, tt.weakToo, zstdSuffix)
			if got != tt.want || added != tt.added {
				t.Errorf("addPlainTags(%q) = %q, %v; want %q, %v", tt.lines, got, added, tt.want, tt.added)
			}
		})
	}
}

func TestSuffixETag(t *testing.T) {
	tests := []struct {
		name string
		key  string
		etag []string
		want []string
	}{
		{"strong tag gets the coding", "Etag", []string{`"abc"`}, []string{`"abc-br"`}},
		{"empty strong tag", "Etag", []string{`""`}, []string{`"-br"`}},
		{"weak tag is left alone", "Etag", []string{`W/"abc"`}, []string{`W/"abc"`}},
		{"malformed tag is left alone", "Etag", []string{`abc`}, []string{`abc`}},
		{"two ETag lines are left alone", "Etag", []string{`"a"`, `"b"`}, []string{`"a"`, `"b"`}},
		{"no ETag stays absent", "Etag", nil, nil},
		{"non-canonical key is suffixed under the canonical one", "ETag", []string{`"abc"`}, []string{`"abc-br"`}},
		{"surrounding spaces are trimmed", "Etag", []string{` "abc" `}, []string{`"abc-br"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := append([]string(nil), tt.etag...)
			h := http.Header{}
			if tt.etag != nil {
				h[tt.key] = shared
			}
			suffixETag(h, Brotli)
			key := "Etag"
			if _, ok := h[key]; !ok && tt.etag != nil {
				key = tt.key
			}
			if got := h[key]; strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("ETag = %q, want %q", got, tt.want)
			}
			if len(h) > 1 {
				t.Errorf("header has %d keys, want one ETag field: %q", len(h), h)
			}
			if strings.Join(shared, "|") != strings.Join(tt.etag, "|") {
				t.Errorf("the handler's slice changed to %q", shared)
			}
		})
	}
}

func TestListHasTagComparesWeakly(t *testing.T) {
	tests := []struct {
		lines []string
		tag   string
		want  bool
	}{
		{[]string{`"a-zstd"`}, `"a-zstd"`, true},
		{[]string{`W/"a-zstd"`}, `"a-zstd"`, true},
		{[]string{`"x", "a-zstd"`}, `"a-zstd"`, true},
		{[]string{`"a"`}, `"a-zstd"`, false},
		{[]string{`*`}, `"a-zstd"`, false},
		{nil, `"a"`, false},
	}
	for _, tt := range tests {
		if got := listHasTag(tt.lines, tt.tag); got != tt.want {
			t.Errorf("listHasTag(%q, %s) = %v, want %v", tt.lines, tt.tag, got, tt.want)
		}
	}
}

// FuzzAddPlainTags checks that adding never panics, keeps every element,
// adds exactly the plain forms of the tags that carry the suffix, and
// undoes what suffixETag does.
func FuzzAddPlainTags(f *testing.F) {
	for _, seed := range []string{`"abc-zstd"`, `W/"a", "b-zstd"`, `*`, `"a,b-zstd", junk`, `"`, `,,`, `"x-zstd`} {
		f.Add(seed, "v1")
	}
	f.Fuzz(func(t *testing.T, line, opaque string) {
		out, added := addPlainTags([]string{line}, true, zstdSuffix)
		// The same list with nothing added: the output may only grow by
		// plain forms, one per tag that carries the suffix.
		norm, _ := addPlainTags([]string{line}, true, func(string) string { return "" })
		if len(out) < len(norm) {
			t.Fatalf("addPlainTags(%q) = %q, shorter than %q", line, out, norm)
		}
		if added != (len(out) > len(norm)) {
			t.Fatalf("addPlainTags(%q) = %q, %v; unchanged %q", line, out, added, norm)
		}
		if strings.ContainsAny(opaque, "\"\x00\\,") {
			return
		}
		h := http.Header{"Etag": {`"` + opaque + `"`}}
		suffixETag(h, Zstd)
		back, added := addPlainTags(h["Etag"], false, zstdSuffix)
		if want := h["Etag"][0] + `, "` + opaque + `"`; !added || back != want {
			t.Fatalf("addPlainTags(suffixETag(%q)) = %q, %v; want %q", opaque, back, added, want)
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
