package lru_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/squeezehttp/squeeze/internal/lru"
)

// keys returns c's keys from the most recently used to the least.
func keys(c *lru.Cache[string, int]) []string {
	var ks []string
	for k := range c.All() {
		ks = append(ks, k)
	}
	return ks
}

func TestCacheEvictsTheLeastRecentlyUsedFirst(t *testing.T) {
	var evicted []string
	c := lru.New[string, int](30, func(k string, _ int) { evicted = append(evicted, k) })
	for i, k := range []string{"a", "b", "c"} {
		if !c.Add(k, i, 10) {
			t.Fatalf("Add(%q) refused within the budget", k)
		}
	}
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a gone within the budget")
	}
	if v, ok := c.Peek("b"); !ok || v != 1 { // Peek leaves b the least recently used
		t.Fatalf("Peek(b) = %d, %v", v, ok)
	}
	c.Add("d", 3, 10)
	if want := []string{"b"}; !slices.Equal(evicted, want) {
		t.Errorf("evicted %q, want %q", evicted, want)
	}
	if got, want := keys(c), []string{"d", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	c.Add("e", 4, 20) // room for it: c, then a
	if want := []string{"b", "c", "a"}; !slices.Equal(evicted, want) {
		t.Errorf("evicted %q, want %q", evicted, want)
	}
	if c.Used() != 30 || c.Len() != 2 {
		t.Errorf("Used %d, Len %d; want 30, 2", c.Used(), c.Len())
	}
	// Remove gives the weight back and is no eviction.
	if v, ok := c.Remove("d"); !ok || v != 3 {
		t.Errorf("Remove(d) = %d, %v", v, ok)
	}
	if _, ok := c.Remove("d"); ok {
		t.Error("Remove(d) twice found it")
	}
	if c.Used() != 20 || len(evicted) != 3 {
		t.Errorf("after Remove: Used %d, evicted %q", c.Used(), evicted)
	}
}

func TestCacheAddCountsAReplacementsNewWeightOnly(t *testing.T) {
	c := lru.New[string, int](100, nil)
	c.Add("a", 1, 40)
	c.Add("b", 2, 40)
	if !c.Add("a", 3, 10) {
		t.Fatal("a smaller replacement refused")
	}
	if v, _ := c.Peek("a"); v != 3 || c.Weight("a") != 10 || c.Used() != 50 || c.Len() != 2 {
		t.Errorf("a = %d weighing %d; Used %d, Len %d; want 3, 10, 50, 2", v, c.Weight("a"), c.Used(), c.Len())
	}
	if got := keys(c); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("a replacement is not the most recently used: %q", got)
	}
	// Growing past the budget evicts the others, never the entry itself.
	if !c.Add("a", 4, 100) || c.Used() != 100 || c.Len() != 1 {
		t.Errorf("a replacement of the whole budget: Used %d, Len %d", c.Used(), c.Len())
	}
}

func TestCacheRefusesWhatCannotFitAndChangesNothing(t *testing.T) {
	evictions := 0
	c := lru.New[string, int](100, func(string, int) { evictions++ })
	c.Add("a", 1, 30)
	c.Add("b", 2, 30)
	if !c.Reserve(40) {
		t.Fatal("Reserve(40) refused with 40 free")
	}
	for _, tc := range []struct {
		name string
		add  func() bool
	}{
		{"over the budget", func() bool { return c.Add("c", 3, 101) }},
		{"over the budget less the reservations", func() bool { return c.Add("c", 3, 61) }},
		{"a replacement over it", func() bool { return c.Add("a", 3, 61) }},
		{"a negative weight", func() bool { return c.Add("c", 3, -1) }},
		{"a reservation past the budget", func() bool { return c.Reserve(61) }},
		{"a negative reservation", func() bool { return c.Reserve(-1) }},
		{"a charge past the budget less the reservations", func() bool { return c.Charge("a", 31) }},
		{"a charge below nothing", func() bool { return c.Charge("a", -31) }},
		{"a charge to no entry", func() bool { return c.Charge("z", 1) }},
	} {
		if tc.add() {
			t.Errorf("%s: accepted", tc.name)
		}
		if v, _ := c.Peek("a"); v != 1 || c.Used() != 60 || c.Reserved() != 40 || c.Len() != 2 || evictions != 0 {
			t.Errorf("%s changed the cache: a = %d, Used %d, Reserved %d, Len %d, %d evictions", tc.name, v, c.Used(), c.Reserved(), c.Len(), evictions)
		}
	}
}

func TestCacheReservationsEvictToMakeRoom(t *testing.T) {
	c := lru.New[string, int](100, nil)
	c.Add("a", 1, 40)
	c.Add("b", 2, 40)
	if !c.Reserve(30) {
		t.Fatal("Reserve(30) refused")
	}
	if got := keys(c); !slices.Equal(got, []string{"b"}) || c.Used()+c.Reserved() != 70 {
		t.Errorf("after Reserve(30): %q, Used %d, Reserved %d", got, c.Used(), c.Reserved())
	}
	// An entry is not admitted into room a reservation holds.
	if !c.Add("c", 3, 70) || c.Len() != 1 || c.Used() != 70 {
		t.Errorf("Add(c, 70) with 30 reserved: Len %d, Used %d", c.Len(), c.Used())
	}
	if !c.Reserve(30) || c.Len() != 0 || c.Reserved() != 60 {
		t.Errorf("Reserve(30) more: Len %d, Reserved %d", c.Len(), c.Reserved())
	}
	c.Release(60)
	if c.Reserved() != 0 || !c.Add("d", 4, 100) {
		t.Errorf("after Release: Reserved %d; the whole budget refused", c.Reserved())
	}
}

func TestCacheChargeGrowsAnEntryInPlace(t *testing.T) {
	var evicted []string
	c := lru.New[string, int](100, func(k string, _ int) { evicted = append(evicted, k) })
	c.Add("a", 1, 30)
	c.Add("b", 2, 30)
	c.Add("c", 3, 30)
	// b grows: a, the least recently used, makes room; the order stays.
	if !c.Charge("b", 20) {
		t.Fatal("Charge(b, 20) lost b")
	}
	if got := keys(c); !slices.Equal(got, []string{"c", "b"}) || c.Weight("b") != 50 || c.Used() != 80 {
		t.Errorf("after Charge(b, 20): %q, b weighs %d, Used %d", got, c.Weight("b"), c.Used())
	}
	// b is now the least recently used: growing it evicts b itself.
	if c.Charge("b", 30) {
		t.Error("Charge(b, 30) kept b, the least recently used, over the budget")
	}
	if !slices.Equal(evicted, []string{"a", "b"}) || c.Used() != 30 || c.Len() != 1 {
		t.Errorf("evicted %q; Used %d, Len %d", evicted, c.Used(), c.Len())
	}
	// A negative charge gives bytes back.
	if !c.Charge("c", -20) || c.Weight("c") != 10 || c.Used() != 10 {
		t.Errorf("Charge(c, -20): c weighs %d, Used %d", c.Weight("c"), c.Used())
	}
}

// A random sequence of operations against a model kept in a slice: the
// order, the weights, what is evicted and the sums agree after every step,
// and the entries and reservations never hold more than the budget.
func TestCacheAgreesWithAModel(t *testing.T) {
	type item struct {
		k      int
		weight int64
	}
	const budget = 1000
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, seed))
		var model []item // most recently used first
		var reserved int64
		var evicted []int
		c := lru.New[int, int64](budget, func(k int, _ int64) { evicted = append(evicted, k) })
		index := func(k int) int {
			return slices.IndexFunc(model, func(it item) bool { return it.k == k })
		}
		used := func() (n int64) {
			for _, it := range model {
				n += it.weight
			}
			return n
		}
		evictModel := func() (out []int) {
			for used()+reserved > budget && len(model) > 0 {
				out = append(out, model[len(model)-1].k)
				model = model[:len(model)-1]
			}
			return out
		}
		for step := range 2000 {
			k := rng.IntN(40)
			w := rng.Int64N(300)
			evicted = evicted[:0]
			var want []int
			switch op := rng.IntN(6); op {
			case 0, 1:
				ok := c.Add(k, w, w)
				if wantOK := w <= budget-reserved; ok != wantOK {
					t.Fatalf("seed %d step %d: Add(%d, %d) = %v", seed, step, k, w, ok)
				}
				if ok {
					if i := index(k); i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
					model = slices.Insert(model, 0, item{k, w})
					want = evictModel()
				}
			case 2:
				_, ok := c.Get(k)
				if i := index(k); (i >= 0) != ok {
					t.Fatalf("seed %d step %d: Get(%d) = %v", seed, step, k, ok)
				} else if ok {
					it := model[i]
					model = slices.Insert(slices.Delete(model, i, i+1), 0, it)
				}
			case 3:
				n := w - 150
				i := index(k)
				wantOK := i >= 0 && model[i].weight+n <= budget-reserved && model[i].weight+n >= 0
				if wantOK {
					model[i].weight += n
					want = evictModel()
					wantOK = index(k) >= 0
				}
				if ok := c.Charge(k, n); ok != wantOK {
					t.Fatalf("seed %d step %d: Charge(%d, %d) = %v", seed, step, k, n, ok)
				}
			case 4:
				if i := index(k); i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
				c.Remove(k)
			case 5:
				if reserved > 0 && rng.IntN(2) == 0 {
					n := rng.Int64N(reserved) + 1
					c.Release(n)
					reserved -= n
				} else if ok := c.Reserve(w); ok != (reserved+w <= budget) {
					t.Fatalf("seed %d step %d: Reserve(%d) = %v with %d reserved", seed, step, w, ok, reserved)
				} else if ok {
					reserved += w
					want = evictModel()
				}
			}
			if !slices.Equal(evicted, want) {
				t.Fatalf("seed %d step %d: evicted %v, want %v", seed, step, evicted, want)
			}
			var got []item
			for k := range c.All() {
				got = append(got, item{k, c.Weight(k)})
			}
			if !slices.Equal(got, model) {
				t.Fatalf("seed %d step %d: entries %v, want %v", seed, step, got, model)
			}
			if c.Used() != used() || c.Reserved() != reserved || c.Len() != len(model) {
				t.Fatalf("seed %d step %d: Used %d, Reserved %d, Len %d; want %d, %d, %d",
					seed, step, c.Used(), c.Reserved(), c.Len(), used(), reserved, len(model))
			}
			if c.Used()+c.Reserved() > budget {
				t.Fatalf("seed %d step %d: %d used and %d reserved over a budget of %d", seed, step, c.Used(), c.Reserved(), budget)
			}
		}
	}
}

func TestCacheWithNoEntriesFindsNothing(t *testing.T) {
	c := lru.New[string, int](10, nil)
	if _, ok := c.Get("a"); ok {
		t.Error("Get found an entry")
	}
	if _, ok := c.Peek("a"); ok {
		t.Error("Peek found an entry")
	}
	if c.Weight("a") != 0 || c.Budget() != 10 || c.Len() != 0 {
		t.Errorf("Weight %d, Budget %d, Len %d", c.Weight("a"), c.Budget(), c.Len())
	}
	c.Add("a", 1, 1)
	c.Add("b", 1, 1)
	for range c.All() {
		break // All stops when asked
	}
	if lru.EntrySize[string, int]() == 0 {
		t.Error("EntrySize is 0")
	}
	if _, ok := c.Remove("z"); ok || c.Charge("z", 1) {
		t.Error("Remove or Charge found an entry under a key never added")
	}
	// A budget of zero holds weightless entries only, and no reservation
	// but an empty one.
	z := lru.New[string, int](0, nil)
	if !z.Add("free", 1, 0) || z.Add("heavy", 1, 1) || !z.Reserve(0) || z.Reserve(1) || z.Len() != 1 || z.Used() != 0 {
		t.Errorf("a budget of zero: Len %d, Used %d, Reserved %d; want one weightless entry and nothing reserved", z.Len(), z.Used(), z.Reserved())
	}
	for k := range z.All() {
		if k != "free" {
			t.Errorf("All yields %q", k)
		}
	}
}
