package squeeze

import (
	"time"

	"github.com/squeezehttp/squeeze/internal/train"
)

// This file holds the rounds of a learned route (learned.go): what runs in
// the background once the route holds a round of samples. A round takes
// the fleet's newer dictionary if there is one (shared_learned.go),
// measures the live dictionary on the samples, and trains a new one when
// there is none or it saves less than the route's threshold.
//
// Training is bounded three ways: one at a time per Middleware (a
// training that finds another running is refused and counted), at most
// one round per route per interval, and an input whose training fits the
// route's memory budget by (*learnedRoute).trainCost, which
// TestLearnedTrainingStaysWithinItsMemoryBudget checks against what the
// training allocates. The training is internal/train's.

// learnedMeasureCost bounds what a round allocates beside the training
// itself, for a dictionary of size bytes and samples of at most maxSample:
// the encoders that measure the dictionary and choose its codings
// (chooseCodings: a dcz encoder, a dcb encoder and the dictionary's
// prepared dcb tables, about 8.7 MiB at 64 KiB, 10.1 at 256 KiB and 13.1
// with 768 KiB, measured with runtime.MemStats) and their output.
func learnedMeasureCost(size, maxSample int64) int64 {
	return 9<<20 + 2*dcbTableBytes(int(size)) + 2*maxSample
}

// trainCost returns the least memory a round of r trains in on n
// bytes of samples: internal/train's smallest table and the measure.
// Given more, the trainer takes a larger table (train.MaxCost).
func (r *learnedRoute) trainCost(n int64) int64 {
	return r.measureCost() + train.MinCost(n, r.cfg.dictSize)
}

// measureCost is learnedMeasureCost for r's dictionaries and samples.
func (r *learnedRoute) measureCost() int64 {
	return learnedMeasureCost(int64(r.cfg.dictSize), r.maxSample())
}

// startJob runs f in the background, counted in s.jobs.
func (s *dictStore) startJob(f func()) {
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		f()
	}()
}

// round is the job of one round of samples, whose reservation is cost:
// the route rests for its interval afterwards, whatever it found.
func (r *learnedRoute) round(samples [][]byte, cost int64) {
	defer func() {
		r.resumeAt.Store(time.Now().Add(r.cfg.interval).UnixNano())
		r.state.Store(learnedResting)
	}()
	defer r.release(cost)
	if r.s.shared != nil {
		r.poll()
	}
	if ld := r.newest(); ld != nil {
		// The samples of this round are new responses, which the
		// dictionary was not trained on (nor, for one taken from the
		// fleet's store, this replica): the round chooses its codings
		// again on them.
		codings, m, ok := r.s.chooseCodings(ld.sd.d.data, samples)
		if ok {
			ld.sd.d.codings.Store(&codings)
			r.measured(m)
		}
		if !ok || 1-m.ratio >= r.cfg.retrain {
			return
		}
	}
	r.train(samples)
}

// train trains a dictionary on samples and publishes it, with a
// SharedStore under the fleet's claim, unless another training runs (a
// refusal) or the samples that fit the memory budget are too few. On the
// samples held out, which it was not trained on, the round chooses the
// delta codings it is offered in (chooseCodings); a dictionary with which
// no delta coding beats the coding it replaces is not published.
func (r *learnedRoute) train(samples [][]byte) {
	s := r.s
	if !s.training.TryAcquire(1) {
		s.report(LearnedInfo{Step: learnedRefused})
		return
	}
	defer s.training.Release(1)
	input, held := r.trainingInput(samples)
	if len(input) < learnedMinSamples || len(held) == 0 {
		s.report(LearnedInfo{Step: learnedRefused})
		return
	}
	r.mu.Lock()
	gen := r.gen + 1
	r.mu.Unlock()
	if s.shared != nil && r.claim(gen) == claimLost {
		return // another replica trains it; a later poll takes it
	}
	t0 := time.Now()
	trained, err := train.Train(input, r.cfg.dictSize, r.cfg.trainMemory-r.measureCost(), train.Options{})
	elapsed := time.Since(t0)
	data := trained.Dict
	if err != nil {
		data = nil // trainingInput kept what fits; nothing else refuses
	}
	if len(data) == 0 {
		return
	}
	codings, m, ok := s.chooseCodings(data, held)
	if !ok || len(codings) == 0 {
		return // no delta coding beats the coding it replaces
	}
	ld := r.newLearnedDict(data, gen, codings)
	if !r.publish(ld) {
		return
	}
	r.measured(m)
	var in int64
	for _, b := range input {
		in += int64(len(b))
	}
	s.report(LearnedInfo{Step: learnedTrained, Samples: in, Size: int64(len(data)), Elapsed: elapsed})
	if s.shared != nil {
		r.share(ld)
	}
}

// trainingInput splits samples into those to train on and those held
// out to measure the result on, every fourth: never one of the first, on
// which a dictionary that merely holds them would look better than on the
// route's next responses. Of the first it keeps the newest whose training
// fits the memory budget. A round's samples, learnedRoundSamples or more,
// hold one out at least; fewer than that may leave too few of either.
func (r *learnedRoute) trainingInput(samples [][]byte) (input, held [][]byte) {
	for i, b := range samples {
		if i%4 == 3 {
			held = append(held, b)
		} else {
			input = append(input, b)
		}
	}
	var n int64
	for i := len(input) - 1; i >= 0; i-- {
		if r.trainCost(n+int64(len(input[i]))) > r.cfg.trainMemory {
			input = input[i+1:]
			break
		}
		n += int64(len(input[i]))
	}
	return input, held
}

// learnedMeasure is what a dictionary did to a set of samples, encoded
// with zstd at the middleware's level: the bytes of the deltas over the
// bytes without the dictionary, and the bytes saved per plain byte. Zero
// when it could not be told.
type learnedMeasure struct {
	ratio, savedPerByte float64
}

// reportDelta reports the bytes a response of plain bytes, sent as a
// delta against one of r's dictionaries, saved: an estimate, from what the
// last round measured per plain byte, of what zstd without the dictionary
// would have sent less what the delta did.
func (s *dictStore) reportDelta(r *learnedRoute, plain int64) {
	per := r.savedPerByte()
	if s.observe == nil || per <= 0 || plain <= 0 {
		return
	}
	s.report(LearnedInfo{Step: learnedDelta, Plain: plain, Saved: int64(float64(plain) * per)})
}

// report sends e to the observer, if any.
func (s *dictStore) report(e LearnedInfo) {
	if s.observe != nil {
		s.observe(e)
	}
}
