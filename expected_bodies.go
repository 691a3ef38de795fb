package squeeze

import (
	"bytes"
	"hash/maphash"
	"net/http"
	"weak"
)

// expectedBodies remembers, for each path of a dictionary pattern, the
// dictionary its last body remembered became: the body the next response
// to that path most likely carries. A response on a dictionary path is
// collected to be remembered (dictResponse); with a dictionary of its
// declared length expected, its bytes are compared with the dictionary's
// as they pass instead of copied into a buffer of their own, and a copy
// starts, from the bytes that matched, only where they part. A file
// served again costs a comparison, not an allocation, a copy and a hash
// of its whole length (docs/internals.md#the-dictionary-store).
//
// The path only guesses: the bytes decide, so a wrong guess costs the copy
// the response would have made anyway. At most maxKnownBodies paths,
// emptied when full, as dictStore.known: a flood of paths costs the
// guesses, never memory. The map is guarded by its dictStore's mu.
type expectedBodies struct {
	m    map[uint64]weak.Pointer[dictionary]
	seed maphash.Seed
}

// newExpectedBodies returns an empty expectedBodies.
func newExpectedBodies() expectedBodies {
	return expectedBodies{m: map[uint64]weak.Pointer[dictionary]{}, seed: maphash.MakeSeed()}
}

// expected returns the dictionary last remembered from a response to path
// if it is still in memory and n bytes long, or nil.
func (s *dictStore) expected(path string, n int64) *dictionary {
	k := maphash.String(s.expect.seed, path)
	s.mu.Lock()
	wp, ok := s.expect.m[k]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if d := wp.Value(); d != nil && int64(len(d.data)) == n {
		return d
	}
	return nil
}

// expectAt records that the body of a response to path was remembered as
// d.
func (s *dictStore) expectAt(path string, d *dictionary) {
	if d == nil {
		return
	}
	k := maphash.String(s.expect.seed, path)
	s.mu.Lock()
	if wp, ok := s.expect.m[k]; !ok || wp.Value() != d {
		if !ok && len(s.expect.m) >= maxKnownBodies {
			clear(s.expect.m)
		}
		s.expect.m[k] = weak.Make(d)
	}
	s.mu.Unlock()
}

// rememberExpected is rememberServed for a body found equal, byte for
// byte, to e's: e is seen again if the store still holds it, and otherwise,
// evicted while the response ran, remembered again from its bytes, which
// no one changes. reserved is what the response reserved of the budget.
// It returns the dictionary held, nil if none is.
func (s *dictStore) rememberExpected(e *dictionary, pattern string, reserved int64, r *http.Request) *dictionary {
	held := s.lookup(e.hash)
	if held == nil {
		return s.rememberServed(e.data, pattern, true, reserved, r)
	}
	s.release(reserved)
	if s.shared == nil {
		s.seen(held, fromResponse)
	} else {
		s.responseServed(held, r)
	}
	return held
}

// expectPlain compares p, the next bytes of a body expected to be e's,
// with e's bytes from matched on, and reports whether they are the same.
func expectPlain(e *dictionary, matched int, p []byte) bool {
	return len(p) <= len(e.data)-matched && bytes.Equal(e.data[matched:matched+len(p)], p)
}
