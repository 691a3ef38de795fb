package squeeze

import (
	"bytes"
	"testing"
)

func TestLRUStoreKeepsWithinItsBudgetDroppingTheLeastRecentlyUsed(t *testing.T) {
	s := newLRUStore(3 * (1000 + repOverhead))
	key := func(i byte) repKey { return repKey{plain: [32]byte{i}, coding: Brotli} }
	data := func(i byte) []byte { return bytes.Repeat([]byte{i}, 1000) }
	for i := range byte(3) {
		s.store(key(i), rep{data: data(i)})
	}
	if _, ok := s.load(key(0)); !ok { // 0 is now the most recently used
		t.Fatal("entry 0 gone before the budget was passed")
	}
	s.store(key(3), rep{data: data(3)})
	if _, ok := s.load(key(1)); ok {
		t.Error("entry 1, the least recently used, is still there")
	}
	for _, i := range []byte{0, 2, 3} {
		if r, ok := s.load(key(i)); !ok || !bytes.Equal(r.data, data(i)) {
			t.Errorf("entry %d lost", i)
		}
	}
	// Replacing an entry counts its new size only.
	s.store(key(3), rep{data: data(3)[:10], best: true})
	if r, _ := s.load(key(3)); !r.best || len(r.data) != 10 {
		t.Errorf("replaced entry: %+v", r)
	}
	if want := int64(2*(1000+repOverhead) + 10 + repOverhead); s.used != want {
		t.Errorf("used %d, want %d", s.used, want)
	}
	// An entry larger than the whole budget is not kept.
	s.store(key(9), rep{data: make([]byte, 4*1000)})
	if _, ok := s.load(key(9)); ok {
		t.Error("an entry over the budget was kept")
	}
}
