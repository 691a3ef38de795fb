package squeeze

import (
	"hash/maphash"
	"testing"

	"github.com/squeezehttp/squeeze/internal/pool"
)

// A delta's win is remembered for the contest it won only: the same body,
// dictionary coding and level against the same coding and level. Another
// body, another client coding or another level is a contest not yet run.
func TestDeltaWinsHoldOnlyTheContestWon(t *testing.T) {
	seed := maphash.MakeSeed()
	encoders := func(coding string, level int) *pool.Encoders {
		p, err := pool.NewEncoders(coding, level)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dcz := &offer{coding: DCZ, encoders: encoders(Zstd, 3)}
	zstd := &offer{coding: Zstd, encoders: encoders(Zstd, 3)}
	gzip := &offer{coding: Gzip, encoders: encoders(Gzip, 6)}
	gzip9 := &offer{coding: Gzip, encoders: encoders(Gzip, 9)}
	body := []byte("function squeeze(a, b) { return a + b; }")

	var w deltaWins
	won := deltaKey(seed, body, dcz, zstd)
	if w.won(won) {
		t.Fatal("a contest not run yet counts as won")
	}
	w.note(won)
	if !w.won(won) || !w.won(deltaKey(seed, body, dcz, zstd)) {
		t.Fatal("the contest won does not count as won")
	}
	for name, k := range map[string]uint64{
		"another body":          deltaKey(seed, body[1:], dcz, zstd),
		"another client coding": deltaKey(seed, body, dcz, gzip),
		"another level":         deltaKey(seed, body, dcz, gzip9),
	} {
		if k == won || w.won(k) {
			t.Errorf("%s counts as won", name)
		}
	}
}
