package squeeze

import (
	"strconv"
	"time"
)

// This file holds what squeeze tells about its work: the Observer's hooks,
// the struct each receives, and the reporter that calls the response hook.
// Counters (counters.go) aggregates what the hooks receive.

// Observer holds the hooks [WithObserver] calls, one per kind of work, as
// [net/http/httptrace.ClientTrace] does: any may be nil, costing nothing.
// Hooks run on the goroutine doing the work, must be safe for concurrent
// use and quick. [Counters.Observer] returns hooks that feed a Counters.
type Observer struct {
	// Response is called once per response squeeze handled, when it is
	// complete (not for upgrades, hijacked connections, or the 413 and
	// 415 answers to bodies squeeze cannot decode).
	Response func(ResponseInfo)
	// RequestBody is called per request body decoded, when it is closed
	// or the handler returns.
	RequestBody func(RequestBodyInfo)
	// SharedStore is called per call to [WithSharedStore]'s store, call
	// skipped, and breaker change.
	SharedStore func(SharedStoreInfo)
	// Learned is called per step of [WithLearnedDictionary].
	Learned func(LearnedInfo)
}

// ResponseInfo describes a response body squeeze sent, encoded or not:
// exactly one of Coding and Skipped is set.
type ResponseInfo struct {
	// Coding is the content coding sent, "" when none was; Skipped then
	// says why (it is zero for an encoded response).
	Coding  string
	Skipped Reason
	// In is the body the handler wrote, Out the bytes written to the
	// underlying [http.ResponseWriter]. For an unencoded response In is Out.
	In, Out int64
	// Elapsed is the time spent encoding (for a stream, writing included);
	// zero when unencoded, but for [ReasonNoGain] (the time finding out).
	Elapsed time.Duration
	// Cached: the encoded bytes came from the [Cache], or from a
	// [Middleware.FileServer]'s sibling or store. Dictionary: they were
	// encoded against a compression dictionary (dcz or dcb).
	Cached, Dictionary bool
}

// RequestBodyInfo describes a request body squeeze decoded.
type RequestBodyInfo struct {
	// Coding is the coding decoded, as Content-Encoding named it ("gzip",
	// or "gzip, br" for stacked codings, in the order applied).
	Coding string
	// Compressed: the bytes read from the connection; Decoded: read by the handler.
	Compressed, Decoded int64
	Elapsed             time.Duration // in the decoder's Reads
}

// SharedStoreInfo describes a call to [WithSharedStore]'s store.
type SharedStoreInfo struct {
	// Result is the call's outcome.
	Result SharedResult
	// Read is the bytes read from the store, Written those written.
	Read, Written int64
	// ErrorKind is a [SharedError]'s kind ("timeout", "refused",
	// "too_large", "bad_value", "other"), Err the store's error.
	ErrorKind string
	Err       error
	Elapsed   time.Duration // the call's
}

// LearnedInfo describes one step of a learned dictionary: Step names it
// (each end of a round: "trained", "kept", "refused", "claim_lost",
// "discarded", "superseded", "unmeasured"; "adopted", "delta", the samples
// refused by reason, "deltas_stopped", "publish_failed", "unregistrable"), and
// docs/reference.md ("Observability") says what each sets of Samples, Size,
// Plain, Saved and Elapsed. New steps may be added; an observer ignores the
// ones it does not know.
type LearnedInfo struct {
	Step                        string
	Samples, Size, Plain, Saved int64
	Elapsed                     time.Duration
}

// The learned steps, as LearnedInfo.Step names them.
const (
	learnedTrained = "trained"
	learnedAdopted = "adopted"
	learnedRefused = "refused"
	learnedDelta   = "delta"

	learnedSkippedPrivate     = "skipped_private"
	learnedSkippedUnmarked    = "skipped_unmarked"
	learnedSkippedCredentials = "skipped_credentials"
	learnedSkippedQuery       = "skipped_query"
	learnedSkippedType        = "skipped_type"
	learnedDeltasStopped      = "deltas_stopped"
	learnedPublishFailed      = "publish_failed"
	learnedUnregistrable      = "unregistrable"

	// The ends of a round besides learnedTrained and learnedRefused
	// (learned_train.go): the live dictionary saved enough; another
	// replica claimed the training; the training gave no dictionary that
	// saves anything on the samples held out; a newer or the same
	// dictionary went live while it trained; a dictionary could not be
	// measured.
	learnedKept       = "kept"
	learnedClaimLost  = "claim_lost"
	learnedDiscarded  = "discarded"
	learnedSuperseded = "superseded"
	learnedUnmeasured = "unmeasured"
)

// SharedResult is the outcome of a call to the store of [WithSharedStore],
// as [SharedStoreInfo] reports it.
type SharedResult uint8

const (
	// sharedNone is no result.
	sharedNone SharedResult = iota
	// SharedHit: a value was read and verified.
	SharedHit
	// SharedMiss: the store held no value for the key, or none usable
	// here (over the size limit, or a dictionary of another pattern).
	SharedMiss
	// SharedError: the call failed or reached its timeout.
	SharedError
	// SharedRejected: a value was read but failed verification and was
	// dropped; the breaker does not count it as a failure.
	SharedRejected
	// SharedSkipped: no call was made (the breaker open, the reads in
	// flight at their limit, or the key failed or missed just before).
	SharedSkipped
	// SharedWritten: a value was written, or a claim won.
	SharedWritten
	// SharedClaimLost: a claim found the key taken by another replica.
	SharedClaimLost
	// SharedBreakerOpened: calls failed in a row; s is not asked a while.
	SharedBreakerOpened
	// SharedBreakerClosed: a call succeeded after the breaker opened.
	SharedBreakerClosed
	// SharedRefused: a write or a claim was not made for want of room in
	// [SharedWriteBudget].
	SharedRefused
	// sharedRefreshed ("refreshed", unexported so that the package's
	// names stay few): the key of a shared dictionary this replica uses
	// was kept fresh in the store, at most every 2 seconds, by a read
	// that transfers no value.
	sharedRefreshed
	sharedResultCount
)

var sharedResultNames = [sharedResultCount]string{
	"none", "hit", "miss", "error", "rejected", "skipped", "written", "claim_lost", "breaker_opened", "breaker_closed",
	"refused", "refreshed",
}

// String returns the result's name in snake case: "hit", "miss", "error",
// "rejected", "skipped", "written", "claim_lost", "breaker_opened",
// "breaker_closed", "refused", "refreshed" (a refresh of a key in use)
// or "none".
func (r SharedResult) String() string {
	if r >= sharedResultCount {
		return "SharedResult(" + strconv.Itoa(int(r)) + ")"
	}
	return sharedResultNames[r]
}

// WithObserver sets the hooks squeeze calls to report its work; see
// [Observer]. Without it nothing is reported.
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}

// reporter is the observer's part in one response.
type reporter struct {
	// byFileServer is set when a FileServer behind the writer reports the
	// response itself.
	byFileServer bool
}

// send sends the ResponseInfo of rw's response to the observer.
func (r *reporter) send(rw *responseWriter) {
	if r.byFileServer {
		return
	}
	e := ResponseInfo{Coding: rw.encodedAs(), Skipped: rw.why, Out: rw.sent, Elapsed: rw.elapsed}
	if e.Coding == "" && e.Skipped == reasonNone {
		return // never decided: the handler panicked first
	}
	e.In = rw.written
	if e.Coding == "" {
		e.In = e.Out
	}
	e.Dictionary = e.Coding != "" && rw.offer != nil && rw.offer.dict != nil
	e.Cached = rw.fromCache
	rw.m.observe(e)
}
