package squeeze

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// This file holds Counters, a ready-made aggregate of what an Observer's
// hooks receive, exportable through expvar and in the Prometheus text
// format.

// Counters aggregates what squeeze reports into Envoy's compressor and
// decompressor counters, per coding and per [Reason]; pass
// [Counters.Observer] to [WithObserver]. The zero value is ready; it is
// safe for concurrent use (atomics, no lock) and must not be copied. It
// is an [expvar.Var] (String is JSON) and writes the Prometheus text
// format ([Counters.WritePrometheus]), with no metrics library.
type Counters struct {
	compressor    [len(counterCodings)]codingCounters
	decompressor  [len(counterCodings)]codingCounters
	notCompressed [reasonCount]struct{ count, bytes atomic.Int64 }
	shared        [sharedResultCount]atomic.Int64
	sharedRead    atomic.Int64
	sharedWritten atomic.Int64
	breakerOpen   atomic.Int64                    // 1 after SharedBreakerOpened, 0 after SharedBreakerClosed
	learned       [len(learnedSteps)]atomic.Int64 // by learnedSteps
	sharedErrors  [storeguard.ErrorKindCount]atomic.Int64
	learnedSaved  atomic.Int64
}

// codingCounters are the counters of one content coding.
type codingCounters struct {
	count, plain, wire, nanos, cached, dictionary atomic.Int64
}

// counterCodings are the codings Counters keeps apart; any other coding,
// and stacked request codings, count as "other".
var counterCodings = [...]string{Zstd, Brotli, Gzip, Deflate, "dcz", "dcb", "other"}

func codingIndex(coding string) int {
	for i, c := range counterCodings[:len(counterCodings)-1] {
		if c == coding {
			return i
		}
	}
	return len(counterCodings) - 1
}

// Observer returns the hooks that add what squeeze reports to c, for
// [WithObserver]. To feed other observers too, call these hooks from
// one's own.
func (c *Counters) Observer() Observer {
	return Observer{
		Response:    c.response,
		RequestBody: c.requestBody,
		SharedStore: c.sharedStore,
		Learned:     c.learnedStep,
	}
}

// response counts a response. One with neither Coding nor Skipped set,
// which squeeze never reports, is ignored.
func (c *Counters) response(e ResponseInfo) {
	switch {
	case e.Coding != "":
		c.compressor[codingIndex(e.Coding)].add(e.In, e.Out, e.Elapsed, e.Cached, e.Dictionary)
	case e.Skipped != reasonNone && e.Skipped < reasonCount:
		r := &c.notCompressed[e.Skipped]
		r.count.Add(1)
		r.bytes.Add(e.Out)
	}
}

// requestBody counts a decoded request body.
func (c *Counters) requestBody(e RequestBodyInfo) {
	c.decompressor[codingIndex(e.Coding)].add(e.Decoded, e.Compressed, e.Elapsed, false, false)
}

// learnedSteps are the steps Counters counts, in the order of its learned
// array.
var learnedSteps = [...]string{
	learnedTrained, learnedAdopted, learnedRefused, learnedDelta,
	learnedSkippedPrivate, learnedSkippedUnmarked, learnedSkippedCredentials,
	learnedSkippedQuery, learnedSkippedType, learnedDeltasStopped,
	learnedPublishFailed, learnedUnregistrable,
	learnedKept, learnedClaimLost, learnedDiscarded, learnedSuperseded, learnedUnmeasured,
}

// learnedStep counts a learned dictionary's step; unknown steps are
// ignored.
func (c *Counters) learnedStep(e LearnedInfo) {
	i := slices.Index(learnedSteps[:], e.Step)
	if i < 0 {
		return
	}
	c.learned[i].Add(1)
	if e.Step == learnedDelta {
		c.learnedSaved.Add(e.Saved)
	}
}

// learnedCount returns the count of step, one of learnedSteps.
func (c *Counters) learnedCount(step string) int64 {
	return c.learned[slices.Index(learnedSteps[:], step)].Load()
}

// sharedStore counts a shared-store call.
func (c *Counters) sharedStore(e SharedStoreInfo) {
	if e.Result == sharedNone || e.Result >= sharedResultCount {
		return
	}
	c.shared[e.Result].Add(1)
	if e.Result == SharedError {
		c.sharedErrors[storeguard.KindNamed(e.ErrorKind)].Add(1)
	}
	c.sharedRead.Add(e.Read)
	c.sharedWritten.Add(e.Written)
	switch e.Result {
	case SharedBreakerOpened:
		c.breakerOpen.Store(1)
	case SharedBreakerClosed:
		c.breakerOpen.Store(0)
	}
}

func (cc *codingCounters) add(plain, wire int64, elapsed time.Duration, cached, dictionary bool) {
	cc.count.Add(1)
	cc.plain.Add(plain)
	cc.wire.Add(wire)
	cc.nanos.Add(int64(elapsed))
	if cached {
		cc.cached.Add(1)
	}
	if dictionary {
		cc.dictionary.Add(1)
	}
}

// The shape of Counters.String. The field names are Envoy's where Envoy
// has the counter.
type (
	compressorStats struct {
		Compressed             int64 `json:"compressed"`
		NotCompressed          int64 `json:"not_compressed"`
		TotalUncompressedBytes int64 `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64 `json:"total_compressed_bytes"`
		ContentLengthTooSmall  int64 `json:"content_length_too_small"`
		NotCompressedBytes     int64 `json:"not_compressed_bytes"`
		// EncodeSeconds, Cached and Dictionary have no Envoy counterpart.
		EncodeSeconds float64                    `json:"encode_seconds"`
		Cached        int64                      `json:"cached"`
		Dictionary    int64                      `json:"dictionary"`
		Codings       map[string]compressedStats `json:"codings"`
		Reasons       map[string]skippedStats    `json:"reasons"`
	}
	compressedStats struct {
		Compressed             int64   `json:"compressed"`
		TotalUncompressedBytes int64   `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64   `json:"total_compressed_bytes"`
		EncodeSeconds          float64 `json:"encode_seconds"`
		Cached                 int64   `json:"cached"`
		Dictionary             int64   `json:"dictionary"`
	}
	skippedStats struct {
		NotCompressed      int64 `json:"not_compressed"`
		NotCompressedBytes int64 `json:"not_compressed_bytes"`
	}
	decompressorStats struct {
		Decompressed           int64                        `json:"decompressed"`
		TotalUncompressedBytes int64                        `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64                        `json:"total_compressed_bytes"`
		DecodeSeconds          float64                      `json:"decode_seconds"`
		Codings                map[string]decompressedStats `json:"codings"`
	}
	decompressedStats struct {
		Decompressed           int64   `json:"decompressed"`
		TotalUncompressedBytes int64   `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64   `json:"total_compressed_bytes"`
		DecodeSeconds          float64 `json:"decode_seconds"`
	}
	// sharedStats has no Envoy counterpart; its names follow Envoy's
	// style.
	sharedStats struct {
		Hits   int64 `json:"hits"`
		Misses int64 `json:"misses"`
		Errors int64 `json:"errors"`
		// ErrorsByKind splits Errors by SharedStoreInfo.ErrorKind.
		ErrorsByKind        map[string]int64 `json:"errors_by_kind"`
		VerificationsFailed int64            `json:"verifications_failed"`
		Skipped             int64            `json:"skipped"`
		Writes              int64            `json:"writes"`
		ClaimsLost          int64            `json:"claims_lost"`
		WritesRefused       int64            `json:"writes_refused"`
		Refreshes           int64            `json:"refreshes"`
		BytesRead           int64            `json:"bytes_read"`
		BytesWritten        int64            `json:"bytes_written"`
		BreakerOpened       int64            `json:"breaker_opened"`
		BreakerOpen         int64            `json:"breaker_open"`
	}
	// learnedStats counts the work of learned dictionaries.
	learnedStats struct {
		Trained       int64 `json:"trained"`
		Adopted       int64 `json:"adopted"`
		RefusedBudget int64 `json:"refused_budget"`
		Deltas        int64 `json:"deltas"`
		BytesSaved    int64 `json:"bytes_saved"`
		// The samples refused, by reason, and what kept deltas or
		// dictionaries from going out.
		SkippedPrivate     int64 `json:"skipped_private"`
		SkippedUnmarked    int64 `json:"skipped_unmarked"`
		SkippedCredentials int64 `json:"skipped_credentials"`
		SkippedQuery       int64 `json:"skipped_query"`
		SkippedType        int64 `json:"skipped_type"`
		DeltasStopped      int64 `json:"deltas_stopped"`
		PublishFailed      int64 `json:"publish_failed"`
		Unregistrable      int64 `json:"unregistrable"`
		// The other ends of rounds (learned_train.go).
		Kept       int64 `json:"kept"`
		ClaimLost  int64 `json:"claim_lost"`
		Discarded  int64 `json:"discarded"`
		Superseded int64 `json:"superseded"`
		Unmeasured int64 `json:"unmeasured"`
	}
	counterStats struct {
		Compressor        compressorStats   `json:"compressor"`
		Decompressor      decompressorStats `json:"decompressor"`
		SharedStore       sharedStats       `json:"shared_store"`
		LearnedDictionary learnedStats      `json:"learned_dictionary"`
	}
)

// stats reads the counters once. Each counter is read atomically; they are
// not read all at one instant.
func (c *Counters) stats() counterStats {
	s := counterStats{
		Compressor:   compressorStats{Codings: map[string]compressedStats{}, Reasons: map[string]skippedStats{}},
		Decompressor: decompressorStats{Codings: map[string]decompressedStats{}},
	}
	cs, ds := &s.Compressor, &s.Decompressor
	for i, name := range counterCodings {
		if cc := &c.compressor[i]; cc.count.Load() > 0 {
			x := compressedStats{cc.count.Load(), cc.plain.Load(), cc.wire.Load(), seconds(&cc.nanos), cc.cached.Load(), cc.dictionary.Load()}
			cs.Codings[name] = x
			cs.Compressed += x.Compressed
			cs.TotalUncompressedBytes += x.TotalUncompressedBytes
			cs.TotalCompressedBytes += x.TotalCompressedBytes
			cs.EncodeSeconds += x.EncodeSeconds
			cs.Cached += x.Cached
			cs.Dictionary += x.Dictionary
		}
		if dc := &c.decompressor[i]; dc.count.Load() > 0 {
			x := decompressedStats{dc.count.Load(), dc.plain.Load(), dc.wire.Load(), seconds(&dc.nanos)}
			ds.Codings[name] = x
			ds.Decompressed += x.Decompressed
			ds.TotalUncompressedBytes += x.TotalUncompressedBytes
			ds.TotalCompressedBytes += x.TotalCompressedBytes
			ds.DecodeSeconds += x.DecodeSeconds
		}
	}
	for r := reasonNone + 1; r < reasonCount; r++ {
		x := skippedStats{c.notCompressed[r].count.Load(), c.notCompressed[r].bytes.Load()}
		cs.Reasons[r.String()] = x
		cs.NotCompressed += x.NotCompressed
		cs.NotCompressedBytes += x.NotCompressedBytes
	}
	cs.ContentLengthTooSmall = cs.Reasons[ReasonTooSmall.String()].NotCompressed
	s.SharedStore = sharedStats{
		Hits:                c.shared[SharedHit].Load(),
		Misses:              c.shared[SharedMiss].Load(),
		Errors:              c.shared[SharedError].Load(),
		VerificationsFailed: c.shared[SharedRejected].Load(),
		Skipped:             c.shared[SharedSkipped].Load(),
		Writes:              c.shared[SharedWritten].Load(),
		ClaimsLost:          c.shared[SharedClaimLost].Load(),
		WritesRefused:       c.shared[SharedRefused].Load(),
		Refreshes:           c.shared[sharedRefreshed].Load(),
		BytesRead:           c.sharedRead.Load(),
		BytesWritten:        c.sharedWritten.Load(),
		BreakerOpened:       c.shared[SharedBreakerOpened].Load(),
		BreakerOpen:         c.breakerOpen.Load(),
		ErrorsByKind:        map[string]int64{},
	}
	for k := storeguard.ErrorNone + 1; k < storeguard.ErrorKindCount; k++ {
		s.SharedStore.ErrorsByKind[k.String()] = c.sharedErrors[k].Load()
	}
	s.LearnedDictionary = learnedStats{
		Trained:       c.learnedCount(learnedTrained),
		Adopted:       c.learnedCount(learnedAdopted),
		RefusedBudget: c.learnedCount(learnedRefused),
		Deltas:        c.learnedCount(learnedDelta),
		BytesSaved:    c.learnedSaved.Load(),

		SkippedPrivate:     c.learnedCount(learnedSkippedPrivate),
		SkippedUnmarked:    c.learnedCount(learnedSkippedUnmarked),
		SkippedCredentials: c.learnedCount(learnedSkippedCredentials),
		SkippedQuery:       c.learnedCount(learnedSkippedQuery),
		SkippedType:        c.learnedCount(learnedSkippedType),
		DeltasStopped:      c.learnedCount(learnedDeltasStopped),
		PublishFailed:      c.learnedCount(learnedPublishFailed),
		Unregistrable:      c.learnedCount(learnedUnregistrable),
		Kept:               c.learnedCount(learnedKept),
		ClaimLost:          c.learnedCount(learnedClaimLost),
		Discarded:          c.learnedCount(learnedDiscarded),
		Superseded:         c.learnedCount(learnedSuperseded),
		Unmeasured:         c.learnedCount(learnedUnmeasured),
	}
	return s
}

func seconds(nanos *atomic.Int64) float64 { return time.Duration(nanos.Load()).Seconds() }

// String returns the counters as a JSON object, for [expvar.Publish]:
// "compressor" and "decompressor" with Envoy's names, totals and
// per-coding and per-reason counts, "shared_store" counting each
// [SharedResult] and its errors by kind (breaker_open is 1 while the breaker is open), and
// "learned_dictionary" counting each learned step (bytes_saved the
// estimate of the "delta" steps). A coding appears once counted, every
// reason always. docs/reference.md ("Observability") shows an example.
func (c *Counters) String() string {
	b, err := json.Marshal(c.stats())
	if err != nil {
		// Only numbers and fixed names go in: this cannot happen.
		panic(err)
	}
	return string(b)
}

// WritePrometheus writes the counters to w in the Prometheus text
// exposition format (version 0.0.4), for a handler to serve with Content-Type
// "text/plain; version=0.0.4". Every metric is a counter named
// squeeze_compressor_..._total or squeeze_decompressor_..._total, after
// Envoy's statistic (total_uncompressed_bytes becomes
// squeeze_compressor_uncompressed_bytes_total), labelled by coding or by
// reason; those of the store of [WithSharedStore] are
// squeeze_shared_store_..._total, besides the gauge
// squeeze_shared_store_breaker_open; those of [WithLearnedDictionary]
// squeeze_learned_dictionary_..._total. The module
// github.com/squeezehttp/squeeze/prometheus registers the same metrics
// with a client_golang registry, keeping client_golang out of this one.
func (c *Counters) WritePrometheus(w io.Writer) error {
	s := c.stats()
	p := promWriter{w: w}
	cs, ds := &s.Compressor, &s.Decompressor
	codings := sortedKeys(cs.Codings)
	p.each("squeeze_compressor_compressed_total", "Responses sent with a content coding.", "coding", codings, func(k string) float64 { return float64(cs.Codings[k].Compressed) })
	p.each("squeeze_compressor_uncompressed_bytes_total", "Plain bytes of the responses sent encoded.", "coding", codings, func(k string) float64 { return float64(cs.Codings[k].TotalUncompressedBytes) })
	p.each("squeeze_compressor_compressed_bytes_total", "Encoded bytes of the responses sent encoded.", "coding", codings, func(k string) float64 { return float64(cs.Codings[k].TotalCompressedBytes) })
	p.each("squeeze_compressor_encode_seconds_total", "Time spent encoding responses.", "coding", codings, func(k string) float64 { return cs.Codings[k].EncodeSeconds })
	p.each("squeeze_compressor_cached_total", "Encoded responses served already encoded: from the cache, or a FileServer's sibling files or store.", "coding", codings, func(k string) float64 { return float64(cs.Codings[k].Cached) })
	p.each("squeeze_compressor_dictionary_total", "Responses encoded with a compression dictionary.", "coding", codings, func(k string) float64 { return float64(cs.Codings[k].Dictionary) })
	reasons := sortedKeys(cs.Reasons)
	p.each("squeeze_compressor_not_compressed_total", "Responses sent unencoded, by reason.", "reason", reasons, func(k string) float64 { return float64(cs.Reasons[k].NotCompressed) })
	p.each("squeeze_compressor_not_compressed_bytes_total", "Bytes of the responses sent unencoded, by reason.", "reason", reasons, func(k string) float64 { return float64(cs.Reasons[k].NotCompressedBytes) })
	p.family("squeeze_compressor_content_length_too_small_total", "Responses sent unencoded because they were below the minimum size.")
	p.sample("", "", float64(cs.ContentLengthTooSmall))
	codings = sortedKeys(ds.Codings)
	p.each("squeeze_decompressor_decompressed_total", "Request bodies decoded.", "coding", codings, func(k string) float64 { return float64(ds.Codings[k].Decompressed) })
	p.each("squeeze_decompressor_uncompressed_bytes_total", "Decoded bytes of the request bodies, as the handler read them.", "coding", codings, func(k string) float64 { return float64(ds.Codings[k].TotalUncompressedBytes) })
	p.each("squeeze_decompressor_compressed_bytes_total", "Encoded bytes of the request bodies, as read from the client.", "coding", codings, func(k string) float64 { return float64(ds.Codings[k].TotalCompressedBytes) })
	p.each("squeeze_decompressor_decode_seconds_total", "Time spent decoding request bodies.", "coding", codings, func(k string) float64 { return ds.Codings[k].DecodeSeconds })
	ss := &s.SharedStore
	p.totals("squeeze_shared_store_", []promTotal{
		{"hits", "Values read from the shared store and verified.", ss.Hits},
		{"misses", "Reads that found no value in the shared store.", ss.Misses},
		{"errors", "Calls to the shared store that failed or timed out.", ss.Errors},
		{"verifications_failed", "Values read from the shared store that failed verification and were dropped.", ss.VerificationsFailed},
		{"skipped", "Calls to the shared store not made: breaker open, values in flight at their budget, or a key whose value failed verification lately.", ss.Skipped},
		{"writes", "Values written to the shared store, claims won included.", ss.Writes},
		{"claims_lost", "Claims that found the key taken by another replica.", ss.ClaimsLost},
		{"writes_refused", "Writes and claims not made because the write budget had no room for them.", ss.WritesRefused},
		{"refreshes", "Keys of shared dictionaries in use kept fresh in the shared store.", ss.Refreshes},
		{"read_bytes", "Bytes of the values read from the shared store.", ss.BytesRead},
		{"written_bytes", "Bytes of the values written to the shared store.", ss.BytesWritten},
		{"breaker_opened", "Times the shared store's breaker opened.", ss.BreakerOpened},
	})
	kinds := sortedKeys(ss.ErrorsByKind)
	p.each("squeeze_shared_store_errors_by_kind_total", "Calls to the shared store that failed, by kind: timeout, refused, too_large, bad_value, other.", "kind", kinds, func(k string) float64 { return float64(ss.ErrorsByKind[k]) })
	p.gauge("squeeze_shared_store_breaker_open", "1 while the shared store's breaker is open, else 0.")
	p.sample("", "", float64(ss.BreakerOpen))
	ls := &s.LearnedDictionary
	p.totals("squeeze_learned_dictionary_", []promTotal{
		{"trained", "Learned dictionaries trained and published.", ls.Trained},
		{"adopted", "Learned dictionaries another replica trained, taken from the shared store.", ls.Adopted},
		{"refused_budget", "Trainings of learned dictionaries refused for their CPU or memory budget.", ls.RefusedBudget},
		{"deltas", "Responses sent as deltas against a learned dictionary.", ls.Deltas},
		{"saved_bytes", "Bytes the deltas against learned dictionaries saved over zstd without them (estimated).", ls.BytesSaved},
		{"skipped_private", "Responses not sampled for a learned dictionary: private, no-store, setting a cookie or Vary: *.", ls.SkippedPrivate},
		{"skipped_unmarked", "Responses not sampled for a learned dictionary: neither public nor given a max-age or s-maxage.", ls.SkippedUnmarked},
		{"skipped_credentials", "Responses not sampled for a learned dictionary: not public, or varying on them, to a request with credentials.", ls.SkippedCredentials},
		{"skipped_query", "Responses not sampled for a learned dictionary: not public, to a URL that may carry a secret (a query string, or a path segment that looks like a token).", ls.SkippedQuery},
		{"skipped_type", "Responses not sampled for a learned dictionary: of a content type not compressed.", ls.SkippedType},
		{"deltas_stopped", "Times a learned route stopped sending deltas that saved less than the floor.", ls.DeltasStopped},
		{"publish_failed", "Writes of a learned dictionary to the shared store that failed, to be tried again.", ls.PublishFailed},
		{"unregistrable", "Responses sent without Use-As-Dictionary because their caching headers keep a browser from storing them.", ls.Unregistrable},
		{"kept", "Rounds of a learned route whose live dictionary saved enough: nothing trained.", ls.Kept},
		{"claim_lost", "Trainings of a learned dictionary left to the replica of the fleet that claimed them.", ls.ClaimLost},
		{"discarded", "Trainings whose dictionary saved nothing on the samples held out, or that gave none: not published.", ls.Discarded},
		{"superseded", "Trainings whose dictionary was not published: a newer or the same one went live meanwhile.", ls.Superseded},
		{"unmeasured", "Rounds of a learned route that could not measure a dictionary.", ls.Unmeasured},
	})
	return p.err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// promWriter writes metric families, keeping the first error.
type promWriter struct {
	w    io.Writer
	name string
	err  error
}

// family starts a counter family with its HELP and TYPE lines.
func (p *promWriter) family(name, help string) {
	p.name = name
	p.printf("# HELP %s %s\n# TYPE %s counter\n", name, escapeHelp(help), name)
}

// promTotal is one counter of a family without labels.
type promTotal struct {
	name, help string
	v          int64
}

// totals writes each of ms as the counter prefix+name+"_total".
func (p *promWriter) totals(prefix string, ms []promTotal) {
	for _, m := range ms {
		p.family(prefix+m.name+"_total", m.help)
		p.sample("", "", float64(m.v))
	}
}

// gauge starts a gauge family with its HELP and TYPE lines.
func (p *promWriter) gauge(name, help string) {
	p.name = name
	p.printf("# HELP %s %s\n# TYPE %s gauge\n", name, escapeHelp(help), name)
}

// each writes a family with one sample per key, labelled label=key.
func (p *promWriter) each(name, help, label string, keys []string, value func(k string) float64) {
	p.family(name, help)
	for _, k := range keys {
		p.sample(label, k, value(k))
	}
}

// sample writes one sample of the current family, with one label unless
// label is "".
func (p *promWriter) sample(label, value string, v float64) {
	if label == "" {
		p.printf("%s %s\n", p.name, strconv.FormatFloat(v, 'g', -1, 64))
		return
	}
	p.printf("%s{%s=\"%s\"} %s\n", p.name, label, escapeLabel(value), strconv.FormatFloat(v, 'g', -1, 64))
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// escapeLabel escapes a label value as the text format requires:
// backslash, double quote and line feed.
var escapeLabel = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace

// escapeHelp escapes HELP text: backslash and line feed.
var escapeHelp = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace
