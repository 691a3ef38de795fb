package squeeze

import (
	"bytes"
	"context"
	"io"
	"weak"

	"github.com/maypok86/otter/v2"
	"github.com/squeezehttp/squeeze/internal/lifetime"
	"github.com/squeezehttp/squeeze/internal/storeguard"
	"github.com/squeezehttp/squeeze/writers"
)

// upgradeJob re-encodes entry, stored under key, at level best; dict is
// the dictionary of a delta, held weakly so that a job waiting in the queue
// keeps no dictionary its store has dropped (newUpgradeJob).
type upgradeJob struct {
	key   cacheKey
	entry *cacheEntry
	best  int
	dict  weak.Pointer[dictionary]
	// shared is the fleet's store of the Middleware that queued the job,
	// nil without one (shared_encodings.go).
	shared *storeguard.Guard
}

// enqueue queues j unless the queue is full or the cache closed, and
// starts the worker on life, the lifetime of the Middleware that queued j,
// unless one runs; without life, or once it is closed, j is dropped.
//
// One worker, whatever the number of cores: each upgrade holds an encoder
// of up to tens of megabytes, and two workers in a small budget would only
// take the room each other needs.
func (c *cacheCore) enqueue(j upgradeJob, life *lifetime.Lifetime) {
	c.workMu.Lock()
	defer c.workMu.Unlock()
	if c.closed || life == nil || len(c.jobs) == cap(c.jobs) {
		c.upgradesDropped.Add(1)
		return
	}
	if !c.working {
		c.workers.Add(1)
		if !life.Go(c.work) {
			c.workers.Done()
			c.upgradesDropped.Add(1)
			return
		}
		c.working = true
	}
	c.pending.Add(1)
	c.jobs <- j // there is room: every send holds workMu
}

// work runs upgrades until none waits, Close, or the end of ctx, the
// lifetime of the Middleware that started it; the jobs it leaves wait for
// the next worker. It keeps the encoder of its last job, and the budget
// claimed for it, only while more jobs wait: a best-level encoder holds
// tens of megabytes.
func (c *cacheCore) work(ctx context.Context) {
	defer c.workers.Done()
	var enc upgradeEncoder
	defer enc.release(c)
	for {
		select {
		case <-c.stop:
		case <-ctx.Done():
		case j := <-c.jobs:
			c.upgrade(ctx, j, &enc)
			if len(c.jobs) == 0 {
				enc.release(c) // idle: dropped before the job counts as done
			}
			c.pending.Add(-1)
			continue
		default:
		}
		c.workMu.Lock()
		if len(c.jobs) > 0 && !c.closed && ctx.Err() == nil {
			c.workMu.Unlock() // queued since: go on
			continue
		}
		c.working = false
		c.workMu.Unlock()
		return
	}
}

// upgradeEncoder is the encoder an upgrade worker holds, with the bytes of
// the budget claimed for it.
type upgradeEncoder struct {
	enc    writers.Encoder
	coding string
	level  int
	dict   [32]byte // the SHA-256 of a delta's dictionary
	held   int64
}

// get returns an encoder for coding at level, against d for dcz and dcb,
// claiming its estimated memory unless it is the one held; nil if there is
// no room for it.
func (u *upgradeEncoder) get(c *cacheCore, coding string, level int, d *dictionary) writers.Encoder {
	var dict [32]byte
	if d != nil {
		dict = d.hash
	}
	if u.enc != nil && u.coding == coding && u.level == level && u.dict == dict {
		return u.enc
	}
	u.release(c)
	w := upgradeEncoderMemory(coding, level, d)
	if !c.claim(w) {
		return nil
	}
	enc, err := newUpgradeEncoder(coding, level, d)
	if err != nil {
		c.bytes.Add(-w)
		return nil
	}
	*u = upgradeEncoder{enc: enc, coding: coding, level: level, dict: dict, held: w}
	return enc
}

// release drops the encoder held and gives its budget back.
func (u *upgradeEncoder) release(c *cacheCore) {
	c.bytes.Add(-u.held)
	*u = upgradeEncoder{}
}

// upgrade re-encodes j's entry at its best level, or the best level whose
// encoder the budget has room for, and replaces the entry with the result
// if it is smaller and the entry is still the one stored. Everything it
// holds is claimed against the budget first: the encoder, a decoder of an
// entry kept without its plain bytes, and room for the new encoding. It
// counts an upgrade dropped when there is no room.
func (c *cacheCore) upgrade(ctx context.Context, j upgradeJob, u *upgradeEncoder) {
	if e, ok := c.store.GetEntryQuietly(j.key); !ok || e.Value != j.entry || len(j.entry.body) < 2 {
		return // gone: its upgrade could not be kept
	}
	d := j.dict.Value()
	if d == nil && j.key.dictionary != "" {
		c.upgradesDropped.Add(1) // its dictionary is gone
		return
	}
	fleet, done := c.upgradeFromFleet(ctx, &j, d)
	if done {
		return
	}
	var enc writers.Encoder
	level := 0
	for _, l := range upgradeLevels(j.key.coding, j.best) {
		if l <= j.entry.level {
			break
		}
		if enc = u.get(c, j.key.coding, l, d); enc != nil {
			level = l
			break
		}
	}
	if enc == nil {
		c.upgradesDropped.Add(1)
		return
	}
	// The work: the encoding (less than the entry's, or it is no gain),
	// its copy that the new entry keeps, the buffer the plain bytes go
	// through, and a decoder if the entry has no plain bytes.
	held := 2*int64(len(j.entry.body)) + upgradeChunk
	var src io.Reader = bytes.NewReader(j.entry.plain)
	if j.entry.plain == nil {
		held += upgradeDecoderMemory(j.key.coding, d, c.entryMax)
	}
	if !c.claim(held) {
		c.upgradesDropped.Add(1)
		return
	}
	defer func() { c.bytes.Add(-held) }()
	if j.entry.plain == nil {
		dec, done, err := newUpgradeDecoder(j.key.coding, j.entry.body, d)
		if err != nil {
			return
		}
		defer done()
		src = dec
	}
	out := cappedBuffer{b: make([]byte, 0, len(j.entry.body)-1)} // an encoding no smaller is of no use
	enc.Reset(&out)
	defer enc.Reset(io.Discard)
	if !c.encodeAll(ctx, enc, src) || enc.Close() != nil {
		return
	}
	body := bytes.Clone(out.b)
	e := newEntry(&j.key, body, j.entry.plain, level)
	e.public.Store(j.entry.public.Load())
	// The new entry's weight takes over what the work held (the old
	// entry's goes back when it is replaced), and claims the rest: the
	// plain bytes both entries keep are counted twice until then.
	take := min(e.weight, held)
	if e.weight > take && !c.claim(e.weight-take) {
		c.upgradesDropped.Add(1)
		return
	}
	held -= take
	if !c.replace(&j, e) {
		return
	}
	c.upgrades.Add(1)
	if fleet != nil && level == j.best {
		fleet.publish(body)
	}
}

// replace puts e, the upgrade of job j, in place of j's entry if the store
// still holds that entry, and reports whether it did; if not, e's weight,
// which the caller claimed, goes back.
func (c *cacheCore) replace(j *upgradeJob, e *cacheEntry) bool {
	replaced := false
	c.store.ComputeIfPresent(j.key, func(old *cacheEntry) (*cacheEntry, otter.ComputeOp) {
		if old != j.entry {
			return old, otter.CancelOp
		}
		replaced = true
		return e, otter.WriteOp
	})
	if !replaced {
		c.bytes.Add(-e.weight)
	}
	return replaced
}

// encodeAll writes what src yields to enc in chunks of upgradeChunk,
// stopping early at Close or the end of ctx; it reports whether src ended
// and enc took all.
func (c *cacheCore) encodeAll(ctx context.Context, enc writers.Encoder, src io.Reader) bool {
	buf := make([]byte, upgradeChunk)
	for {
		select {
		case <-c.stop:
			return false
		case <-ctx.Done():
			return false
		default:
		}
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if _, werr := enc.Write(buf[:n]); werr != nil {
				return false // no gain
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// upgradeSource is what an upgrade of an entry needs beyond the entry: the
// dictionary of a dcz or dcb key, and the fleet's store of the Middleware
// that found the entry, each nil when there is none; and the lifetime of
// that Middleware, which runs the upgrade (nil: none runs).
type upgradeSource struct {
	dict   *dictionary
	shared *storeguard.Guard
	life   *lifetime.Lifetime
}

// newUpgradeJob returns the job of upgrading e, stored under k, at level
// best, with what src holds.
func newUpgradeJob(k *cacheKey, e *cacheEntry, best int, src upgradeSource) upgradeJob {
	j := upgradeJob{key: *k, entry: e, best: best, shared: src.shared}
	if src.dict != nil && k.dictionary != "" {
		j.dict = weak.Make(src.dict)
	}
	return j
}
