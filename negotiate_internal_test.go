package squeeze

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// identityChoice stands for negotiate's -1 in the table below.
const identityChoice = "identity"

var defaultOffers = []string{Zstd, Brotli, Gzip}

type negotiateCase struct {
	name   string
	header []string // field lines; nil means no Accept-Encoding at all
	offers []string // nil means defaultOffers
	want   string   // a coding, or identityChoice
}

var negotiateCases = []negotiateCase{
	// No preference expressed.
	{name: "no header sends identity", header: nil, want: identityChoice},
	{name: "empty field line list sends identity", header: []string{}, want: identityChoice},
	{name: "empty field value sends identity", header: []string{""}, want: identityChoice},
	{name: "whitespace-only field value sends identity", header: []string{" \t "}, want: identityChoice},
	{name: "only empty elements send identity", header: []string{", ,\t,,"}, want: identityChoice},
	{name: "more than eight offers still negotiate", header: []string{"gzip"}, offers: []string{Zstd, Brotli, Zstd, Brotli, Zstd, Brotli, Zstd, Brotli, Gzip}, want: Gzip},
	{name: "no offers sends identity", header: []string{"gzip, br, zstd"}, offers: []string{}, want: identityChoice},

	// Real clients.
	{name: "Chrome gets zstd", header: []string{"gzip, deflate, br, zstd"}, want: Zstd},
	{name: "Firefox gets zstd", header: []string{"gzip, deflate, br, zstd"}, want: Zstd},
	{name: "Safari gets br", header: []string{"gzip, deflate, br"}, want: Brotli},
	{name: "curl --compressed gets zstd", header: []string{"deflate, gzip, br, zstd"}, want: Zstd},
	{name: "older curl --compressed gets gzip", header: []string{"deflate, gzip"}, want: Gzip},
	{name: "Go http.Transport gets gzip", header: []string{"gzip"}, want: Gzip},
	{name: "wget identity gets identity", header: []string{"identity"}, want: identityChoice},
	{name: "Chrome with dictionary codings gets zstd", header: []string{"gzip, deflate, br, zstd, dcb, dcz"}, want: Zstd},
	{name: "old IE style header gets gzip", header: []string{"gzip, deflate"}, want: Gzip},
	{name: "deflate offered and asked gets deflate", header: []string{"deflate"}, offers: []string{Gzip, Deflate}, want: Deflate},

	// Server preference breaks ties, whatever the client's order.
	{name: "tie goes to first offer not first listed", header: []string{"gzip, br"}, want: Brotli},
	{name: "tie follows reversed server order", header: []string{"gzip, deflate, br, zstd"}, offers: []string{Gzip, Brotli, Zstd}, want: Gzip},
	{name: "equal explicit weights tie by server order", header: []string{"gzip;q=0.5, zstd;q=0.5"}, want: Zstd},
	{name: "higher weight beats server order", header: []string{"zstd;q=0.5, gzip"}, want: Gzip},
	{name: "smallest weights still order", header: []string{"br;q=0.001, gzip;q=0.002"}, want: Gzip},

	// q=0 refuses.
	{name: "chi 1069 gzip q=0 never gets gzip", header: []string{"gzip;q=0"}, offers: []string{Gzip}, want: identityChoice},
	{name: "chi 1069 gzip q=0 with default offers", header: []string{"gzip;q=0"}, want: identityChoice},
	{name: "q=0 skips to next coding", header: []string{"zstd;q=0, gzip"}, want: Gzip},
	{name: "q=0.000 refuses", header: []string{"gzip;q=0.000"}, offers: []string{Gzip}, want: identityChoice},
	{name: "q=0. refuses", header: []string{"gzip;q=0."}, offers: []string{Gzip}, want: identityChoice},
	{name: "later q=0 overrides earlier acceptance", header: []string{"gzip, gzip;q=0"}, offers: []string{Gzip}, want: identityChoice},
	{name: "earlier q=0 survives later acceptance", header: []string{"gzip;q=0, gzip;q=1"}, offers: []string{Gzip}, want: identityChoice},
	{name: "repeated coding takes highest weight", header: []string{"gzip;q=0.2, br;q=0.5, gzip;q=0.9"}, want: Gzip},

	// "*".
	{name: "star covers unnamed codings", header: []string{"*"}, want: Zstd},
	{name: "star with weight picks first offer", header: []string{"*;q=0.5"}, want: Zstd},
	{name: "star does not cover refused coding", header: []string{"*;q=0.5, zstd;q=0"}, want: Brotli},
	{name: "star covers what is left after refusals", header: []string{"*, zstd;q=0, br;q=0"}, want: Gzip},
	{name: "named weight beats star", header: []string{"*;q=0.1, gzip;q=0.2"}, want: Gzip},
	{name: "star beats lower named weight", header: []string{"gzip;q=0.2, *;q=0.3"}, want: Zstd},
	{name: "star q=0 alone sends identity", header: []string{"*;q=0"}, want: identityChoice},
	{name: "star q=0 leaves named coding", header: []string{"*;q=0, gzip"}, want: Gzip},
	{name: "repeated star q=0 wins", header: []string{"*, *;q=0"}, want: identityChoice},

	// Identity.
	{name: "identity only sends identity", header: []string{"identity"}, want: identityChoice},
	{name: "identity tie goes to coding", header: []string{"identity, gzip"}, want: Gzip},
	{name: "identity preferred over lower-weight gzip", header: []string{"gzip;q=0.5, identity"}, want: identityChoice},
	{name: "identity equal weight goes to coding", header: []string{"gzip;q=0.5, identity;q=0.5"}, want: Gzip},
	{name: "star lends identity its weight", header: []string{"gzip;q=0.5, *;q=0.8"}, offers: []string{Gzip}, want: identityChoice},
	{name: "explicit identity overrides star", header: []string{"gzip;q=0.5, identity;q=0.4, *;q=0.8"}, offers: []string{Gzip}, want: Gzip},
	{name: "identity q=0 keeps coding", header: []string{"gzip, identity;q=0"}, want: Gzip},
	{name: "identity refused and nothing named still sends identity", header: []string{"identity;q=0"}, want: identityChoice},
	{name: "nothing acceptable sends identity not 406", header: []string{"identity;q=0, *;q=0"}, want: identityChoice},
	{name: "identity preference without offers", header: []string{"identity;q=0, gzip"}, offers: []string{}, want: identityChoice},

	// Spelling.
	{name: "x-gzip means gzip", header: []string{"x-gzip"}, want: Gzip},
	{name: "X-GZIP means gzip", header: []string{"X-GZIP"}, want: Gzip},
	{name: "x-gzip refusal refuses gzip", header: []string{"x-gzip;q=0, gzip"}, want: identityChoice},
	{name: "upper-case coding", header: []string{"GZIP"}, want: Gzip},
	{name: "mixed-case codings and Q", header: []string{"Br;Q=0.5, GZip;q=0.4"}, want: Brotli},
	{name: "upper-case identity", header: []string{"IDENTITY;Q=0, Gzip;q=0.1"}, offers: []string{Gzip}, want: Gzip},
	{name: "unknown codings ignored", header: []string{"compress, sdch, dcz, gzip"}, want: Gzip},
	{name: "unknown codings alone send identity", header: []string{"compress, exi"}, want: identityChoice},

	// Several field lines are one list.
	{name: "second field line counts", header: []string{"gzip", "br"}, want: Brotli},
	{name: "weights across field lines", header: []string{"br;q=0.1", "gzip"}, want: Gzip},
	{name: "refusal on second field line", header: []string{"gzip", "gzip;q=0"}, offers: []string{Gzip}, want: identityChoice},
	{name: "empty first field line", header: []string{"", "gzip"}, want: Gzip},
	{name: "open quote does not span field lines", header: []string{`br;x="a`, "gzip"}, want: Gzip},

	// Whitespace and empty elements.
	{name: "whitespace around everything", header: []string{" \tgzip \t; \tq \t= \t0.5 \t, br ;q=0.4\t"}, want: Gzip},
	{name: "tab separated", header: []string{"gzip;q=0.1,\tbr;q=0.2"}, want: Brotli},
	{name: "empty elements ignored", header: []string{",gzip,,br,"}, want: Brotli},
	{name: "whitespace elements ignored", header: []string{"gzip, ,\t, br;q=0.5"}, want: Gzip},

	// Malformed elements are ignored whole, the rest still counts.
	{name: "q above 1 ignored", header: []string{"gzip;q=2, br;q=0.5"}, want: Brotli},
	{name: "q=1.5 ignored", header: []string{"gzip;q=1.5, br;q=0.5"}, want: Brotli},
	{name: "q=1.001 ignored", header: []string{"gzip;q=1.001, br;q=0.5"}, want: Brotli},
	{name: "four decimals ignored", header: []string{"gzip;q=0.1234, br;q=0.5"}, want: Brotli},
	{name: "non-numeric q ignored", header: []string{"gzip;q=abc, br;q=0.5"}, want: Brotli},
	{name: "empty q ignored", header: []string{"gzip;q=, br;q=0.5"}, want: Brotli},
	{name: "q without value ignored", header: []string{"gzip;q, br;q=0.5"}, want: Brotli},
	{name: "bare semicolon ignored", header: []string{"gzip;, br;q=0.5"}, want: Brotli},
	{name: "leading dot q ignored", header: []string{"gzip;q=.5, br;q=0.5"}, want: Brotli},
	{name: "signed q ignored", header: []string{"gzip;q=+1, zstd;q=-0, br;q=0.5"}, want: Brotli},
	{name: "leading zero q ignored", header: []string{"gzip;q=01, br;q=0.5"}, want: Brotli},
	{name: "quoted q ignored", header: []string{`gzip;q="1", br;q=0.5`}, want: Brotli},
	{name: "unknown parameter ignored", header: []string{"gzip;level=9, br;q=0.5"}, want: Brotli},
	{name: "parameter after q ignored", header: []string{"gzip;q=1;x=y, br;q=0.5"}, want: Brotli},
	{name: "second q ignored", header: []string{"gzip;q=0.5;q=0.6, br;q=0.5"}, want: Brotli},
	{name: "space inside token ignored", header: []string{"gz ip, br;q=0.5"}, want: Brotli},
	{name: "illegal token character ignored", header: []string{"gzip/1, br;q=0.5"}, want: Brotli},
	{name: "quoted coding ignored", header: []string{`"gzip", br;q=0.5`}, want: Brotli},
	{name: "non-ASCII token ignored", header: []string{"gzïp, br;q=0.5"}, want: Brotli},
	{name: "weight without coding ignored", header: []string{";q=1, q=0.5"}, want: identityChoice},
	{name: "malformed refusal does not refuse", header: []string{"gzip, gzip;q=0.0000"}, offers: []string{Gzip}, want: Gzip},
	{name: "malformed star ignored", header: []string{"*;q=5"}, want: identityChoice},
	{name: "quoted comma does not split", header: []string{`br;x="a,gzip,b"`}, offers: []string{Gzip}, want: identityChoice},
	{name: "escaped quote stays quoted", header: []string{`br;x="a\",gzip,", deflate`}, offers: []string{Gzip, Deflate}, want: Deflate},
	{name: "elements after quoted string count", header: []string{`br;x="a,b", gzip`}, want: Gzip},
}

func offersOf(codings []string) []offer {
	if codings == nil {
		codings = defaultOffers
	}
	offers := make([]offer, len(codings))
	for i, c := range codings {
		offers[i] = offer{coding: c}
	}
	return offers
}

func choiceName(offers []offer, i int) string {
	if i == -1 {
		return identityChoice
	}
	if i < 0 || i >= len(offers) {
		return "invalid index " + strconv.Itoa(i)
	}
	return offers[i].coding
}

func TestNegotiate(t *testing.T) {
	for _, tc := range negotiateCases {
		t.Run(tc.name, func(t *testing.T) {
			offers := offersOf(tc.offers)
			if got := choiceName(offers, negotiate(tc.header, offers)); got != tc.want {
				t.Errorf("negotiate(%q, %v) = %s, want %s", tc.header, tc.offers, got, tc.want)
			}
			// The table doubles as a check that the reference agrees,
			// so that FuzzNegotiate compares against a trusted oracle.
			if got := choiceName(offers, refNegotiate(tc.header, offers)); got != tc.want {
				t.Errorf("refNegotiate(%q, %v) = %s, want %s", tc.header, tc.offers, got, tc.want)
			}
		})
	}
}

func TestParseQvalue(t *testing.T) {
	valid := map[string]int{
		"0": 0, "0.": 0, "0.0": 0, "0.000": 0, "0.001": 1, "0.01": 10, "0.1": 100,
		"0.5": 500, "0.999": 999, "1": 1000, "1.": 1000, "1.0": 1000, "1.000": 1000,
	}
	for s, want := range valid {
		if got, ok := parseQvalue(s); !ok || got != want {
			t.Errorf("parseQvalue(%q) = %d, %v; want %d, true", s, got, ok, want)
		}
	}
	for _, s := range []string{"", ".", ".5", "2", "00", "01", "0.0000", "1.001", "1.5", "1.0000", "0,5", "0.a", "-0", "+1", " 1", "1e0", "0x1"} {
		if got, ok := parseQvalue(s); ok {
			t.Errorf("parseQvalue(%q) = %d, true; want rejected", s, got)
		}
	}
}

func TestIsTokenChar(t *testing.T) {
	const tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for c := 0; c < 256; c++ {
		if got, want := isTokenChar(byte(c)), strings.IndexByte(tchars, byte(c)) >= 0; got != want {
			t.Errorf("isTokenChar(%q) = %v, want %v", byte(c), got, want)
		}
	}
}

// realHeaders are Accept-Encoding values that browsers and tools send.
var realHeaders = []struct{ name, value string }{
	{"chrome", "gzip, deflate, br, zstd"},
	{"safari", "gzip, deflate, br"},
	{"curl", "deflate, gzip, br, zstd"},
	{"weighted", "gzip;q=1.0, identity; q=0.5, *;q=0"},
}

func TestNegotiateDoesNotAllocate(t *testing.T) {
	offers := offersOf([]string{Zstd, Brotli, Gzip, Deflate})
	headers := [][]string{
		{"gzip, deflate, br, zstd"},
		{"gzip;q=1.0, identity; q=0.5, *;q=0"},
		{"x-gzip", `br;x="a,b"`, "GZIP;Q=0.001, ,,"},
	}
	for _, h := range headers {
		if n := testing.AllocsPerRun(100, func() { negotiate(h, offers) }); n != 0 {
			t.Errorf("negotiate(%q) made %v allocations, want 0", h, n)
		}
	}
}

func BenchmarkNegotiate(b *testing.B) {
	offers := offersOf(defaultOffers)
	for _, h := range realHeaders {
		header := []string{h.value}
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				negotiate(header, offers)
			}
		})
	}
}

// FuzzNegotiate feeds field lines (split at '\n') and an offer list chosen
// by sel to negotiate and requires exactly the reference's answer.
func FuzzNegotiate(f *testing.F) {
	for i, tc := range negotiateCases {
		f.Add(strings.Join(tc.header, "\n"), uint8(i))
	}
	f.Fuzz(func(t *testing.T, header string, sel uint8) {
		lines := strings.Split(header, "\n")
		offers := fuzzOffers(sel)
		got := negotiate(lines, offers)
		if got < -1 || got >= len(offers) {
			t.Fatalf("negotiate(%q, %v) = %d, not -1 or an index into offers", lines, offers, got)
		}
		if got >= 0 {
			weights := refWeights(lines)
			coding := offers[got].coding
			q, named := weights[coding]
			if !named {
				q, named = weights["*"]
			}
			if !named || q == 0 {
				t.Fatalf("negotiate(%q, %v) chose %s, which the header does not accept", lines, offers, coding)
			}
		}
		if want := refNegotiate(lines, offers); got != want {
			t.Fatalf("negotiate(%q, %v) = %s, reference says %s",
				lines, offers, choiceName(offers, got), choiceName(offers, want))
		}
	})
}

// fuzzOffers turns sel into zero to four distinct codings in some order.
func fuzzOffers(sel uint8) []offer {
	left := []string{Zstd, Brotli, Gzip, Deflate}
	n, k := int(sel%5), int(sel/5)
	var offers []offer
	for range n {
		i := k % len(left)
		k /= len(left)
		offers = append(offers, offer{coding: left[i]})
		left = slices.Delete(left, i, i+1)
	}
	return offers
}

// The reference below restates RFC 9110 §12.5.3 as plainly as possible,
// with regular expressions, maps and sorting, and shares no code with
// negotiate.

var (
	refToken  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	refQvalue = regexp.MustCompile(`^(0(\.[0-9]{0,3})?|1(\.0{0,3})?)$`)
)

func refNegotiate(lines []string, offers []offer) int {
	weights := refWeights(lines)
	weightOf := func(coding string) (int, bool) {
		if q, ok := weights[coding]; ok {
			return q, true
		}
		q, ok := weights["*"]
		return q, ok
	}
	type candidate struct{ index, q int }
	var candidates []candidate
	for i, o := range offers {
		if q, ok := weightOf(o.coding); ok && q > 0 {
			candidates = append(candidates, candidate{i, q})
		}
	}
	if len(candidates) == 0 {
		return -1
	}
	sort.SliceStable(candidates, func(a, b int) bool { return candidates[a].q > candidates[b].q })
	best := candidates[0]
	if q, ok := weightOf("identity"); ok && q > best.q {
		return -1
	}
	return best.index
}

// refWeights maps each lower-case coding named validly in lines ("x-gzip"
// read as "gzip") to its weight in thousandths: 0 if any mention refuses
// it, else its highest weight.
func refWeights(lines []string) map[string]int {
	weights := map[string]int{}
	for _, line := range lines {
		for _, element := range refSplit(line) {
			coding, q, ok := refParse(element)
			if !ok {
				continue
			}
			old, seen := weights[coding]
			switch {
			case !seen:
				weights[coding] = q
			case old == 0 || q == 0:
				weights[coding] = 0
			case q > old:
				weights[coding] = q
			}
		}
	}
	return weights
}

// refSplit splits a field line at commas outside quoted-strings.
func refSplit(line string) []string {
	var elements []string
	var current strings.Builder
	inQuotes, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case inQuotes && c == '\\':
			escaped = true
		case c == '"':
			inQuotes = !inQuotes
		case c == ',' && !inQuotes:
			elements = append(elements, current.String())
			current.Reset()
			continue
		}
		current.WriteByte(c)
	}
	return append(elements, current.String())
}

func refParse(element string) (coding string, q int, ok bool) {
	const ows = " \t"
	name, param, hasParam := strings.Cut(element, ";")
	name = strings.Trim(name, ows)
	if !refToken.MatchString(name) {
		return "", 0, false
	}
	coding = strings.ToLower(name)
	if coding == "x-gzip" {
		coding = "gzip"
	}
	if !hasParam {
		return coding, 1000, true
	}
	key, value, hasValue := strings.Cut(param, "=")
	if !hasValue || strings.ToLower(strings.Trim(key, ows)) != "q" {
		return "", 0, false
	}
	value = strings.Trim(value, ows)
	if !refQvalue.MatchString(value) {
		return "", 0, false
	}
	f, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return "", 0, false
	}
	return coding, int(math.Round(f * 1000)), true
}
