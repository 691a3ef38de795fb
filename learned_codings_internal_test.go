package squeeze

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/internal/train"
)

func TestDeltaCodingsOfOffersThoseThatBeatTheCodingTheyReplaceSmallerFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		trials []codingTrial
		want   []string
	}{
		{"both win, dcb smaller by more than the slack", []codingTrial{{DCZ, 900, 1000}, {DCB, 800, 1000}}, []string{DCB, DCZ}},
		{"both win, within the slack: the store's order", []codingTrial{{DCZ, 820, 1000}, {DCB, 800, 1000}}, []string{DCZ, DCB}},
		{"both win, the store prefers dcb", []codingTrial{{DCB, 800, 1000}, {DCZ, 600, 1000}}, []string{DCZ, DCB}},
		{"dcz loses to zstd", []codingTrial{{DCZ, 1001, 1000}, {DCB, 990, 1000}}, []string{DCB}},
		{"dcz only ties", []codingTrial{{DCZ, 1000, 1000}, {DCB, 700, 1000}}, []string{DCB}},
		{"both lose", []codingTrial{{DCZ, 1100, 1000}, {DCB, 1040, 1000}}, nil},
		{"the store offers dcz alone", []codingTrial{{DCZ, 500, 1000}}, []string{DCZ}},
	} {
		if got := deltaCodingsOf(tc.trials); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLearnedDictionaryWhoseDCZLostGoesOutOnlyAsDCB publishes a learned
// dictionary whose round found dcz no smaller than zstd (its codings: dcb
// alone): a client naming dcz alone gets zstd, one that accepts both gets
// dcb, over HTTP/1.1 and HTTP/2.
func TestLearnedDictionaryWhoseDCZLostGoesOutOnlyAsDCB(t *testing.T) {
	m, err := New(WithLearnedDictionary("/p/*"))
	if err != nil {
		t.Fatal(err)
	}
	pages := learnedSamples(2, 16<<10)
	r := m.dicts.learner.routes[0]
	dict := pages[0]
	if !r.publish(r.newLearnedDict(dict, 1, []string{DCB})) {
		t.Fatal("the dictionary was not published")
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, _ = w.Write(pages[1])
	}))
	sum := sha256.Sum256(dict)
	avail := ":" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	for _, p := range testtool.Protocols() {
		t.Run(p.Name, func(t *testing.T) {
			srv, c := testtool.StartServer(t, p.Name, p.Major, h, false)
			for _, tc := range []struct{ accept, want string }{
				{"dcz, zstd", Zstd},
				{"gzip, deflate, br, zstd, dcb, dcz", DCB},
				{"dcz, dcb", DCB},
			} {
				res, _ := testtool.Fetch(t, c, srv.URL+"/p/1", tc.accept, "Available-Dictionary", avail)
				if got := res.Header.Get("Content-Encoding"); got != tc.want {
					t.Errorf("a client accepting %q got %q, want %s", tc.accept, got, tc.want)
				}
			}
		})
	}
}

// localeRecords returns n generated JSON records of the same keys with
// values of their own, on which dcb comes out smaller than dcz.
func localeRecords(first, n int) [][]byte {
	var out [][]byte
	for i := first; i < first+n; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"main":{"locale-%d":{"identity":{"language":"l%d"},"numbers":{`, i, i)
		x := uint32(i*7919 + 7)
		for k := range 120 {
			x = x*1664525 + 1013904223
			fmt.Fprintf(&b, `"symbols-numberSystem-%s":{"decimal":"%c","group":"%c","percentSign":"%%","pattern":"#,##0.%03d"},`,
				learnedWords[k%len(learnedWords)], 'a'+x%7, 'b'+x%5, x%1000)
		}
		b.WriteString(`"end":1}}}}`)
		out = append(out, []byte(b.String()))
	}
	return out
}

// TestLearnedRoundChoosesTheCodingsOfADictionaryItDidNotTrain gives a
// route a live dictionary as one taken from the fleet's store comes (no
// codings of its own: the store's, dcz first) and runs a round of new
// samples: the round chooses its codings on them, dcb first.
func TestLearnedRoundChoosesTheCodingsOfADictionaryItDidNotTrain(t *testing.T) {
	r := newTestRoute(t, LearnedRetrainBelow(0)) // the round only measures
	trained, err := train.Train(localeRecords(0, 24), defaultLearnedDictionarySize, 64<<20, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ld := r.newLearnedDict(trained.Dict, 1, nil)
	if !r.publish(ld) {
		t.Fatal("the dictionary was not published")
	}
	if c := ld.sd.d.codings.Load(); c != nil {
		t.Fatalf("a dictionary from the fleet has codings %v before any round", *c)
	}
	r.round(t.Context(), localeRecords(100, 8), 0)
	var got []string
	if c := ld.sd.d.codings.Load(); c != nil {
		got = *c
	}
	if !reflect.DeepEqual(got, []string{DCB, DCZ}) {
		t.Errorf("after a round the dictionary's codings are %v, want [dcb dcz]", got)
	}
}
