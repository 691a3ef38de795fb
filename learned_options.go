package squeeze

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Defaults of WithLearnedDictionary; see the LearnedOption of each.
const (
	// defaultLearnedDictionarySize is the size of a learned dictionary
	// when [LearnedDictionarySize] is not given: 256 KiB, which on the
	// held-out pages of five real sites gave 2-30% fewer bytes than 64 KiB
	// (BENCHMARKS.md#learned-dictionaries-served-at-the-defaults).
	defaultLearnedDictionarySize = 256 << 10
	// defaultLearnedSampleBudget is the byte budget of the samples a
	// route holds when [LearnedSampleBudget] is not given: 1 MiB.
	defaultLearnedSampleBudget = 1 << 20
	// defaultLearnedSamples is how many samples a round collects when
	// [LearnedSamples] is not given.
	defaultLearnedSamples = 32
	// defaultLearnedTrainingMemory is the memory a training may allocate
	// when [LearnedTrainingMemory] is not given: 64 MiB.
	defaultLearnedTrainingMemory = 64 << 20
	// defaultLearnedRetrainBelow is the saving below which a route's
	// dictionary is trained again when [LearnedRetrainBelow] is not given.
	defaultLearnedRetrainBelow = 0.2
	// defaultLearnedInterval is the least time between two rounds of a
	// route when [LearnedInterval] is not given.
	defaultLearnedInterval = 10 * time.Minute
	// defaultLearnedKeep is how many dictionaries of a route may live at
	// once when [LearnedKeep] is not given: the newest and the one before.
	defaultLearnedKeep = 2
	// defaultLearnedPath is the path under which learned dictionaries are
	// served when [LearnedPath] is not given.
	defaultLearnedPath = "/_squeeze/dictionary/"
)

// learnedConfig is one WithLearnedDictionary.
type learnedConfig struct {
	pattern     string
	dictSize    int
	budget      int64
	samples     int
	trainMemory int64
	retrain     float64
	interval    time.Duration
	keep        int
	path        string
	// credentials are the canonical names of the request header fields
	// that carry credentials besides Cookie and Authorization
	// (LearnedCredentialHeaders).
	credentials []string
}

// LearnedOption configures one [WithLearnedDictionary] route.
type LearnedOption func(*learnedConfig) error

// LearnedDictionarySize sets the size of the dictionaries trained for the
// route, from 1 KiB to 1 MiB; the default is 256 KiB. A larger dictionary
// holds more of what responses share, and costs each client a larger
// download once, and the server, for dcb, tables of about four bytes per
// dictionary byte.
func LearnedDictionarySize(n int) LearnedOption {
	return func(c *learnedConfig) error {
		if n < 1<<10 || n > 1<<20 {
			return fmt.Errorf("LearnedDictionarySize(%d): size must be from 1 KiB to 1 MiB", n)
		}
		c.dictSize = n
		return nil
	}
}

// LearnedSampleBudget sets the byte budget of the response bodies the
// route holds as samples, those being collected included; a body longer
// than a fifth of it is not sampled, so that a round's five fit. The default is
// 1 MiB; n must be at least 64 KiB.
func LearnedSampleBudget(n int64) LearnedOption {
	return func(c *learnedConfig) error {
		if n < 64<<10 {
			return fmt.Errorf("LearnedSampleBudget(%d): budget must be at least 64 KiB", n)
		}
		c.budget = n
		return nil
	}
}

// LearnedSamples sets how many sampled responses make a round: once the
// route holds that many (or its sample budget is full), squeeze measures
// the live dictionary on them, or trains one. At least 5: a dictionary is
// trained on at least 4 and measured on those held out, every fourth. The
// default is 32.
func LearnedSamples(n int) LearnedOption {
	return func(c *learnedConfig) error {
		if n < learnedRoundSamples {
			return fmt.Errorf("LearnedSamples(%d): a round needs at least %d samples, %d to train on and one to measure the dictionary on",
				n, learnedRoundSamples, learnedMinSamples)
		}
		c.samples = n
		return nil
	}
}

// LearnedTrainingMemory sets the most a training may allocate: the
// samples it trains on are the newest whose training fits (the samples,
// about seven bytes per dictionary byte, a table of up to 8 MiB that
// shrinks to fit, and 10 MiB or more for the encoders that measure it;
// see docs/reference.md#learned-dictionaries). The default is
// 64 MiB; n must be at least 16 MiB.
func LearnedTrainingMemory(n int64) LearnedOption {
	return func(c *learnedConfig) error {
		if n < 16<<20 {
			return fmt.Errorf("LearnedTrainingMemory(%d): budget must be at least 16 MiB", n)
		}
		c.trainMemory = n
		return nil
	}
}

// LearnedRetrainBelow sets the saving below which the route's dictionary
// is trained again: the share of bytes a delta saves over the same zstd
// level without a dictionary, measured on the responses of each round. It
// is from 0 (never retrain) to below 1; the default is
// 0.2.
func LearnedRetrainBelow(saving float64) LearnedOption {
	return func(c *learnedConfig) error {
		if !(saving >= 0 && saving < 1) {
			return fmt.Errorf("LearnedRetrainBelow(%v): saving must be from 0 to below 1", saving)
		}
		c.retrain = saving
		return nil
	}
}

// LearnedInterval sets the least time between two rounds of the route:
// after one, no response is sampled until it has passed. (With a
// SharedStore a replica looks for the fleet's newer dictionary at each
// round and, within a request, at most once a second, so that every
// replica links and serves a dictionary one published from its next
// request.) The default is 10 minutes; d must not be
// negative.
func LearnedInterval(d time.Duration) LearnedOption {
	return func(c *learnedConfig) error {
		if d < 0 {
			return fmt.Errorf("LearnedInterval(%v): interval must not be negative", d)
		}
		c.interval = d
		return nil
	}
}

// LearnedKeep sets how many dictionaries of the route live at once: the
// newest, and those it replaced that clients announced within a day (the
// dictionaries' max-age). At least 1; the default is 2.
func LearnedKeep(n int) LearnedOption {
	return func(c *learnedConfig) error {
		if n < 1 {
			return fmt.Errorf("LearnedKeep(%d): at least one dictionary must live", n)
		}
		c.keep = n
		return nil
	}
}

// LearnedPath sets the path under which the route's dictionaries are
// served, each at the path and the base64url of its SHA-256. It must
// start and end with "/"; the default is "/_squeeze/dictionary/".
func LearnedPath(prefix string) LearnedOption {
	return func(c *learnedConfig) error {
		if err := checkDictionaryPath(prefix); err != nil || !strings.HasSuffix(prefix, "/") {
			return fmt.Errorf("LearnedPath(%q): the path must start and end with / and need no escaping", prefix)
		}
		c.path = prefix
		return nil
	}
}

// LearnedCredentialHeaders names request header fields that carry
// credentials, besides Cookie, Authorization and Proxy-Authorization,
// which always count: X-Api-Key, say. A response to a request carrying one
// is sampled only if it says Cache-Control: public (see
// [WithLearnedDictionary]). Names are matched under any case; each must
// be a valid field name. Calls add up.
func LearnedCredentialHeaders(names ...string) LearnedOption {
	return func(c *learnedConfig) error {
		for _, n := range names {
			if !isToken(n) {
				return fmt.Errorf("LearnedCredentialHeaders(%q): %q is not a header field name", names, n)
			}
			k := http.CanonicalHeaderKey(n)
			if !slices.Contains(c.credentials, k) {
				c.credentials = append(c.credentials, k)
			}
		}
		return nil
	}
}

// WithLearnedDictionary turns on dictionaries learned from traffic for the
// paths matching pattern (a pattern as in [WithDictionaryMatch]).
//
// A learned dictionary is published to everyone: any client may fetch it,
// and every page links it. So squeeze samples only the responses to GET
// requests on the route (200, of a type [WithContentTypes] allows, not
// encoded by the handler) that say they may be shared with anyone:
// Cache-Control: public, or a max-age or s-maxage (above zero) answering
// a request with no query string and no credentials of any kind (Cookie,
// Authorization, Proxy-Authorization, and the fields of
// [LearnedCredentialHeaders]). Never one marked private or no-store, one
// that sets a cookie or varies on credentials its request carried, one
// that says nothing of sharing, nor one reached by a URL with a query
// string or a path segment like a token (a share link is a secret)
// unless public. Each response refused is counted by reason
// ("skipped_private" and after) and the first of each reason on a route
// is logged, with how far the route is from its next round: a route
// whose visitors carry a session cookie learns nothing until its
// responses say public. Once it holds enough, it trains a dictionary in
// the background, one training at a time per Middleware, within the
// budgets the options set, and serves it at its own URL (see
// [LearnedPath]) with Use-As-Dictionary naming pattern and an id, a
// strong ETag and a day's max-age; every text/html response squeeze
// handles links it (Link: <url>; rel="compression-dictionary"), so a
// browser fetches it when idle. Later responses on the route go to clients
// holding it as [DCZ] or [DCB] deltas, whichever its samples show smaller.
//
// Every round of samples after that measures what the dictionary saves;
// below [LearnedRetrainBelow] it is trained again, and the one it replaces
// stays served while clients announce it ([LearnedKeep]). With
// [WithSharedStore], one replica trains under a claim and publishes the
// dictionary by hash; the others take it from the store and verify it, so
// every replica serves the same bytes at the same URL with the same id.
//
// As with any compression, do not use it on responses that mix secrets
// with input an attacker chooses. Each pattern may be given once.
func WithLearnedDictionary(pattern string, opts ...LearnedOption) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithLearnedDictionary(%q)", pattern)
		if _, err := parseMatchPattern(call, pattern); err != nil {
			return err
		}
		lc := learnedConfig{
			pattern:     pattern,
			dictSize:    defaultLearnedDictionarySize,
			budget:      defaultLearnedSampleBudget,
			samples:     defaultLearnedSamples,
			trainMemory: defaultLearnedTrainingMemory,
			retrain:     defaultLearnedRetrainBelow,
			interval:    defaultLearnedInterval,
			keep:        defaultLearnedKeep,
			path:        defaultLearnedPath,
		}
		for i, o := range opts {
			if o == nil {
				return fmt.Errorf("squeeze: %s: option %d of %d is nil", call, i+1, len(opts))
			}
			if err := o(&lc); err != nil {
				return fmt.Errorf("squeeze: %s: %w", call, err)
			}
		}
		for _, l := range c.learned {
			if l.pattern == pattern {
				return fmt.Errorf("squeeze: %s: pattern %q is learned already", call, pattern)
			}
		}
		c.learned = append(c.learned, lc)
		return nil
	}
}
