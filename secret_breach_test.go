package squeeze_test

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// breachVariants runs the strongest oracle by hand: each guess asked with
// this many values of an unrelated reflected parameter, for fresh padding
// under WithLengthHiding(32), the minimum length taken. 128 makes 393,216
// requests per attack on a 12-character token (BENCHMARKS.md, "Secrets").
var breachVariants = flag.Int("breach.variants", 0, "run TestSecretBreachOracleByHand with this many variants per guess (128: 393k requests per attack)")

// breachSecretPage is breachPage with the token written by WriteSecret
// when marked, and a second reflected parameter, v, which the strongest
// oracle varies to draw fresh padding for the same guess.
func breachSecretPage(token string, marked bool) http.HandlerFunc {
	footer := strings.Repeat("All rights reserved. ", 60)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		q := r.URL.Query()
		fmt.Fprint(w, `<!doctype html><html><head><title>Account</title></head><body>
<form method="post" action="/transfer"><input type="hidden" name="csrf" value="token=`)
		if marked {
			if _, err := squeeze.WriteSecret(w, []byte(token)); err != nil {
				panic(err)
			}
		} else {
			fmt.Fprint(w, token)
		}
		fmt.Fprintf(w, `">
<label>Amount <input name="amount"></label><button>Send</button></form>
<p>You searched for: %s</p><p>Page %s</p>
<footer>%s</footer></body></html>`, q.Get("q"), q.Get("v"), footer)
	}
}

// breachOracle runs breachGuess's attack (two tries per candidate behind
// eight shifting prefixes) on h in coding, with the strongest oracle: each
// length is the minimum over variants requests that differ only in an
// unrelated reflected parameter, which under WithLengthHiding draws fresh
// padding. It returns what it recovered, the requests it made, and, when
// record is not nil, records each query asked with its length.
func breachOracle(h http.Handler, coding string, length, variants int, record func(q string, n int)) (string, int) {
	const alphabet = "0123456789abcdef"
	requests := 0
	size := func(q string) int {
		best := -1
		for v := range variants {
			rec := serveAt(h, "/account?q="+url.QueryEscape(q)+"&v="+fmt.Sprint(v), coding)
			requests++
			if n := rec.Body.Len(); best < 0 || n < best {
				best = n
			}
		}
		if record != nil {
			record(q, best)
		}
		return best
	}
	known := ""
	for len(known) < length {
		best, bestScore := byte(0), -1<<31
		for i := range len(alphabet) {
			c := string(alphabet[i])
			score := 0
			for j := range 8 {
				shift := "~!@#$%^&"[:j]
				score += size(shift+"token="+known+"{}"+c) - size(shift+"token="+known+c+"{}")
			}
			if score > bestScore {
				best, bestScore = alphabet[i], score
			}
		}
		known += string(best)
	}
	return known, requests
}

// rightChars counts the characters of got that match want.
func rightChars(got, want string) int {
	n := 0
	for i := range min(len(got), len(want)) {
		if got[i] == want[i] {
			n++
		}
	}
	return n
}

// TestSecretDefeatsBreachOracle proves a marked token safe from the
// attack at any number of requests, in every coding squeeze offers for a
// response that marks one (zstd, gzip, deflate; br never): every request
// the attack makes gets a response of the same length whichever token the
// page holds, so no number of requests, and no way of combining their
// lengths, tells tokens apart. The attack run against the marked token
// recovers no more than chance; the same attack on the same page with the
// token unmarked recovers it whole (the instrument works).
func TestSecretDefeatsBreachOracle(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("an attack of thousands of requests, each served in one goroutine: nothing for the race detector to see, over 50 times the CPU under it (.ci/run runs it without -race)")
	}
	t.Parallel()
	const token, other = "7f3a9c0e5b1d", "c2e81b4f06a9"
	unmarked := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd)).Handler(breachSecretPage(token, false))
	if got, n := breachOracle(unmarked, squeeze.Zstd, len(token), 1, nil); got != token {
		t.Fatalf("unmarked, the attack recovered %q in %d requests, want %q: the oracle is too weak to show anything", got, n, token)
	}
	for _, coding := range []string{squeeze.Zstd, squeeze.Gzip, squeeze.Deflate} {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate))
			right := m.Handler(breachSecretPage(token, true))
			wrong := m.Handler(breachSecretPage(other, true))
			unequal := 0
			got, n := breachOracle(right, coding, len(token), 1, func(q string, n int) {
				rec := serveAt(wrong, "/account?q="+url.QueryEscape(q)+"&v=0", coding)
				if rec.Header().Get("Content-Encoding") != coding {
					t.Fatalf("Content-Encoding %q, want %s", rec.Header().Get("Content-Encoding"), coding)
				}
				if rec.Body.Len() != n {
					if unequal++; unequal <= 3 {
						t.Errorf("q=%q: %d bytes with the token %s, %d with %s", q, n, token, rec.Body.Len(), other)
					}
				}
			})
			if unequal > 0 {
				t.Fatalf("%d of %d requests told the tokens apart by length", unequal, n)
			}
			// Chance alone gets one in 16 right.
			if r := rightChars(got, token); r > 3 {
				t.Errorf("marked, the attack recovered %q of %q (%d characters right) in %d requests", got, token, r, n)
			}
		})
	}
}

// TestSecretBreachOracleByHand runs the strongest oracle at the scale the
// issue measured (-breach.variants=128: 393,216 requests per attack)
// against four tokens, marked and unmarked, under WithLengthHiding(32), in
// zstd and gzip (deflate cannot be padded), and logs what it recovered.
// It fails if a marked token is recovered beyond chance. Skipped unless
// -breach.variants is set: it takes minutes.
func TestSecretBreachOracleByHand(t *testing.T) {
	if *breachVariants <= 0 {
		t.Skip("run by hand: go test -run TestSecretBreachOracleByHand -breach.variants=128 -v -timeout 2h .")
	}
	tokens := []string{"7f3a9c0e5b1d", "0b8e2d4c6a19", "e5d1f07a3c82", "94c6b0e2a7f1"}
	for _, coding := range []string{squeeze.Zstd, squeeze.Gzip} {
		for _, marked := range []bool{true, false} { // marked first: the figure that matters
			recovered := 0
			requests := 0
			for _, token := range tokens {
				m := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(32))
				got, n := breachOracle(m.Handler(breachSecretPage(token, marked)), coding, len(token), *breachVariants, nil)
				requests = n
				r := rightChars(got, token)
				t.Logf("%s, marked %v: recovered %q of %q (%d right) in %d requests", coding, marked, got, token, r, n)
				if got == token {
					recovered++
				}
				if marked && r > 3 {
					t.Errorf("%s: a marked token %q came back %q (%d characters right)", coding, token, got, r)
				}
			}
			t.Logf("%s, marked %v: %d/%d tokens at %d requests each", coding, marked, recovered, len(tokens), requests)
		}
	}
}

// TestMarkedSecretStreamLengthIsTheSameWhateverReflectedBytesBeginIt:
// the bytes at the end of a write that may begin a marked secret are held
// back; where they go out (at a Flush, at the stream's end, before a
// WriteSecret) must not depend on whether they do begin it, or a page
// that reflects input just before one of those points tells, by its
// length, whether the input is a prefix of the secret: a byte at a time.
func TestMarkedSecretStreamLengthIsTheSameWhateverReflectedBytesBeginIt(t *testing.T) {
	t.Parallel()
	const token, other = "7f3a9c0e5b1d", "c2e81b4f06a9"
	footer := strings.Repeat("All rights reserved. ", 60)
	long := strings.Repeat("<p>A paragraph of the page, long enough to stream.</p>\n", 700) // over the 32 KiB buffer
	pages := map[string]func(token string) http.HandlerFunc{
		"reflected before a Flush": func(token string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if _, err := squeeze.TemplateSecret(w, token); err != nil {
					panic(err)
				}
				fmt.Fprintf(w, "<!doctype html><html><body><p>Results for %s", r.URL.Query().Get("q"))
				http.NewResponseController(w).Flush()
				fmt.Fprintf(w, `</p><input type="hidden" name="csrf" value="%s"><footer>%s</footer></body></html>`, token, footer)
			}
		},
		"reflected at the end of a stream": func(token string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if _, err := squeeze.TemplateSecret(w, token); err != nil {
					panic(err)
				}
				fmt.Fprintf(w, `<!doctype html><html><body><input type="hidden" name="csrf" value="%s">%s<p>Results for %s`, token, long, r.URL.Query().Get("q"))
			}
		},
		"reflected before a WriteSecret": func(token string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if _, err := squeeze.TemplateSecret(w, token); err != nil {
					panic(err)
				}
				fmt.Fprintf(w, "<!doctype html><html><body>%s<p>Results for %s", long, r.URL.Query().Get("q"))
				if _, err := squeeze.WriteSecret(w, []byte(token)); err != nil {
					panic(err)
				}
				fmt.Fprintf(w, `</p><footer>%s</footer></body></html>`, footer)
			}
		},
	}
	for name, page := range pages {
		for _, coding := range []string{squeeze.Zstd, squeeze.Gzip, squeeze.Deflate} {
			t.Run(name+"/"+coding, func(t *testing.T) {
				t.Parallel()
				m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip, squeeze.Deflate))
				right, wrong := m.Handler(page(token)), m.Handler(page(other))
				for k := 1; k < len(token); k++ {
					q := "/account?q=" + token[:k]
					a, b := serveAt(right, q, coding), serveAt(wrong, q, coding)
					if a.Header().Get("Content-Encoding") != coding {
						t.Fatalf("Content-Encoding %q, want %s", a.Header().Get("Content-Encoding"), coding)
					}
					if a.Body.Len() != b.Body.Len() {
						t.Errorf("q=%s: %d bytes with the token %s, %d with %s", token[:k], a.Body.Len(), token, b.Body.Len(), other)
					}
				}
			})
		}
	}
}
