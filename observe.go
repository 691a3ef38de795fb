package squeeze

import (
	"strconv"
	"time"
)

// This file holds what squeeze tells about its work: the Event an observer
// receives and the reporter that sends it. Counters (counters.go)
// aggregates events.

// EventKind tells what an [Event] describes.
type EventKind uint8

const (
	// ResponseEvent describes a response body squeeze sent, encoded or not.
	ResponseEvent EventKind = iota
	// RequestBodyEvent describes a request body squeeze decoded.
	RequestBodyEvent
	// SharedStoreEvent describes one call to the store of
	// [WithSharedStore], one call skipped, or a change of its breaker:
	// see [Event].Shared.
	SharedStoreEvent
	// LearnedDictionaryEvent describes the work of a learned dictionary
	// ([WithLearnedDictionary]): see [Event].Learned.
	LearnedDictionaryEvent
)

// String returns "response", "request_body", "shared_store" or
// "learned_dictionary".
func (k EventKind) String() string {
	switch k {
	case ResponseEvent:
		return "response"
	case RequestBodyEvent:
		return "request_body"
	case SharedStoreEvent:
		return "shared_store"
	case LearnedDictionaryEvent:
		return "learned_dictionary"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is what squeeze reports to the observer set with [WithObserver],
// once per response it handled, when the handler has returned, and once per
// request body it decoded, when the body is closed or the handler returns.
//
// For a response, In is what the handler wrote and Out what went to the
// underlying [http.ResponseWriter]; exactly one of Coding and Skipped is
// set. For a request body, Out is what was read from the connection and In
// what the handler read once decoded; Skipped is [ReasonNone]. Either way
// In counts plain bytes and Out wire bytes.
//
// Responses squeeze does not handle send no event: protocol upgrades,
// hijacked connections, the 413 and 415 answers to request bodies it
// cannot decode, and responses whose handler panicked before anything was
// decided.
type Event struct {
	// Kind tells a response from a decoded request body.
	Kind EventKind
	// Coding is the content coding sent ("zstd", "br", "gzip", ...), or ""
	// when the response went out unencoded. For a request body it is the
	// coding decoded, as Content-Encoding named it ("gzip", or "gzip, br"
	// for stacked codings, in the order applied).
	Coding string
	// Skipped says why a response went out unencoded: [ReasonTooSmall],
	// [ReasonContentType] or another [Reason]. It
	// is [ReasonNone] for an encoded response and for a request body.
	Skipped Reason
	// In is the number of plain bytes: the body the handler wrote, or the
	// decoded bytes the handler read from a request body.
	In int64
	// Out is the number of bytes on the wire: the body written to the
	// underlying ResponseWriter, or the encoded bytes read from the
	// request.
	Out int64
	// Elapsed is the time spent encoding or decoding: in the encoder's
	// Write, Flush and Close calls (for a stream, that includes passing its
	// output to the connection) or in the decoder's Reads. It is zero for a
	// response sent unencoded, except for [ReasonNoGain]: the time spent
	// finding out.
	Elapsed time.Duration
	// Cached is set when the encoded bytes were not encoded for this
	// response: they came from the [Cache], or from a [Middleware.FileServer]'s
	// precompressed sibling file or its store of encoded files. Such a
	// response is not a skip, so Coding is set and Skipped is ReasonNone.
	Cached bool
	// Dictionary is set when the response was encoded with a compression
	// dictionary (RFC 9842, dcz or dcb; see [WithDictionaryMatch]).
	Dictionary bool
	// Shared is the outcome of a [SharedStoreEvent]; In is then the bytes
	// read from the store, Out those written, and Elapsed the time the
	// call took. It is zero for the other kinds.
	Shared SharedResult
	// SharedError is the kind of a [SharedError]'s failure: "timeout"
	// (the call reached its deadline, [SharedTimeout]), "refused" (the
	// connection was refused), "too_large" (the store refused a value or
	// a reply for its size), "bad_value" (it answered with something that
	// is not a value) or "other"; Err is the store's error, its cause.
	// They are "" and nil for every other Event. A [SharedStore] tells the
	// kinds squeeze cannot see in the standard library's errors by an
	// error in its chain with a method SharedErrorKind() string returning
	// "too_large" or "bad_value".
	SharedError string
	Err         error
	// Learned is what a [LearnedDictionaryEvent] reports; In, Out and
	// Elapsed then mean what its [LearnedResult] says. It is zero
	// for the other kinds.
	Learned LearnedResult
}

// LearnedResult is what a [LearnedDictionaryEvent] reports. Besides the
// named results below, it takes values an observer tells by their String:
// "skipped_private", "skipped_unmarked", "skipped_credentials",
// "skipped_query" and "skipped_type" (a response the route did not sample,
// and why; In is the samples held toward the next round, Out those it
// needs), "deltas_stopped" (the route's streamed deltas saved less than
// their floor; no deltas until its next dictionary), "publish_failed" (the
// SharedStore did not take a trained dictionary; tried again) and
// "unregistrable" (a response went without Use-As-Dictionary: its caching
// headers keep a browser from storing it). [Counters] counts each.
type LearnedResult uint8

const (
	// learnedNone is the Learned of an Event of another kind.
	learnedNone LearnedResult = iota
	// LearnedTrained: a dictionary was trained and published. In is the
	// bytes of samples it was trained on, Out its length, Elapsed the
	// training's time.
	LearnedTrained
	// LearnedAdopted: a dictionary another replica trained was taken from
	// the SharedStore, verified. Out is its length.
	LearnedAdopted
	// LearnedRefused: a training was due but refused for its budget:
	// another training was running, or too few samples fit its memory
	// budget.
	LearnedRefused
	// LearnedDelta: a response went out as a delta against a learned
	// dictionary. In is its plain bytes, Out the bytes it saved, estimated
	// from the route's last measured ratio of delta to zstd without the
	// dictionary.
	LearnedDelta
	// learnedSkippedPrivate: a response the route collects samples from
	// was not sampled: it is private, no-store, sets a cookie or varies
	// on everything. In is the samples the route holds toward its next
	// round, Out how many the round needs.
	learnedSkippedPrivate
	// learnedSkippedUnmarked: a response was not sampled because it says
	// nothing of sharing: neither Cache-Control public nor a max-age or
	// s-maxage. In and Out as for "skipped_private".
	learnedSkippedUnmarked
	// learnedSkippedCredentials: a response that is not Cache-Control
	// public answered a request with credentials (Cookie, Authorization,
	// or a header of [LearnedCredentialHeaders]) and was not sampled: a
	// route whose visitors carry a session cookie trains nothing until
	// its responses say public. In and Out as for "skipped_private".
	learnedSkippedCredentials
	// learnedSkippedQuery: a response that is not Cache-Control public
	// answered a request with a query string, which may be a secret (a
	// share link), and was not sampled. In and Out as for
	// "skipped_private".
	learnedSkippedQuery
	// learnedSkippedType: a response was not sampled because squeeze does
	// not compress its content type. In and Out as for
	// "skipped_private".
	learnedSkippedType
	// learnedDeltasStopped: the route's streamed deltas saved less than
	// the floor, measured against the coding they replaced, so the route
	// sends no more deltas until its next dictionary. In is the plain
	// bytes measured, Out the bytes the deltas went out in over those of
	// the coding they replaced (which may be more).
	learnedDeltasStopped
	// learnedPublishFailed: writing a trained dictionary, or its pointer,
	// to the SharedStore failed; it is tried again at the route's next
	// requests. Out is the dictionary's length.
	learnedPublishFailed
	// learnedUnregistrable: a response that would have carried
	// Use-As-Dictionary, a learned dictionary's or a body remembered as a
	// dictionary ([WithDictionaryMatch]) or a FileServer's file, went out
	// without it: its caching headers (no-cache, no-store,
	// must-revalidate, or no freshness) keep a browser from storing it as
	// a dictionary (RFC 9842 section 2.2.1).
	learnedUnregistrable
	learnedResultCount
)

var learnedResultNames = [learnedResultCount]string{"none", "trained", "adopted", "refused", "delta",
	"skipped_private", "skipped_unmarked", "skipped_credentials", "skipped_query", "skipped_type",
	"deltas_stopped", "publish_failed", "unregistrable"}

// String returns the result's name: "trained", "adopted", "refused",
// "delta", "skipped_private", "skipped_unmarked", "skipped_credentials",
// "skipped_query", "skipped_type", "deltas_stopped", "publish_failed",
// "unregistrable" or "none".
func (r LearnedResult) String() string {
	if r >= learnedResultCount {
		return "LearnedResult(" + strconv.Itoa(int(r)) + ")"
	}
	return learnedResultNames[r]
}

// SharedResult is the outcome of a call to the store of [WithSharedStore],
// as a [SharedStoreEvent] reports it.
type SharedResult uint8

const (
	// sharedNone is the Shared of an Event of another kind.
	sharedNone SharedResult = iota
	// SharedHit: a value was read and passed verification.
	SharedHit
	// SharedMiss: the store held no value for the key, one over the size
	// limit, or one sound but not for the reader (a dictionary of another
	// pattern, or longer than the reader's own limit).
	SharedMiss
	// SharedError: the call failed or reached its timeout.
	SharedError
	// SharedRejected: a value was read but failed verification (its hash,
	// its framing or its length); it was dropped. The store
	// answered: the breaker does not count it as a failure.
	SharedRejected
	// SharedSkipped: no call was made, because the breaker was open, the
	// reads or values in flight filled their places or budget, the key's
	// value failed verification within the last minute, or the store held
	// none for it a moment ago.
	SharedSkipped
	// SharedWritten: a value was written, or a claim won.
	SharedWritten
	// SharedClaimLost: a claim found the key taken by another replica.
	SharedClaimLost
	// SharedBreakerOpened: calls failed in a row; the store is not asked
	// for a while.
	SharedBreakerOpened
	// SharedBreakerClosed: a call succeeded after the breaker opened.
	SharedBreakerClosed
	// SharedRefused: a write or a claim was not made because this
	// Middleware's write budget had no room for it
	// ([SharedWriteBudget]).
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

// WithObserver sets f to be called with an [Event] for every response
// squeeze handles, after the handler has returned and the response is
// complete, and for every request body it decodes, when the body is
// closed or the handler returns. f runs on the request's goroutine (or on
// the goroutine that closed the body) and must be safe for concurrent use;
// it delays the end of the response, so it should be quick. [Counters.Observe]
// is one such f. A nil f, the default, turns observing off; then squeeze
// does not read the clock for Elapsed.
func WithObserver(f func(Event)) Option {
	return func(c *config) error {
		c.observe = f
		return nil
	}
}

// reporter is the observer's part in one response.
type reporter struct {
	// byFileServer is set when a FileServer behind the writer reports the
	// response itself.
	byFileServer bool
}

// send sends the Event of rw's response to the observer.
func (r *reporter) send(rw *responseWriter) {
	if r.byFileServer {
		return
	}
	e := Event{Kind: ResponseEvent, Coding: rw.encodedAs, Skipped: rw.why, Out: rw.sent, Elapsed: rw.elapsed}
	if e.Coding == "" && e.Skipped == ReasonNone {
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
