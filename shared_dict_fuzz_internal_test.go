package squeeze

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// FuzzSharedDictionaryValue runs the check of a dictionary value read
// from the fleet's store (verifySharedDict), as a WithDictionaryMatch
// store and a learned route make it, on any bytes: they never panic, a value whose framing they accept
// frames again to the same bytes, and a dictionary they take has the
// reader's own pattern, fits its size and hashes to the key it was read
// under. honest makes the key the hash of the value's dictionary bytes, so
// that the fuzzer reaches the values that are taken.
func FuzzSharedDictionaryValue(f *testing.F) {
	data := bytes.Repeat([]byte("function squeeze() {} "), 8)
	for _, pattern := range []string{"/js/*", "/search/*", "", "/other/*"} {
		f.Add(sharedDictValue(&dictionary{pattern: pattern, data: data}), true)
		f.Add(sharedDictValue(&dictionary{pattern: pattern, data: data}), false)
	}
	f.Add([]byte(sharedDictMagic+"\xff\xff/js/*"), true)
	f.Add([]byte(sharedDictMagic), true)
	f.Add([]byte("sqzd2\x00\x05/js/*abc"), true)

	const maxBody = 1 << 10
	patterns, learned := []string{"/js/*", "/css/*"}, []string{"/search/*"}
	f.Fuzz(func(t *testing.T, value []byte, honest bool) {
		pattern, body, framed := parseSharedDict(value)
		if framed {
			again := sharedDictValue(&dictionary{pattern: pattern, data: body})
			if !bytes.Equal(again, value) {
				t.Fatalf("parseSharedDict(%q) = %q, %q; framed again: %q", value, pattern, body, again)
			}
		}
		hash := sha256.Sum256(value)
		if honest && framed {
			hash = sha256.Sum256(body)
		}
		check := func(reader string, d *dictionary, v storeguard.Verdict, patterns []string, max int) {
			if v != storeguard.Taken {
				if d != nil {
					t.Fatalf("%s: verdict %v with a dictionary", reader, v)
				}
				return
			}
			switch {
			case d == nil:
				t.Fatalf("%s: taken without a dictionary", reader)
			case !framed || d.pattern != pattern:
				t.Fatalf("%s: took pattern %q from %q", reader, d.pattern, value)
			case sha256.Sum256(d.data) != hash || d.hash != hash:
				t.Fatalf("%s: took a dictionary that does not hash to its key", reader)
			case len(d.data) == 0 || len(d.data) > max:
				t.Fatalf("%s: took %d bytes, outside 1 to %d", reader, len(d.data), max)
			}
			for _, p := range patterns {
				if p == d.pattern {
					return
				}
			}
			t.Fatalf("%s: took pattern %q, not its own %q", reader, d.pattern, patterns)
		}
		d, v := verifySharedDict(hash, value, patterns, maxBody)
		check("WithDictionaryMatch", d, v, patterns, maxBody)
		d, v = verifySharedDict(hash, value, learned, maxBody)
		check("learned route", d, v, learned, maxBody)
	})
}
