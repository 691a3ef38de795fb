package squeeze_test

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// breachPage is a handler of the kind BREACH attacks: a page that holds a
// secret token and reflects a query parameter next to it.
func breachPage(token string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Account</title></head><body>
<form method="post" action="/transfer"><input type="hidden" name="csrf" value="token=%s">
<label>Amount <input name="amount"></label><button>Send</button></form>
<p>You searched for: %s</p>
<footer>%s</footer></body></html>`, token, r.URL.Query().Get("q"), strings.Repeat("All rights reserved. ", 60))
	}
}

// breachGuess runs the attack of the BREACH paper on h with coding: it
// guesses the token's characters one at a time from the lengths of the
// compressed responses, with the two-tries method: for each candidate c it
// asks for "token=<known><c>{}" and "token=<known>{}<c>", which cost the
// same when c is wrong and where the first compresses better when c is
// right, and takes the c with the largest difference (the first of equals).
// Since lengths are whole bytes and a longer match saves a few bits, each
// pair is asked behind eight prefixes of 0 to 7 characters, which shift
// where the bits fall, and the differences summed. It returns what it
// recovered and how many requests that took.
func breachGuess(h http.Handler, coding string, length int) (string, int) {
	const alphabet = "0123456789abcdef"
	size := func(q string) int {
		rec := serveAt(h, "/account?q="+url.QueryEscape(q), coding)
		return rec.Body.Len()
	}
	known, requests := "", 0
	for len(known) < length {
		best, bestScore := byte(0), -1<<31
		for i := range len(alphabet) {
			c := string(alphabet[i])
			score := 0
			for j := range 8 {
				shift := "~!@#$%^&"[:j]
				score += size(shift+"token="+known+"{}"+c) - size(shift+"token="+known+c+"{}")
				requests += 2
			}
			if score > bestScore {
				best, bestScore = alphabet[i], score
			}
		}
		known += string(best)
	}
	return known, requests
}

// TestLengthHidingDefeatsBreachOracle runs the attack on zstd, whose
// lengths at the default level show a right guess clearly enough for it to
// recover the whole token; gzip's and br's show it on only some of the
// page's characters within these requests (the attack needs more there).
func TestLengthHidingDefeatsBreachOracle(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("an attack of thousands of requests, each served in one goroutine: nothing for the race detector to see, over 50 times the CPU under it (.ci/run runs it without -race)")
	}
	t.Parallel()
	const token = "7f3a9c0e5b1d"
	plain := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd)).Handler(breachPage(token))
	got, n := breachGuess(plain, squeeze.Zstd, len(token))
	if got != token {
		t.Fatalf("without length hiding the attack recovered %q in %d requests, want %q: the oracle is too weak to show anything", got, n, token)
	}
	m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd), squeeze.WithLengthHiding(32))
	squeeze.SetLengthHidingSecret(m, [32]byte{1, 2, 3})
	padded, n2 := breachGuess(m.Handler(breachPage(token)), squeeze.Zstd, len(token))
	if n2 != n {
		t.Fatalf("%d requests with padding, %d without", n2, n)
	}
	right := 0
	for i := range token {
		if padded[i] == token[i] {
			right++
		}
	}
	// Chance alone gets one in 16 right; the first character is easy.
	if right > 3 {
		t.Errorf("with length hiding the attack still recovered %q of %q (%d characters right) in %d requests", padded, token, right, n)
	}
}

// breachStream is breachPage as a stream: a 40 KiB page whose first 34 KiB
// (over the default buffer) come before the token and the reflected input,
// or, flushed early, a page that flushes its head before them.
func breachStream(token string, flushEarly bool) http.HandlerFunc {
	page := breachPage(token)
	filler := "<!-- " + strings.Repeat("layout and scripts that come first. ", 34<<10/36) + " -->\n"
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if flushEarly {
			_, _ = io.WriteString(w, "<!doctype html>\n")
			http.NewResponseController(w).Flush()
		} else {
			_, _ = io.WriteString(w, filler)
		}
		page(w, r)
	}
}

// TestLengthHidingDefeatsBreachOracleOnStreams runs the attack on a page
// that is a stream, a long one or one flushed early, in zstd: unpadded it
// recovers the token; padded by all of the stream's bytes, every guess gets
// its own padding and it recovers no more than chance does. (Padding from
// a stream's first WithBufferSize bytes gave every guess the same.)
func TestLengthHidingDefeatsBreachOracleOnStreams(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("an attack of thousands of requests, each served in one goroutine: nothing for the race detector to see, over 50 times the CPU under it (.ci/run runs it without -race)")
	}
	t.Parallel()
	const token = "7f3a9c0e5b1d"
	for _, flushEarly := range []bool{false, true} {
		name := map[bool]string{false: "40 KiB page", true: "flushed early"}[flushEarly]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			page := breachStream(token, flushEarly)
			if rec := serveAt(newMiddleware(t).Handler(page), "/account", squeeze.Zstd); rec.Header().Get("Content-Length") != "" {
				t.Fatalf("the page went out with Content-Length %q: not a stream", rec.Header().Get("Content-Length"))
			}
			plain := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd)).Handler(page)
			got, n := breachGuess(plain, squeeze.Zstd, len(token))
			if got != token {
				t.Fatalf("without length hiding the attack recovered %q in %d requests, want %q: the oracle is too weak to show anything", got, n, token)
			}
			m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd), squeeze.WithLengthHiding(32))
			squeeze.SetLengthHidingSecret(m, [32]byte{1, 2, 3})
			padded, _ := breachGuess(m.Handler(page), squeeze.Zstd, len(token))
			right := 0
			for i := range token {
				if padded[i] == token[i] {
					right++
				}
			}
			// Chance alone gets one in 16 right; the first character is easy.
			if right > 3 {
				t.Errorf("with length hiding the attack still recovered %q of %q (%d characters right) in %d requests", padded, token, right, n)
			}
		})
	}
}

// breachFactor enables TestLengthHidingBreachFactor, an attack that takes
// minutes: go test -run TestLengthHidingBreachFactor -breach.factor .
var breachFactor = flag.Bool("breach.factor", false, "measure how many more requests BREACH needs under WithLengthHiding(32), on streams (minutes)")

// TestLengthHidingBreachFactor measures, by hand, the strongest oracle
// against length hiding: each request of breachGuess is asked in v
// variants that also change two unrelated reflected letters, so that each
// gets its own padding, and the shortest response counts. It recovers 3
// tokens of 6 characters from an 8 KiB page flushed early (a stream) and
// from a 40 KiB one in zstd, unpadded with v 1 and padded with v doubling
// from 32, and logs what each got and the requests it took
// (BENCHMARKS.md, docs/reference.md).
func TestLengthHidingBreachFactor(t *testing.T) {
	if !*breachFactor {
		t.Skip("minutes of requests: run with -breach.factor")
	}
	tokens := []string{"7f3a9c", "0d9e4b", "b5c1e8"}
	page := func(token string, long bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<!doctype html>\n")
			if long {
				_, _ = io.WriteString(w, "<!-- "+strings.Repeat("layout and scripts that come first. ", 34<<10/36)+" -->\n")
			} else {
				http.NewResponseController(w).Flush()
			}
			fmt.Fprintf(w, `<html><head><title>Account</title></head><body>
<form method="post" action="/transfer"><input type="hidden" name="csrf" value="token=%s">
<label>Amount <input name="amount"></label><button>Send</button></form>
<p>You searched for: %s</p><p>Page view %s</p>
<footer>%s</footer></body></html>`, token, r.URL.Query().Get("q"), r.URL.Query().Get("v"), strings.Repeat("All rights reserved. ", 300))
		})
	}
	const alphabet = "0123456789abcdef"
	guess := func(h http.Handler, length, variants int, seed uint64) (string, int) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		size := func(q string) int {
			least := -1
			for range variants {
				v := []byte("gg") // letters no token holds, fixed when unpadded
				if variants > 1 {
					v[0], v[1] = byte('g'+rnd.IntN(20)), byte('g'+rnd.IntN(20))
				}
				n := serveAt(h, "/account?q="+url.QueryEscape(q)+"&v="+string(v), squeeze.Zstd).Body.Len()
				if least < 0 || n < least {
					least = n
				}
			}
			return least
		}
		known, requests := "", 0
		for len(known) < length {
			best, bestScore := byte(0), -1<<31
			for i := range len(alphabet) {
				c := string(alphabet[i])
				score := 0
				for j := range 8 {
					shift := "~!@#$%^&"[:j]
					score += size(shift+"token="+known+"{}"+c) - size(shift+"token="+known+c+"{}")
					requests += 2 * variants
				}
				if score > bestScore {
					best, bestScore = alphabet[i], score
				}
			}
			known += string(best)
		}
		return known, requests
	}
	for _, long := range []bool{false, true} {
		name := map[bool]string{false: "8 KiB page flushed early", true: "40 KiB page"}[long]
		run := func(hiding bool, variants int) int {
			won, requests := 0, 0
			for k, token := range tokens {
				opts := []squeeze.Option{squeeze.WithEncodings(squeeze.Zstd)}
				if hiding {
					opts = append(opts, squeeze.WithLengthHiding(32))
				}
				m := newMiddleware(t, opts...)
				got, n := guess(m.Handler(page(token, long)), len(token), variants, uint64(k))
				requests = n
				if got == token {
					won++
				}
			}
			t.Logf("%s, padding %v, %d variants: %d/%d tokens, %d requests a token", name, hiding, variants, won, len(tokens), requests)
			return won
		}
		run(false, 1)
		for v := 32; v <= 256; v *= 2 {
			if run(true, v) == len(tokens) {
				break
			}
		}
	}
}
