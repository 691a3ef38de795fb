package squeeze

import (
	"bytes"
	"hash/maphash"
	"net/http"
	"time"
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
// of its whole length, and the responses that follow one compared within
// expectCheckEvery under the same validators cost nothing at all
// (docs/internals.md#the-dictionary-store).
//
// The path only guesses: the bytes decide, so a wrong guess costs the copy
// the response would have made anyway. At most maxKnownBodies paths,
// emptied when full, as dictStore.known: a flood of paths costs the
// guesses, never memory. The map is guarded by its dictStore's mu.
type expectedBodies struct {
	m    map[uint64]expectedBody
	seed maphash.Seed
}

// expectedBody is the dictionary a path's last body remembered became, and
// when and under which validators a response's bytes were last found equal
// to it.
type expectedBody struct {
	d          weak.Pointer[dictionary]
	checked    time.Time
	validators uint64 // maphash of the ETag and Last-Modified fields
}

// expectCheckEvery is how long a body found equal to its path's dictionary
// stands for the responses after it that carry the same validators: those
// are neither compared nor remembered again. A body that changed under
// unchanged validators is remembered within this time, by the first
// response after it; one whose validators changed (a file server's, after
// a deploy) by the first response that carries them.
const expectCheckEvery = time.Second

// newExpectedBodies returns an empty expectedBodies.
func newExpectedBodies() expectedBodies {
	return expectedBodies{m: map[uint64]expectedBody{}, seed: maphash.MakeSeed()}
}

// validators returns the key of the validators in h, for expectedBody.
func (e *expectedBodies) validators(h http.Header) uint64 {
	var mh maphash.Hash
	mh.SetSeed(e.seed)
	for _, v := range h["Etag"] {
		_, _ = mh.WriteString(v)
		_ = mh.WriteByte(0)
	}
	_ = mh.WriteByte(1)
	for _, v := range h["Last-Modified"] {
		_, _ = mh.WriteString(v)
		_ = mh.WriteByte(0)
	}
	return mh.Sum64()
}

// expected returns the dictionary last remembered from a response to path
// if it is still in memory and n bytes long, or nil; and whether it was
// found equal to a response's body lately (expectCheckEvery) under the
// same validators (expectedBodies.validators), so that this response need
// not be compared.
func (s *dictStore) expected(path string, n int64, validators uint64) (d *dictionary, checked bool) {
	k := maphash.String(s.expect.seed, path)
	s.mu.Lock()
	e, ok := s.expect.m[k]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	if d = e.d.Value(); d == nil || int64(len(d.data)) != n {
		return nil, false
	}
	return d, time.Since(e.checked) < expectCheckEvery && e.validators == validators
}

// expectAt records that the body of a response to path, with validators,
// was remembered as d, or found equal to it.
func (s *dictStore) expectAt(path string, d *dictionary, validators uint64) {
	if d == nil {
		return
	}
	k := maphash.String(s.expect.seed, path)
	e := expectedBody{d: weak.Make(d), checked: time.Now(), validators: validators}
	s.mu.Lock()
	if _, ok := s.expect.m[k]; !ok && len(s.expect.m) >= maxKnownBodies {
		clear(s.expect.m)
	}
	s.expect.m[k] = e
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
