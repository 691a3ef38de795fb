package squeeze

import (
	"net/http/httptest"
	"testing"
)

// A content key that two bodies share (a hash collision, which the test
// forces) finds the stored entry, but the comparison of plain bytes turns
// it into a miss that stores nothing: a hit never serves another body.
func TestCacheCollisionIsAMiss(t *testing.T) {
	c, err := NewCache(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := httptest.NewRequest("GET", "/", nil)
	k := cacheKey{sum: 42, length: 4, coding: Gzip, level: 5}
	if _, leader := c.lookup(r, &k, []byte("abcd"), 9, 0); !leader {
		t.Fatal("first lookup does not lead the miss")
	}
	c.end(&k, []byte("encoded abcd"), []byte("abcd"), 5)
	if e, _ := c.lookup(r, &k, []byte("abcd"), 9, 0); e == nil || string(e.body) != "encoded abcd" {
		t.Fatalf("lookup of the stored body: %v, want a hit", e)
	}
	e, leader := c.lookup(r, &k, []byte("wxyz"), 9, 0)
	if e != nil || leader {
		t.Fatalf("lookup of another body under the same key: entry %v, leader %v; want a miss that does not store", e, leader)
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 2 || s.Stores != 1 {
		t.Fatalf("stats %+v, want 1 hit, 2 misses, 1 store", s)
	}
}
