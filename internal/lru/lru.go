// Package lru is the byte-budgeted store behind squeeze's FileServer
// representations and its dictionaries, server side and client side:
// entries with a weight in bytes, and reservations for work in flight,
// whose sum never exceeds the budget. To make room, the least recently
// used entries are evicted.
//
// A [Cache] is not safe for concurrent use. Each store that holds one
// guards it with its own mutex, together with what the store indexes
// beside it, so an entry and its index entries leave under one lock.
//
// squeeze's Cache of encoded responses uses github.com/maypok86/otter/v2;
// these stores do not, because they need what otter does not
// give: the bound holds when a call returns, not after maintenance that
// another goroutine may be running; reservations for work in flight are
// counted in the same budget and evict stored entries to make room; an
// entry's weight grows in place, with an answer saying whether the entry
// survived the eviction that made room for it; and every new entry is
// admitted, where W-TinyLFU may turn away a new dictionary in favour of
// one used more often before it was replaced.
package lru

import (
	"iter"
	"unsafe"
)

// Cache holds entries of type V by key K, each weighing what its store
// says it costs, within a budget that also holds the reservations for work
// in flight: Used plus Reserved never exceeds Budget once a call returns.
// The zero Cache is not usable; call [New].
type Cache[K comparable, V any] struct {
	budget   int64
	used     int64 // the weights of the entries
	reserved int64 // what Reserve took and Release has not given back
	items    map[K]*entry[K, V]
	// root is the list's sentinel: root.next is the most recently used
	// entry, root.prev the least.
	root    entry[K, V]
	evicted func(K, V)
}

type entry[K comparable, V any] struct {
	key        K
	value      V
	weight     int64
	prev, next *entry[K, V]
}

// EntrySize returns the bytes of the record a Cache of K and V allocates
// for each entry, besides its map slot, for a store that charges its
// entries' bookkeeping to the budget.
func EntrySize[K comparable, V any]() uintptr {
	return unsafe.Sizeof(entry[K, V]{})
}

// New returns an empty Cache with a budget of budget bytes. evicted, if not
// nil, is called with each entry the Cache evicts to make room, after the
// entry has left it; it is not called for entries given to Remove.
func New[K comparable, V any](budget int64, evicted func(K, V)) *Cache[K, V] {
	c := &Cache[K, V]{budget: budget, items: map[K]*entry[K, V]{}, evicted: evicted}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

// Budget returns the budget the Cache was made with.
func (c *Cache[K, V]) Budget() int64 { return c.budget }

// Used returns the sum of the entries' weights.
func (c *Cache[K, V]) Used() int64 { return c.used }

// Reserved returns what reservations hold of the budget.
func (c *Cache[K, V]) Reserved() int64 { return c.reserved }

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int { return len(c.items) }

// Get returns the value stored under k, and marks it the most recently
// used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	e := c.items[k]
	if e == nil {
		var zero V
		return zero, false
	}
	c.toFront(e)
	return e.value, true
}

// Peek returns the value stored under k, leaving the order as it is.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	e := c.items[k]
	if e == nil {
		var zero V
		return zero, false
	}
	return e.value, true
}

// Weight returns the weight of the entry under k, or 0 if there is none.
func (c *Cache[K, V]) Weight(k K) int64 {
	if e := c.items[k]; e != nil {
		return e.weight
	}
	return 0
}

// Add stores v under k with the given weight as the most recently used
// entry, replacing the entry under k if there is one (its weight leaves
// with it), and evicts the least recently used others until the budget
// holds it. It reports false, changing nothing, when weight is negative or
// more than the budget less the reservations: evicting every entry would
// not make room.
func (c *Cache[K, V]) Add(k K, v V, weight int64) bool {
	if weight < 0 || weight > c.budget-c.reserved {
		return false
	}
	if e := c.items[k]; e != nil {
		c.used += weight - e.weight
		e.value, e.weight = v, weight
		c.toFront(e)
	} else {
		e = &entry[K, V]{key: k, value: v, weight: weight}
		c.items[k] = e
		c.link(e, &c.root)
		c.used += weight
	}
	c.evict()
	return true
}

// Charge adds n bytes to the weight of the entry under k (n < 0 gives them
// back), for state built for it after it was stored, and evicts the least
// recently used entries until the budget holds it, leaving the order as it
// is. It reports whether the entry is still stored: false when there is
// none, when its weight would pass the budget less the reservations (then
// nothing is charged), or when it was itself the least recently used and
// evicted (its weight left with it).
func (c *Cache[K, V]) Charge(k K, n int64) bool {
	e := c.items[k]
	if e == nil || e.weight+n > c.budget-c.reserved || e.weight+n < 0 {
		return false
	}
	e.weight += n
	c.used += n
	c.evict()
	return c.items[k] == e
}

// Remove drops the entry under k and returns its value.
func (c *Cache[K, V]) Remove(k K) (V, bool) {
	e := c.items[k]
	if e == nil {
		var zero V
		return zero, false
	}
	c.drop(e)
	return e.value, true
}

// Reserve takes n bytes of the budget for work in flight, evicting the
// least recently used entries until the budget holds them. It reports
// false, taking and evicting nothing, when the reservations would hold
// more than the budget. Whoever reserves gives the bytes back with Release
// or with Add.
func (c *Cache[K, V]) Reserve(n int64) bool {
	if n < 0 || c.reserved+n > c.budget {
		return false
	}
	c.reserved += n
	c.evict()
	return true
}

// Release gives back n bytes that Reserve took.
func (c *Cache[K, V]) Release(n int64) {
	c.reserved -= n
}

// All yields the entries from the most recently used to the least, leaving
// the order as it is. The Cache must not be changed while it yields.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for e := c.root.next; e != &c.root; e = e.next {
			if !yield(e.key, e.value) {
				return
			}
		}
	}
}

// evict drops the least recently used entries while the entries and the
// reservations hold more than the budget.
func (c *Cache[K, V]) evict() {
	for c.used+c.reserved > c.budget && c.root.prev != &c.root {
		e := c.root.prev
		c.drop(e)
		if c.evicted != nil {
			c.evicted(e.key, e.value)
		}
	}
}

func (c *Cache[K, V]) drop(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.items, e.key)
	c.used -= e.weight
}

// link puts e after at.
func (c *Cache[K, V]) link(e, at *entry[K, V]) {
	e.prev, e.next = at, at.next
	at.next.prev = e
	at.next = e
}

func (c *Cache[K, V]) toFront(e *entry[K, V]) {
	if c.root.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	c.link(e, &c.root)
}
