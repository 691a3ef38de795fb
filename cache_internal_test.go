package squeeze

import (
	"net/http/httptest"
	"runtime"
	"strings"
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
	if _, leader := c.lookup(r, &k, []byte("abcd"), 9, 0, upgradeSource{}); !leader {
		t.Fatal("first lookup does not lead the miss")
	}
	c.end(&k, []byte("encoded abcd"), []byte("abcd"), 5, false)
	if e, _ := c.lookup(r, &k, []byte("abcd"), 9, 0, upgradeSource{}); e == nil || string(e.body) != "encoded abcd" {
		t.Fatalf("lookup of the stored body: %v, want a hit", e)
	}
	e, leader := c.lookup(r, &k, []byte("wxyz"), 9, 0, upgradeSource{})
	if e != nil || leader {
		t.Fatalf("lookup of another body under the same key: entry %v, leader %v; want a miss that does not store", e, leader)
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 2 || s.Stores != 1 {
		t.Fatalf("stats %+v, want 1 hit, 2 misses, 1 store", s)
	}
}

// Followers of a flight that stored nothing (a body that did not compress)
// encode for themselves at once. Looking again, one of them would lead the
// same miss and the others wait for it in turn, so that identical requests
// for an incompressible body would encode one after another.
func TestCacheFollowersOfAnUnstoredFlightDoNotWaitInTurn(t *testing.T) {
	c, err := NewCache(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := httptest.NewRequest("GET", "/", nil)
	k := cacheKey{sum: 7, length: 4, coding: Gzip, level: 5}
	if _, leader := c.lookup(r, &k, []byte("abcd"), 9, 0, upgradeSource{}); !leader {
		t.Fatal("first lookup does not lead the miss")
	}
	const followers = 3
	led := make(chan bool, followers)
	for range followers {
		go func() {
			k := k
			e, leader := c.lookup(r, &k, []byte("abcd"), 9, 0, upgradeSource{})
			if leader {
				c.end(&k, nil, nil, 0, false) // let any other follower go
			}
			led <- e == nil && leader
		}()
	}
	// Poll until every follower waits on the flight.
	for goroutinesIn("squeeze.(*cacheCore).wait(") < followers {
		runtime.Gosched()
	}
	c.end(&k, nil, nil, 0, false) // no gain: nothing stored
	for range followers {
		if <-led {
			t.Error("a follower of a flight that stored nothing led the same miss again")
		}
	}
	if s := c.Stats(); s.Misses != 1+followers || s.Stores != 0 {
		t.Errorf("%d misses and %d stores, want %d and 0", s.Misses, s.Stores, 1+followers)
	}
}

// goroutinesIn counts the goroutines with frame on their stacks.
func goroutinesIn(frame string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), frame)
		}
		buf = make([]byte, 2*len(buf))
	}
}
