package sfv_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/sfv"
)

func TestQuoteStringEscapesQuotesAndBackslashes(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{`/a`, `"/a"`, true},
		{``, `""`, true},
		{`a"b`, `"a\"b"`, true},
		{`a\b`, `"a\\b"`, true},
		{"a\tb", "", false},
		{"a\x7fb", "", false},
		{"caf\u00e9", "", false},
	} {
		got, ok := sfv.QuoteString(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("QuoteString(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// member is a dictionary member as ParseDictionary reports it.
type member struct {
	key string
	v   sfv.Value
}

func members(field string) ([]member, bool) {
	var got []member
	ok := sfv.ParseDictionary(field, func(key string, v sfv.Value) bool {
		got = append(got, member{key, v})
		return true
	})
	return got, ok
}

func TestParseDictionaryReportsEachMembersKind(t *testing.T) {
	got, ok := members(` a, b=?0, c="x\"y\\z";p=1, d=tok/en:1, e=-12, f=1.5, g=:AAE=:, h=(1 "two" three;q=?1), i=(), *j;k ` + "\t")
	want := []member{
		{"a", sfv.Value{Kind: sfv.Bare}},
		{"b", sfv.Value{Kind: sfv.Other}},
		{"c", sfv.Value{Kind: sfv.String, Str: `x"y\z`}},
		{"d", sfv.Value{Kind: sfv.Token, Str: "tok/en:1"}},
		{"e", sfv.Value{Kind: sfv.Other}},
		{"f", sfv.Value{Kind: sfv.Other}},
		{"g", sfv.Value{Kind: sfv.Other}},
		{"h", sfv.Value{Kind: sfv.InnerList, Len: 3}},
		{"i", sfv.Value{Kind: sfv.InnerList}},
		{"*j", sfv.Value{Kind: sfv.Bare}},
	}
	if !ok || len(got) != len(want) {
		t.Fatalf("got %+v, %v", got, ok)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseDictionaryRefusesWhatRFC8941Does(t *testing.T) {
	for _, field := range []string{
		``, ` `, `A=1`, `a=`, `a=1,`, `a=1 b=2`, `a=-`, `a=?2`, `a=:AAE=`, `a=:!!:`,
		`a="x`, `a="\x"`, "a=\"\x01\"", `a=(1`, `a=(1,2)`, `a=(1 ""x)`, `a=1;`, `a=1;B`, `a=1;b=`,
		`a=1;b="`, `a=(1;B)`, `a=@`,
	} {
		if got, ok := members(field); ok {
			t.Errorf("ParseDictionary(%q) accepted: %+v", field, got)
		}
	}
	stopped := sfv.ParseDictionary(`a, b`, func(key string, _ sfv.Value) bool { return key != "b" })
	if stopped {
		t.Error("ParseDictionary reports true when member refused one")
	}
}

func TestBinaryRoundTrips(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 31, 32, 33, 47, 48, 49, 100} {
		data := bytes.Repeat([]byte{0xfb, 0xef, 0x01}, n)[:n]
		field := sfv.Binary(data)
		for _, f := range []string{field, strings.ReplaceAll(field, "=", ""), " \t" + field + " "} {
			dst := make([]byte, n)
			m, ok := sfv.ParseBinary(dst, f)
			if !ok || m != n || !bytes.Equal(dst, data) {
				t.Errorf("ParseBinary(%q) = %d, %v", f, m, ok)
			}
		}
		if n > 0 {
			if _, ok := sfv.ParseBinary(make([]byte, n-1), field); ok {
				t.Errorf("%d bytes fit %d", n, n-1)
			}
		}
	}
}

func TestParseBinaryIsStrict(t *testing.T) {
	hash := sha256.Sum256([]byte("dictionary"))
	b64 := base64.StdEncoding.EncodeToString(hash[:])
	for _, f := range []string{
		b64, ":" + b64, ":" + b64 + ":;a=1", "::" + b64, ":" + b64[:42] + "B=:",
		":" + b64[:10] + " " + b64[11:] + ":", ":" + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff}) + ":",
		":" + b64 + b64 + "=:", ":A:",
	} {
		if n, ok := sfv.ParseBinary(make([]byte, 64), f); ok && f != ":"+b64[:42]+"B=:" || ok && b64[42] != 'B' {
			t.Errorf("ParseBinary(%q) = %d, true", f, n)
		}
	}
	if n, ok := sfv.ParseBinary(nil, "::"); !ok || n != 0 {
		t.Errorf("ParseBinary(::) = %d, %v", n, ok)
	}
}

func TestParseBinaryDoesNotAllocate(t *testing.T) {
	field := sfv.Binary(bytes.Repeat([]byte("x"), 200))
	var dst [200]byte
	if n := testing.AllocsPerRun(100, func() { sfv.ParseBinary(dst[:], field) }); n != 0 {
		t.Errorf("ParseBinary allocates %v times", n)
	}
}

// FuzzParseBinary checks that what ParseBinary accepts is the byte
// sequence of what it decodes to, written canonically, up to padding.
func FuzzParseBinary(f *testing.F) {
	f.Add(sfv.Binary([]byte("dictionary")))
	f.Add("::")
	f.Add(":" + strings.Repeat("A", 70) + ":")
	f.Fuzz(func(t *testing.T, s string) {
		dst := make([]byte, 64)
		n, ok := sfv.ParseBinary(dst, s)
		if !ok {
			return
		}
		inner := strings.TrimRight(strings.Trim(strings.Trim(s, " \t"), ":"), "=")
		if canon := strings.TrimRight(base64.StdEncoding.EncodeToString(dst[:n]), "="); inner != canon {
			t.Fatalf("accepted %q, which is not the byte sequence of %x", s, dst[:n])
		}
	})
}

// FuzzParseDictionary checks that any field parses without panicking and
// that the strings it reports, written back, parse to the same values.
func FuzzParseDictionary(f *testing.F) {
	for _, s := range []string{`match="/a*", id="v1", type=raw`, `a=(1 2);b, c=?1`, `x="\"\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		got, ok := members(field)
		if !ok {
			return
		}
		for _, m := range got {
			if m.v.Kind != sfv.String {
				continue
			}
			q, ok := sfv.QuoteString(m.v.Str)
			if !ok {
				t.Fatalf("%q: member %s is %q, no sf-string", field, m.key, m.v.Str)
			}
			again, ok := members(m.key + "=" + q)
			if !ok || len(again) != 1 || again[0] != m {
				t.Fatalf("%q: member %+v written back as %s parses to %+v, %v", field, m, q, again, ok)
			}
		}
	})
}
