// Package squeezecaddy is squeeze as a Caddy module: the HTTP handler
// http.handlers.squeeze and its Caddyfile directive, squeeze. It compresses
// responses with zstd, br or gzip as Caddy's encode does, and sends RFC 9842
// dictionary deltas (dcz, dcb), which encode cannot: a browser that holds
// the previous version of a script gets the next one as a delta against it.
// It only translates: the handler is a [squeeze.Middleware] mounted through
// [squeeze.Middleware.Handler] in front of the rest of the route.
//
// Build Caddy with it (xcaddy build --with github.com/squeezehttp/squeeze/caddy,
// or a main package importing caddy's cmd, its standard modules and this
// package, as cmd/caddy-squeeze does) and write, in a site block:
//
//	squeeze {
//		dictionary /js/app.*.js
//	}
//
// The directive is ordered after encode, inside it, so the two can share a
// route: encode steps aside for a response squeeze has encoded, as it does
// for any response that already has a Content-Encoding, and compresses
// what squeeze left plain.
package squeezecaddy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/redisstore"
)

// Caddy finds its modules through registration at init, the convention
// every Caddy module follows (caddy.RegisterModule): the one package-level
// side effect squeeze's code has, and only in this module, which exists to
// be imported by a Caddy build.
func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is the http.handlers.squeeze module. Its zero value has squeeze's
// defaults: zstd, br and gzip, bodies of 1 KiB and more of the types in
// [squeeze.DefaultContentTypes], no dictionaries.
type Handler struct {
	// Prefer lists the codings to offer, most preferred first: zstd, br,
	// gzip, deflate (and dcz, dcb to order the dictionary codings). Empty:
	// zstd, br, gzip.
	Prefer []string `json:"prefer,omitempty"`
	// Levels sets a coding's level, on its own scale (zstd 1 to 22, br 0 to
	// 11, gzip and deflate 1 to 9).
	Levels map[string]int `json:"levels,omitempty"`
	// MinLength is the smallest body compressed, in bytes; 0 means
	// squeeze's default (1024).
	MinLength int `json:"minimum_length,omitempty"`
	// Types are the media types to compress, with patterns such as text/*
	// and */*+json; empty means squeeze.DefaultContentTypes.
	Types []string `json:"types,omitempty"`
	// Dictionaries are RFC 9842 match patterns ("/js/app.*.js"): a
	// response to a matching path becomes a dictionary for the later ones,
	// which a browser holding it gets as dcz or dcb deltas.
	Dictionaries []string `json:"dictionaries,omitempty"`
	// MaxRequestBody caps each decoded request body, in bytes; 0 means
	// squeeze's default (10 MiB).
	MaxRequestBody int64 `json:"max_request_body,omitempty"`
	// CacheSize, when positive, keeps encoded bodies in a cache of at most
	// this many bytes, re-encoded at the best level once hit a few times.
	CacheSize int64 `json:"cache_size,omitempty"`
	// TrustedETags, with a cache, keeps and serves bodies longer than the
	// buffer (streams) by their strong ETags, as a shared cache would, so
	// that a hit costs a lookup rather than an encode. Only for routes
	// whose handlers change a strong ETag whenever the bytes change, as
	// file_server's (from the file's size and modification time) do; see
	// squeeze.CacheTrustedETags for the risk.
	TrustedETags bool `json:"trusted_etags,omitempty"`
	// LengthHiding, when positive, pads every encoded response with 1 to
	// this many bytes against BREACH-style length attacks (1 to 4096);
	// see squeeze.WithLengthHiding.
	LengthHiding int `json:"length_hiding,omitempty"`
	// Learned are the routes whose responses squeeze learns a dictionary
	// from; see squeeze.WithLearnedDictionary.
	Learned []Learned `json:"learned,omitempty"`
	// Metrics exports squeeze's counters (squeeze.Counters) in Caddy's
	// metrics, as squeeze_* families; the squeeze handlers of one config
	// share them.
	Metrics bool `json:"metrics,omitempty"`
	// Redis, when set, shares dictionaries and best-level encodings with
	// the other replicas through Redis or Valkey.
	Redis *Redis `json:"redis,omitempty"`

	m        *squeeze.Middleware
	registry *prometheus.Registry // holding the counters, with Metrics
	serve    http.Handler         // m's handler in front of serveNext, built once
	cache    *squeeze.Cache
	client   *redis.Client
}

// Learned is a route with a learned dictionary: squeeze samples its public
// responses, trains a dictionary on them and sends later responses as
// deltas against it. Zero fields take squeeze's defaults.
type Learned struct {
	// Pattern is the route's RFC 9842 match pattern ("/api/*").
	Pattern string `json:"pattern"`
	// DictionarySize is the size of the dictionaries trained, in bytes
	// (1 KiB to 1 MiB; squeeze.LearnedDictionarySize).
	DictionarySize int `json:"dictionary_size,omitempty"`
	// Samples is how many sampled responses make a round
	// (squeeze.LearnedSamples).
	Samples int `json:"samples,omitempty"`
	// SampleBudget caps the bytes of the samples held, in bytes
	// (squeeze.LearnedSampleBudget).
	SampleBudget int64 `json:"sample_budget,omitempty"`
	// TrainingMemory caps what a training allocates, in bytes
	// (squeeze.LearnedTrainingMemory).
	TrainingMemory int64 `json:"training_memory,omitempty"`
	// Interval is the least time between two rounds
	// (squeeze.LearnedInterval).
	Interval caddy.Duration `json:"interval,omitempty"`
	// Path is where the route's dictionaries are served, starting and
	// ending with / (squeeze.LearnedPath).
	Path string `json:"path,omitempty"`
	// CredentialHeaders names request header fields that carry
	// credentials, such as X-Api-Key: a response to a request with one is
	// sampled only if it says Cache-Control public
	// (squeeze.LearnedCredentialHeaders).
	CredentialHeaders []string `json:"credential_headers,omitempty"`
}

// options returns the squeeze options of l.
func (l *Learned) options() []squeeze.LearnedOption {
	var opts []squeeze.LearnedOption
	if l.DictionarySize != 0 {
		opts = append(opts, squeeze.LearnedDictionarySize(l.DictionarySize))
	}
	if l.Samples != 0 {
		opts = append(opts, squeeze.LearnedSamples(l.Samples))
	}
	if l.SampleBudget != 0 {
		opts = append(opts, squeeze.LearnedSampleBudget(l.SampleBudget))
	}
	if l.TrainingMemory != 0 {
		opts = append(opts, squeeze.LearnedTrainingMemory(l.TrainingMemory))
	}
	if l.Interval != 0 {
		opts = append(opts, squeeze.LearnedInterval(time.Duration(l.Interval)))
	}
	if l.Path != "" {
		opts = append(opts, squeeze.LearnedPath(l.Path))
	}
	if len(l.CredentialHeaders) > 0 {
		opts = append(opts, squeeze.LearnedCredentialHeaders(l.CredentialHeaders...))
	}
	return opts
}

// Redis is the shared store of a [Handler]: a Redis or Valkey server.
type Redis struct {
	// Address is the server's host:port, or a redis:// or rediss:// URL
	// (rediss: TLS), which may carry an ACL user, a password and a
	// database number: redis://user:password@host:6379/0.
	Address string `json:"address"`
	// Prefix starts every key squeeze writes; empty means redisstore's.
	Prefix string `json:"prefix,omitempty"`
}

// options returns the go-redis options of r's address. A deadline ends a
// command (ContextTimeoutEnabled), and a reply that declares more than
// squeeze reads fails before go-redis allocates it
// (redisstore.LimitReplies): the store is a peer, not trusted.
func (r *Redis) options() (*redis.Options, error) {
	var opt *redis.Options
	if strings.Contains(r.Address, "://") {
		var err error
		if opt, err = redis.ParseURL(r.Address); err != nil {
			var ue *url.Error // it quotes the URL, password and all
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("squeeze: store redis %s: %w", redactURL(r.Address), err)
		}
	} else {
		if _, _, err := net.SplitHostPort(r.Address); err != nil {
			return nil, fmt.Errorf("squeeze: store redis %q: want host:port or a redis:// or rediss:// URL", r.Address)
		}
		opt = &redis.Options{Addr: r.Address}
	}
	opt.ContextTimeoutEnabled = true
	opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 0)
	return opt, nil
}

// redactURL returns a Redis URL with its password, if any, replaced, for
// an error message that goes to Caddy's log.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.squeeze",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Validate checks what squeeze itself does not see: the sizes and the
// Redis address. Provision has built the Middleware, which checked the
// rest.
func (h *Handler) Validate() error {
	switch {
	case h.MinLength < 0:
		return fmt.Errorf("squeeze: minimum_length %d is negative", h.MinLength)
	case h.MaxRequestBody < 0:
		return fmt.Errorf("squeeze: max_request_body %d is negative", h.MaxRequestBody)
	case h.CacheSize < 0:
		return fmt.Errorf("squeeze: cache %d is negative", h.CacheSize)
	case h.TrustedETags && h.CacheSize == 0:
		return errors.New("squeeze: trusted_etags needs a cache: without one there is nothing to serve by ETag")
	case h.Redis != nil && h.Redis.Address == "":
		return errors.New("squeeze: store redis needs the server's address")
	}
	return nil
}

// Provision builds the [squeeze.Middleware], its cache and its Redis
// client; an error names the option squeeze refused.
func (h *Handler) Provision(ctx caddy.Context) error {
	if err := h.Validate(); err != nil {
		return err
	}
	var opts []squeeze.Option
	if len(h.Prefer) > 0 {
		opts = append(opts, squeeze.WithEncodings(h.Prefer...))
	}
	for _, coding := range slices.Sorted(maps.Keys(h.Levels)) { // the same error every time
		opts = append(opts, squeeze.WithLevel(coding, h.Levels[coding]))
	}
	if h.MinLength > 0 {
		opts = append(opts, squeeze.WithMinSize(h.MinLength))
	}
	if len(h.Types) > 0 {
		opts = append(opts, squeeze.WithContentTypes(h.Types...))
	}
	if len(h.Dictionaries) > 0 {
		opts = append(opts, squeeze.WithDictionaryMatch(h.Dictionaries...))
	}
	if h.MaxRequestBody > 0 {
		opts = append(opts, squeeze.WithMaxDecompressedSize(h.MaxRequestBody))
	}
	if h.CacheSize > 0 {
		cache, err := squeeze.NewCache(h.CacheSize)
		if err != nil {
			return fmt.Errorf("squeeze: cache: %w", err)
		}
		h.cache = cache
		var cacheOpts []squeeze.CacheOption
		if h.TrustedETags {
			cacheOpts = append(cacheOpts, squeeze.CacheTrustedETags())
		}
		opts = append(opts, squeeze.WithCache(cache, cacheOpts...))
	}
	if h.LengthHiding != 0 {
		opts = append(opts, squeeze.WithLengthHiding(h.LengthHiding))
	}
	for i := range h.Learned {
		opts = append(opts, squeeze.WithLearnedDictionary(h.Learned[i].Pattern, h.Learned[i].options()...))
	}
	if h.Metrics {
		reg := ctx.GetMetricsRegistry()
		if reg == nil {
			return errors.Join(errors.New("squeeze: metrics: Caddy gave no metrics registry"), h.Cleanup())
		}
		counters, err := countersFor(reg)
		if err != nil {
			return errors.Join(err, h.Cleanup())
		}
		h.registry = reg
		opts = append(opts, squeeze.WithObserver(counters.Observer()))
	}
	if h.Redis != nil {
		ro, err := h.Redis.options()
		if err != nil {
			return errors.Join(err, h.Cleanup())
		}
		h.client = redis.NewClient(ro)
		var storeOpts []redisstore.Option
		if h.Redis.Prefix != "" {
			storeOpts = append(storeOpts, redisstore.WithPrefix(h.Redis.Prefix))
		}
		store, err := redisstore.New(h.client, storeOpts...)
		if err != nil {
			return errors.Join(fmt.Errorf("squeeze: store redis: %w", err), h.Cleanup())
		}
		opts = append(opts, squeeze.WithSharedStore(store))
	}
	m, err := squeeze.New(opts...)
	if err != nil {
		return errors.Join(err, h.Cleanup())
	}
	h.m = m
	h.serve = m.Handler(http.HandlerFunc(serveNext))
	return nil
}

// Cleanup closes the Middleware (its background work stopped, its calls to
// Redis cancelled), then the cache and the Redis client, and releases the
// metrics, when the config that provisioned h is unloaded.
func (h *Handler) Cleanup() error {
	var errs []error
	if h.m != nil {
		errs = append(errs, h.m.Close())
	}
	if h.registry != nil {
		errs = append(errs, releaseCounters(h.registry))
		h.registry = nil
	}
	if h.cache != nil {
		errs = append(errs, h.cache.Close())
		h.cache = nil
	}
	if h.client != nil {
		errs = append(errs, h.client.Close())
		h.client = nil
	}
	return errors.Join(errs...)
}

// ServeHTTP runs the rest of the route behind squeeze and returns its
// error for Caddy's error handling. A response Caddy writes for an error
// (handle_errors) is written after squeeze has finished: put squeeze in the
// handle_errors routes too to compress it.
//
// The squeeze handler is built once, at Provision; the rest of the route,
// which Caddy builds for each request, reaches it through the request's
// Caddy variables (a pooled call, set and restored around the request, so
// that nested squeeze handlers each find their own), or, for a request
// that did not come through Caddy's server and has none, its context.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	c := callPool.Get().(*call)
	c.next = next
	vars, ok := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	if ok {
		prev, had := vars[callVar]
		vars[callVar] = c
		defer func() {
			if had {
				vars[callVar] = prev
			} else {
				delete(vars, callVar)
			}
		}()
	} else {
		r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
	}
	h.serve.ServeHTTP(w, r)
	err := c.err
	*c = call{}
	callPool.Put(c)
	return err
}

// call is one request's way from the squeeze handler built at Provision to
// the rest of its route: the next handler, and the error it returned.
type call struct {
	next caddyhttp.Handler
	err  error
}

// callPool holds calls between requests, so that a request allocates none.
var callPool = sync.Pool{New: func() any { return new(call) }}

// callVar is the Caddy variable that holds a request's call; callKey the
// context key that does for a request without Caddy's variables.
const callVar = "squeeze.call"

type callKey struct{}

// serveNext is the handler squeeze wraps: it runs the rest of the route of
// the request's call and keeps its error.
func serveNext(w http.ResponseWriter, r *http.Request) {
	var c *call
	if vars, ok := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any); ok {
		c, _ = vars[callVar].(*call)
	}
	if c == nil {
		c, _ = r.Context().Value(callKey{}).(*call)
	}
	if c == nil || c.next == nil {
		// Only ServeHTTP calls the squeeze handler, always with a call.
		panic("squeeze: the Caddy handler ran without its route")
	}
	c.err = c.next.ServeHTTP(w, r)
}
