package cdt

import (
	"strings"
	"testing"
	"time"
)

// patternsPerOrigin is how many patterns a client looks through for one
// request at most (the Transport keeps 64 dictionaries an origin).
const patternsPerOrigin = 64

// backtrack is the reference matcher: "*" matches any run of bytes, tried
// shortest first, every other byte only itself. Exponential at worst; for
// small inputs only.
func backtrack(pattern, path string) bool {
	if pattern == "" {
		return path == ""
	}
	if pattern[0] == '*' {
		for i := 0; i <= len(path); i++ {
			if backtrack(pattern[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	return path != "" && path[0] == pattern[0] && backtrack(pattern[1:], path[1:])
}

// Every pattern over {a, b, *} of up to 6 bytes against every path over
// {a, b} of up to 7: MatchPath agrees with the backtracking reference.
func TestMatchPathAgreesWithBacktrackingOnAllSmallInputs(t *testing.T) {
	all := func(alphabet string, maxLen int) []string {
		out := []string{""}
		level := []string{""}
		for range maxLen {
			var next []string
			for _, s := range level {
				for i := range len(alphabet) {
					next = append(next, s+alphabet[i:i+1])
				}
			}
			out = append(out, next...)
			level = next
		}
		return out
	}
	paths := all("ab", 7)
	for _, p := range all("ab*", 6) {
		for _, s := range paths {
			if got, want := MatchPath(p, s), backtrack(p, s); got != want {
				t.Fatalf("MatchPath(%q, %q) = %v, backtracking says %v", p, s, got, want)
			}
		}
	}
}

// FuzzMatchPathAgainstBacktracking compares MatchPath with the
// backtracking reference on any bytes, and the Knuth-Morris-Pratt search
// long literals use with strings.Index.
func FuzzMatchPathAgainstBacktracking(f *testing.F) {
	f.Add("/api/*", "/api/products")
	f.Add("/a*b*c", "/aXbYbZc")
	f.Add("*ab*ab*", "aabab")
	f.Add("a*\xff*a", "a\xffa")
	f.Add("**", "")
	f.Add("*abab*", "abaabab")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 24 || len(path) > 96 || strings.Count(pattern, "*") > 8 {
			return // the reference is exponential in the stars
		}
		if got, want := MatchPath(pattern, path), backtrack(pattern, path); got != want {
			t.Fatalf("MatchPath(%q, %q) = %v, backtracking says %v", pattern, path, got, want)
		}
		if lit := strings.ReplaceAll(pattern, "*", ""); lit != "" {
			if got, want := indexKMP(path, lit), strings.Index(path, lit); got != want {
				t.Fatalf("indexKMP(%q, %q) = %d, strings.Index says %d", path, lit, got, want)
			}
		}
	})
}

func TestMatchPathLongLiterals(t *testing.T) {
	long := strings.Repeat("ab", 100) + "c"
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"/*" + long + "*", "/" + strings.Repeat("ab", 300) + "c/x", true},
		{"/*" + long + "*", "/" + strings.Repeat("ab", 300) + "/x", false},
		{"/*" + long + "*x", "/" + strings.Repeat("ab", 99) + "c" + long + "x", true},
		{"/*" + long + "*" + long + "*", "/" + long + long, true},
		{"/*" + long + "*" + long + "*", "/" + long[1:] + long, false},
	} {
		if got := MatchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPath(%.20q..., %.20q...) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if got := backtrack(tt.pattern, tt.path); got != tt.want {
			t.Fatalf("the reference says %v", got)
		}
	}
}

func TestMatchPathRefusesPathsOverTheBound(t *testing.T) {
	at := "/" + strings.Repeat("a", MaxPath-1)
	if !MatchPath("/*", at) {
		t.Errorf("a %d-byte path does not match /*", len(at))
	}
	if MatchPath("/*", at+"a") {
		t.Errorf("a %d-byte path matches /*; the bound is %d", len(at)+1, MaxPath)
	}
}

// thueMorse returns the 2^k bytes of the Thue-Morse sequence over a and b:
// two such sequences with a and b swapped have the same polynomial hash
// modulo 2^32 for k >= 7, whatever the odd base.
func thueMorse(k int, a, b byte) string {
	s := make([]byte, 1<<k)
	for i := range s {
		s[i] = a
		n := 0
		for j := i; j > 0; j &= j - 1 {
			n++
		}
		if n%2 == 1 {
			s[i] = b
		}
	}
	return string(s)
}

// hostileMatches returns the shapes of patterns a hostile server can plant
// (each MaxPattern bytes, the longest the client keeps) and a path
// of MaxPath bytes it can redirect to, that cost a backtracking
// matcher len(pattern) x len(path) steps or more, or make a Rabin-Karp
// search compare the whole literal at every place.
func hostileMatches() map[string][2]string {
	n := MaxPattern
	as := "/" + strings.Repeat("a", MaxPath-1)
	bs := "/" + strings.Repeat("b", MaxPath-1)
	return map[string][2]string{
		"stars":         {"/" + strings.Repeat("*a", (n-3)/2) + "*b", as},
		"long literal":  {"/*" + strings.Repeat("a", n-4) + "b*", as},
		"hash collider": {"/*" + strings.Repeat("b", n-3-128) + thueMorse(7, 'a', 'c') + "*", bs},
	}
}

// cpuOf returns the shortest of several timings of f run reps times.
func cpuOf(reps int, f func()) time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		for range reps {
			f()
		}
		best = min(best, time.Since(start))
	}
	return best
}

var matchSink int

// A hostile server's 64 patterns against the longest path matched cost
// about what reading the path once for each pattern does: the work is
// linear, whatever the patterns. The baseline is a plain byte loop over
// the path, timed in the same test; backtracking costs thousands of times
// more (16,000x and up before the linear matcher), so the ratio allowed,
// 300x, leaves room for a loaded machine (37x was seen once).
func TestMatchPathHostilePatternsCostLinearTime(t *testing.T) {
	const patterns = patternsPerOrigin
	for name, pp := range hostileMatches() {
		pattern, path := pp[0], pp[1]
		if len(pattern) > MaxPattern || len(path) > MaxPath {
			t.Fatalf("%s: the pattern or the path is over its bound", name)
		}
		baseline := cpuOf(4, func() {
			for range patterns {
				for i := 0; i < len(path); i++ {
					matchSink += int(path[i])
				}
			}
		})
		hostile := cpuOf(4, func() {
			for range patterns {
				if MatchPath(pattern, path) {
					matchSink++
				}
			}
		})
		ratio := float64(hostile) / float64(baseline)
		t.Logf("%s: %d patterns against a %d-byte path: %v, a byte loop over the path %v (%.1fx)", name, patterns, len(path), hostile/4, baseline/4, ratio)
		if ratio > 300 {
			t.Errorf("%s: matching took %.0fx a byte loop over the path for each pattern; want linear time", name, ratio)
		}
	}
}

// BenchmarkMatchPathHostile times a request's matching against a hostile
// server's 64 patterns, for each shape of hostileMatches.
func BenchmarkMatchPathHostile(b *testing.B) {
	for name, pp := range hostileMatches() {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			for range b.N {
				for range patternsPerOrigin {
					if MatchPath(pp[0], pp[1]) {
						matchSink++
					}
				}
			}
		})
	}
}
