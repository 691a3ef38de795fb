package squeeze

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/lru"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

func TestLRUStoreKeepsWithinItsBudgetDroppingTheLeastRecentlyUsed(t *testing.T) {
	s := newLRUStore(3 * (1000 + repOverhead))
	key := func(i byte) repKey { return repKey{plain: [32]byte{i}, coding: Brotli} }
	data := func(i byte) []byte { return bytes.Repeat([]byte{i}, 1000) }
	for i := range byte(3) {
		s.store(key(i), rep{data: data(i)}, 0)
	}
	if _, ok := s.load(key(0)); !ok { // 0 is now the most recently used
		t.Fatal("entry 0 gone before the budget was passed")
	}
	s.store(key(3), rep{data: data(3)}, 0)
	if _, ok := s.load(key(1)); ok {
		t.Error("entry 1, the least recently used, is still there")
	}
	for _, i := range []byte{0, 2, 3} {
		if r, ok := s.load(key(i)); !ok || !bytes.Equal(r.data, data(i)) {
			t.Errorf("entry %d lost", i)
		}
	}
	// Replacing an entry counts its new size only.
	s.store(key(3), rep{data: data(3)[:10], best: true}, 0)
	if r, _ := s.load(key(3)); !r.best || len(r.data) != 10 {
		t.Errorf("replaced entry: %+v", r)
	}
	if want := int64(2*(1000+repOverhead) + 10 + repOverhead); s.reps.Used() != want {
		t.Errorf("used %d, want %d", s.reps.Used(), want)
	}
	// An entry larger than the whole budget is not kept.
	s.store(key(9), rep{data: make([]byte, 3*(1000+repOverhead))}, 0)
	if _, ok := s.load(key(9)); ok {
		t.Error("an entry over the budget was kept")
	}
}

// repOverhead covers what the store allocates for an entry beyond its data:
// the record internal/lru keeps and its map slot. Measured with entries of
// no data (a coding that did not make the file smaller), the heap grows by
// no more than the entries are charged.
func TestFileStoreEntryOverheadCoversItsMemory(t *testing.T) {
	// Reckoned from the types, with a map table just grown (7/16 full).
	record := lru.EntrySize[repKey, rep]()
	slot := (unsafe.Sizeof(repKey{}) + unsafe.Sizeof(uintptr(0)) + 1) * 16 / 7
	if reckoned := (record+15)/16*16 + slot; reckoned > repOverhead {
		t.Errorf("an entry's records take %d bytes; repOverhead is %d", reckoned, repOverhead)
	}

	const n = 20000
	s := newLRUStore(1 << 40)
	before := heldHeap()
	for i := range n {
		var k repKey
		binary.LittleEndian.PutUint64(k.plain[:], uint64(i))
		k.coding = Brotli
		s.store(k, rep{}, 0)
	}
	grown := heldHeap() - before
	if used := s.reps.Used(); grown > used {
		t.Errorf("%d entries grew the heap by %d bytes (%d each) and were charged %d (%d each)", n, grown, grown/n, used, used/n)
	}
	t.Logf("%d entries: heap %d bytes each, charged %d", n, grown/n, s.reps.Used()/n)
	runtime.KeepAlive(s)
}

// A FileServer's first encoding of a delta reserves its encoder as the
// dictionary store builds it, at the Middleware's level: a dcz encoder at
// zstd 19 holds some 70 MiB, more than the store's 64 MiB, so the client
// gets the coding it would get without the delta, or the plain file
// (ReasonNoRoom) when it accepts no other, rather than a delta holding
// memory outside the budget; at zstd 3 the same store has room for it.
func TestFileServerDeltaReservesItsEncoderAtTheMiddlewaresLevel(t *testing.T) {
	rel := corpus.Releases(t)[0]
	fsys := fstest.MapFS{"app.v1.js": {Data: rel.Old}, "app.v2.js": {Data: rel.New}}
	sum := sha256.Sum256(rel.Old)
	for _, tc := range []struct {
		level          int
		accept, coding string
		skipped        Reason
	}{
		{3, "dcz, br", DCZ, reasonNone},
		{19, "dcz, br", Brotli, reasonNone},
		{19, "dcz", "", ReasonNoRoom},
	} {
		t.Run("zstd "+strconv.Itoa(tc.level)+" "+tc.accept, func(t *testing.T) {
			var skipped atomic.Value
			m, err := New(WithDictionaryMatch("/app.*.js"), WithLevel(Zstd, tc.level),
				WithObserver(Observer{Response: func(e ResponseInfo) { skipped.Store(e.Skipped) }}))
			if err != nil {
				t.Fatal(err)
			}
			h := m.FileServer(fsys)
			t.Cleanup(func() { WaitFileServer(h) })
			req := httptest.NewRequest("GET", "/app.v2.js", nil)
			req.Header.Set("Accept-Encoding", tc.accept)
			req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(sum[:])+":")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			got, _ := skipped.Load().(Reason)
			if ce := w.Header().Get("Content-Encoding"); ce != tc.coding || got != tc.skipped {
				t.Errorf("Content-Encoding %q and %q skipped; want %q and %q", ce, got, tc.coding, tc.skipped)
			}
			if tc.coding == Brotli {
				if plain := testtool.Decode(t, Brotli, w.Body.Bytes()); !bytes.Equal(plain, rel.New) {
					t.Errorf("the br body decodes to %d bytes, want the file's %d", len(plain), len(rel.New))
				}
			}
		})
	}
}
