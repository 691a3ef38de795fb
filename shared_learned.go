package squeeze

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds the learned dictionaries a fleet shares through its
// SharedStore (see WithLearnedDictionary). One replica trains a route's
// dictionary: the one that wins the claim of its generation. It writes the
// dictionary under its hash, as shared_dict.go frames one, then the
// route's pointer, which names the newest generation and its hash. Every
// replica reads the pointer at each round and, on a request to the route
// or to its dictionaries' path, at most once per learnedPollEvery, within
// that request: so the request that reads a newer pointer already links
// the dictionary it names. It takes a newer dictionary by its hash,
// verified: its bytes must hash to the pointer's hash, its pattern must be
// the route's and its length within the route's dictionary size. So every
// replica serves the same bytes at the same URL with the same id. A client
// naming a dictionary of the route this replica lacks, in
// Available-Dictionary or by asking for its URL (which another replica
// linked), gets it fetched by hash, verified alike, into the budgeted
// store of remembered dictionaries: what a client names never changes
// what the route publishes. A publish the store does not take (the
// dictionary or the pointer) is counted, logged once, and tried again at
// the route's next poll.

// sharedLearnedMagic starts every pointer value.
const sharedLearnedMagic = "sqzl1"

// sharedLearnedLen is the length of a pointer value: the magic, the
// generation (eight bytes, big endian) and the SHA-256.
const sharedLearnedLen = len(sharedLearnedMagic) + 8 + 32

// learnedClaimLifetime is how long a claim to train a generation holds:
// longer than a training takes, short enough that a replica that died
// holding it delays the next only so long.
const learnedClaimLifetime = 10 * time.Minute

// learnedPollEvery is the least time between two reads of a route's
// pointer by one replica, besides those of its rounds.
const learnedPollEvery = time.Second

// pointerKey is the key of the route's pointer.
func (r *learnedRoute) pointerKey() string { return "learned:" + r.key }

// claim claims the training of generation gen of the route's dictionary.
func (r *learnedRoute) claim(ctx context.Context, gen uint64) storeguard.ClaimOutcome {
	key := "claim:learned:" + r.key + ":" + strconv.FormatUint(gen, 10)
	return r.learner.s.shared.Claim(ctx, key, []byte{1}, learnedClaimLifetime)
}

// share writes ld, just trained, to the store under its hash, then the
// route's pointer to it, within the replica's write budget
// (shared_admission.go). When the store does not take either, ld is kept
// to be shared again at the route's next poll (retryShare), the failure is
// counted, and the first of ld's is logged.
func (r *learnedRoute) share(ctx context.Context, ld *learnedDict) {
	if !r.sharing.CompareAndSwap(false, true) {
		r.unshared.CompareAndSwap(nil, ld) // the one sharing now tries it next
		return
	}
	defer r.sharing.Store(false)
	if r.write(ctx, ld) {
		r.unshared.CompareAndSwap(ld, nil)
		return
	}
	r.learner.report(LearnedInfo{Step: learnedPublishFailed, Size: int64(len(ld.sd.d.data))})
	if r.unshared.Swap(ld) != ld {
		r.learner.logf("squeeze: learned dictionary %q: the shared store did not take the dictionary %s (generation %d); the other replicas cannot serve it until it does, and it is tried again at each poll (every %v at most)",
			r.cfg.pattern, ld.path, ld.gen, r.learner.pollEvery)
	}
}

// write writes ld to the store under its hash, then the route's pointer
// to it, each within the replica's write budget; it reports whether the
// store took both.
func (r *learnedRoute) write(ctx context.Context, ld *learnedDict) bool {
	sh, d := r.learner.s.shared, ld.sd.d
	if len(d.pattern) > 0xffff {
		return true // no value can frame it: nothing to try again
	}
	value := sharedDictValue(d)
	v := make([]byte, 0, sharedLearnedLen)
	v = append(v, sharedLearnedMagic...)
	v = binary.BigEndian.AppendUint64(v, ld.gen)
	v = append(v, d.hash[:]...)
	// Each write comes out of the replica's write budget; the pointer is
	// written only once the dictionary is.
	return sh.Admit(len(value)) && sh.Set(ctx, sharedDictKey(d.hash), value, 0) &&
		sh.Admit(len(v)) && sh.Set(ctx, r.pointerKey(), v, 0)
}

// retryShare shares again, in the background, the route's dictionary the
// store did not take, while it is still the route's newest.
func (r *learnedRoute) retryShare() {
	ld := r.unshared.Load()
	if ld == nil {
		return
	}
	if r.newest() != ld {
		r.unshared.CompareAndSwap(ld, nil) // superseded: the fleet has a newer one
		return
	}
	r.learner.startJob(func(ctx context.Context) { r.share(ctx, ld) })
}

// maybePoll reads the fleet's pointer within the request whose context is
// ctx, taking the newer dictionary it names, unless another request is
// reading it or the last read began within learnedPollEvery (or the
// route's interval, if shorter); first it
// starts sharing again a dictionary the store did not take.
func (r *learnedRoute) maybePoll(ctx context.Context) {
	now := time.Now().UnixNano()
	if now < r.nextPoll.Load() || !r.polling.CompareAndSwap(false, true) {
		return
	}
	defer r.polling.Store(false)
	r.nextPoll.Store(now + int64(min(r.learner.pollEvery, r.cfg.interval)))
	r.retryShare()
	r.poll(ctx)
}

// learnedPointer is a parsed pointer value.
type learnedPointer struct {
	gen  uint64
	hash [32]byte
}

// poll reads the route's pointer within ctx and, when it names a
// generation newer than the route's newest dictionary, takes that
// dictionary from the store, verified, and publishes it.
func (r *learnedRoute) poll(ctx context.Context) {
	sh := r.learner.s.shared
	v, ok := sh.Get(ctx, r.pointerKey(), sharedLearnedLen, func(value []byte) (any, storeguard.Verdict) {
		if len(value) != sharedLearnedLen || string(value[:len(sharedLearnedMagic)]) != sharedLearnedMagic {
			return nil, storeguard.Bad
		}
		p := learnedPointer{gen: binary.BigEndian.Uint64(value[len(sharedLearnedMagic):])}
		copy(p.hash[:], value[len(sharedLearnedMagic)+8:])
		return p, storeguard.Taken
	})
	if !ok {
		return
	}
	p := v.(learnedPointer)
	r.mu.Lock()
	behind := p.gen > r.gen
	r.mu.Unlock()
	if !behind {
		return
	}
	d := r.fetch(ctx, p.hash, false)
	if d == nil {
		return
	}
	if r.publish(r.newLearnedDict(d.data, p.gen, nil)) {
		r.learner.report(LearnedInfo{Step: learnedAdopted, Size: int64(len(d.data))})
	}
}

// fetch returns the route's dictionary with this hash from the store,
// verified (verifySharedDict), or nil; named says a client's request named
// it (see storeguard.Guard.Lookup). It is not kept anywhere: the caller publishes
// it or stores it within a budget. The key is the one of every dictionary
// of that hash: the route reads it through a via of its own, since it
// checks it against its own pattern and size (see storeguard.Guard.Lookup).
func (r *learnedRoute) fetch(ctx context.Context, hash [32]byte, named bool) *dictionary {
	limit := sharedDictHeader + len(r.cfg.pattern) + r.cfg.dictSize
	v, ok := r.learner.s.shared.Lookup(ctx, sharedDictKey(hash), "learned:"+r.key, limit, named, func(value []byte) (any, storeguard.Verdict) {
		d, verdict := verifySharedDict(hash, value, []string{r.cfg.pattern}, int64(r.cfg.dictSize))
		if d != nil {
			d.learned = true
		}
		return d, verdict
	})
	if !ok {
		return nil
	}
	return v.(*dictionary)
}

// fetchForClient returns the route's dictionary with this hash, which a
// client named and this replica lacks, from the fleet's store, verified
// and kept among the remembered dictionaries (within their budget), or
// nil.
func (r *learnedRoute) fetchForClient(ctx context.Context, hash [32]byte) *dictionary {
	d := r.fetch(ctx, hash, true)
	if d == nil {
		return nil
	}
	return r.learner.s.insert(d, int64(cap(d.data))+dictEntryBytes, 0)
}

// serveFromFleet returns the handler of the route's dictionary at path
// (under the route's path) that another replica linked and this one does
// not hold live: after a poll, which may make it live, the dictionary
// remembered or fetched by the hash the path names, verified, or nil.
// It is served, not published: a client asking for a URL never changes
// what the route links.
func (r *learnedRoute) serveFromFleet(ctx context.Context, path string) http.Handler {
	name := path[len(r.cfg.path):]
	var hash [32]byte
	if len(name) != base64.RawURLEncoding.EncodedLen(len(hash)) {
		return nil
	}
	if n, err := base64.RawURLEncoding.Decode(hash[:], []byte(name)); err != nil || n != len(hash) {
		return nil
	}
	r.maybePoll(ctx)
	for _, ld := range r.live.Load().dicts {
		if ld.path == path {
			return ld.sd
		}
	}
	d := r.learner.s.lookup(hash)
	if d == nil || !d.learned || d.pattern != r.cfg.pattern {
		d = r.fetchForClient(ctx, hash)
	}
	if d == nil || !d.learned || d.pattern != r.cfg.pattern {
		return nil
	}
	return r.newLearnedDict(d.data, 0, nil).sd
}
