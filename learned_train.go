package squeeze

import (
	"context"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
	"github.com/squeezehttp/squeeze/internal/train"
)

// This file holds the rounds of a learned route (learned.go): what runs in
// the background once the route holds a round of samples. A round takes
// the fleet's newer dictionary if there is one (shared_learned.go),
// measures the live dictionary on the samples, and trains a new one when
// there is none or it saves less than the route's threshold.
//
// Training is bounded three ways: one at a time per Middleware (the
// learner's, learner.go: a training that finds another running is refused
// and counted), at most
// one round per route per interval, and an input whose training fits the
// route's memory budget with learnedMeasureCost beside it, which
// TestLearnedTrainingStaysWithinItsMemoryBudget checks against what the
// training allocates. The training, and the choice of the samples it
// trains on and those held out, are internal/train's.

// learnedMeasureCost bounds what a round allocates beside the training
// itself, for a dictionary of size bytes and samples of at most maxSample:
// the encoders that measure the dictionary and choose its codings
// (chooseCodings: a dcz encoder, a dcb encoder and the dictionary's
// prepared dcb tables, about 8.7 MiB at 64 KiB, 10.1 at 256 KiB and 13.1
// with 768 KiB, measured with runtime.MemStats) and their output.
func learnedMeasureCost(size, maxSample int64) int64 {
	return 9<<20 + 2*dcbTableBytes(int(size)) + 2*maxSample
}

// measureCost is learnedMeasureCost for r's dictionaries and samples.
func (r *learnedRoute) measureCost() int64 {
	return learnedMeasureCost(int64(r.cfg.dictSize), r.maxSample())
}

// round is the job of one round of samples, whose reservation is cost,
// within ctx: the route rests for its interval afterwards, whatever it
// found. Every end of a round is reported as one step (roundEnd): "kept",
// "unmeasured", or an end of train.
func (r *learnedRoute) round(ctx context.Context, samples [][]byte, cost int64) {
	defer func() {
		r.resumeAt.Store(time.Now().Add(r.cfg.interval).UnixNano())
		r.state.Store(learnedResting)
	}()
	defer r.release(cost)
	if r.learner.s.shared != nil {
		r.poll(ctx)
	}
	if ld := r.newest(); ld != nil {
		// The samples of this round are new responses, which the
		// dictionary was not trained on (nor, for one taken from the
		// fleet's store, this replica): the round chooses its codings
		// again on them.
		codings, m, ok := r.learner.chooseCodings(ld.sd.d.data, samples)
		if ok {
			ld.sd.d.codings.Store(&codings)
		}
		switch {
		case !ok || m.ratio <= 0:
			r.learner.report(LearnedInfo{Step: learnedUnmeasured, Samples: sampleBytes(samples), Size: int64(len(ld.sd.d.data))})
			return
		case 1-m.ratio >= r.cfg.retrain:
			r.measured(m)
			plain := sampleBytes(samples)
			r.learner.report(LearnedInfo{Step: learnedKept, Samples: plain, Size: int64(len(ld.sd.d.data)),
				Plain: plain, Saved: int64(m.savedPerByte * float64(plain))})
			return
		}
		r.measured(m)
	}
	r.train(ctx, samples)
}

// train trains a dictionary on samples and publishes it, with a
// SharedStore under the fleet's claim, within ctx. Each way it ends is
// reported: "refused" when another training runs, the samples that fit
// the memory budget are too few or the Middleware is closed (Close);
// "claim_lost" when another replica trains it; "discarded" when the
// training gives no dictionary, or one with which neither dcz nor dcb
// beats the coding it replaces on the samples held out, which it was not
// trained on (chooseCodings);
// "unmeasured" when that cannot be measured; "superseded" when a newer
// or the same dictionary went live meanwhile; else "trained". Only the
// last publishes.
func (r *learnedRoute) train(ctx context.Context, samples [][]byte) {
	l := r.learner
	if !l.training.TryAcquire(1) {
		l.report(LearnedInfo{Step: learnedRefused, Samples: sampleBytes(samples)})
		return
	}
	defer l.training.Release(1)
	input, held := r.trainingInput(samples)
	in := sampleBytes(input)
	if len(input) < learnedMinSamples || len(held) == 0 {
		l.report(LearnedInfo{Step: learnedRefused, Samples: in})
		return
	}
	r.mu.Lock()
	gen := r.gen + 1
	r.mu.Unlock()
	if l.s.shared != nil && r.claim(ctx, gen) == storeguard.Lost {
		// Another replica trains it; a later poll takes it.
		l.report(LearnedInfo{Step: learnedClaimLost, Samples: in})
		return
	}
	if ctx.Err() != nil || l.life.Closed() { // the Middleware is closed: no training now
		l.report(LearnedInfo{Step: learnedRefused, Samples: in})
		return
	}
	t0 := time.Now()
	trained, err := train.Train(input, r.cfg.dictSize, r.cfg.trainMemory-r.measureCost(), train.Options{})
	elapsed := time.Since(t0)
	data := trained.Dict
	if err != nil {
		data = nil // trainingInput kept what fits; nothing else refuses
	}
	end := LearnedInfo{Samples: in, Size: int64(len(data)), Elapsed: elapsed}
	if len(data) == 0 {
		end.Step = learnedDiscarded
		l.report(end)
		return
	}
	// On the samples held out, which it was not trained on, the round
	// chooses the delta codings it is offered in (learned_codings.go).
	codings, m, ok := l.chooseCodings(data, held)
	var ld *learnedDict
	switch {
	case !ok || m.ratio <= 0:
		end.Step = learnedUnmeasured
	case len(codings) == 0:
		end.Step = learnedDiscarded // no delta coding beats the coding it replaces
	default:
		end.Step = learnedSuperseded
		if ld = r.newLearnedDict(data, gen, codings); r.publish(ld) {
			r.measured(m)
			end.Step = learnedTrained
		}
	}
	l.report(end)
	if end.Step == learnedTrained && l.s.shared != nil {
		r.share(ctx, ld)
	}
}

// sampleBytes returns the bytes of samples.
func sampleBytes(samples [][]byte) int64 {
	var n int64
	for _, b := range samples {
		n += int64(len(b))
	}
	return n
}

// trainingInput splits samples into those to train on and those held
// out to measure the result on (train.HoldOut), within the route's
// training memory less what measuring the result takes. A round's
// samples, learnedRoundSamples or more, hold one out at least; fewer than
// that may leave too few of either.
func (r *learnedRoute) trainingInput(samples [][]byte) (input, held [][]byte) {
	return train.HoldOut(samples, r.cfg.dictSize, r.cfg.trainMemory-r.measureCost())
}

// learnedMeasure is what a dictionary did to a set of samples, encoded
// with zstd at the middleware's level: the bytes of the deltas over the
// bytes without the dictionary, and the bytes saved per plain byte. Zero
// when it could not be told.
type learnedMeasure struct {
	ratio, savedPerByte float64
}
