package squeeze

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/internal/lifetime"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/internal/storeguard"
	"github.com/squeezehttp/squeeze/writers"
)

// Middleware compresses responses and decodes request bodies. It is safe for
// concurrent use; build it once with [New] and share it. The zero Middleware,
// and a nil one, behave as one from New with no options.
type Middleware struct {
	offers []offer
	// isolating are the offers whose codings can isolate a secret, for
	// a response that marks one (secret.go).
	isolating []offer
	minSize   int
	buffers   *pool.Buffers
	types     []typePattern
	decoding  *decode.Decoders // nil: request decoding off
	// reportDecoded sends each decoded request body to Observer.RequestBody;
	// nil without an observer.
	reportDecoded func(decode.Stats)
	// dicts is nil unless dictionaries are configured (dictionary.go).
	dicts   *dictStore
	observe func(ResponseInfo) // Observer.Response; nil when unset
	// cache, if any, keeps encoded bodies (cache.go).
	cache *Cache
	// trustETags serves streams from the cache by their ETags
	// (CacheTrustedETags).
	trustETags bool
	// slots pools the per-response state (slot.go).
	slots sync.Pool
	// shared guards the store of WithSharedStore, nil without one (shared.go).
	shared *storeguard.Guard
	// hiding is WithLengthHiding, nil when off (lengthhiding.go).
	hiding *lengthHiding
	// life owns the background work; Close ends it (internal/lifetime).
	life lifetime.Lifetime
}

// New returns a [Middleware] configured by opts, or an error naming the
// first invalid option.
func New(opts ...Option) (*Middleware, error) {
	c := config{
		encodings:           DefaultEncodings(),
		levels:              map[string]int{},
		minSize:             defaultMinSize,
		bufferSize:          defaultBufferSize,
		contentTypes:        DefaultContentTypes(),
		maxDecompressedSize: defaultMaxDecompressedSize,
		dictCodings:         []string{DCZ, DCB},
		dictStoreSize:       defaultDictionaryStoreSize,
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("squeeze: New: option %d of %d is nil", i+1, len(opts))
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	m := &Middleware{
		minSize: c.minSize,
		types:   compileTypesExcept(c.contentTypes, c.exceptTypes),
		observe: c.observer.Response,
		cache:   c.cache,
	}
	m.shared = newShared(&c, c.observer.SharedStore, &m.life)
	if err := checkWriteBudget(&c); err != nil {
		return nil, err
	}
	m.trustETags = c.trustETags
	for _, coding := range writers.Codings() { // a fixed order: the same error every time
		if level, ok := c.levels[coding]; ok && !slices.Contains(c.encodings, coding) {
			return nil, notOfferedError(coding, level, c.encodings)
		}
	}
	if c.lengthHiding > 0 {
		if slices.Contains(c.encodings, Deflate) {
			return nil, lengthHidingError(c.lengthHiding, Deflate)
		}
		m.hiding = newLengthHiding(c.lengthHiding)
	}
	for _, coding := range c.encodings {
		encoders, err := pool.NewEncoders(coding, levelOf(&c, coding))
		if err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
		m.offers = append(m.offers, offer{coding: coding, encoders: encoders})
	}
	m.isolating = isolatingOffers(m.offers)
	var err error
	if m.dicts, err = newDictStore(&c, levelOf(&c, Zstd), levelOf(&c, Brotli)); err != nil {
		return nil, err
	}
	if m.dicts != nil {
		m.dicts.learner.offers = m.offers
		m.dicts.learner.life = &m.life
	}
	if m.dicts != nil && m.shared != nil {
		m.dicts.shared = m.shared
		m.dicts.live = storeguard.NewRecentKeys(liveURLBytes, liveURLFor)
	}
	bufferSize := max(c.bufferSize, c.minSize)
	if m.buffers, err = pool.NewBuffers(bufferSize); err != nil {
		return nil, fmt.Errorf("squeeze: %w", err)
	}
	if m.decoding, m.reportDecoded, err = newDecoding(&c); err != nil {
		return nil, err
	}
	return m, nil
}

// levelOf returns the level configured for coding, or its default.
func levelOf(c *config, coding string) int {
	if level, ok := c.levels[coding]; ok {
		return level
	}
	r, _ := writers.Levels(coding)
	return r.Default
}

// MustNew is like [New] but panics if an option is invalid. It suits
// package-level variables.
func MustNew(opts ...Option) *Middleware {
	m, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return m
}

var defaultMiddleware = sync.OnceValue(func() *Middleware { return MustNew() })

// Handler returns next wrapped by a [Middleware] with the default options.
// It suits chi's r.Use and any func([http.Handler]) [http.Handler] chain.
func Handler(next http.Handler) http.Handler { return defaultMiddleware().Handler(next) }

// Handler returns next wrapped by the middleware: request bodies sent with
// a Content-Encoding are decoded, and responses are compressed as the
// client's Accept-Encoding and the response allow. The zero Middleware is
// usable and behaves as one from New with no options, and so does a nil
// one, so that an adapter taking a *Middleware may take nil for the
// defaults, as [Handler] has them.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if m == nil || m.buffers == nil {
		m = defaultMiddleware()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rh := readRequestHeader(r.Header)
		r, release, ok := m.decodeRequest(w, r, rh.contentEncoding)
		if !ok {
			return
		}
		if release != nil {
			defer release()
		}
		if isUpgrade(r, &rh) {
			next.ServeHTTP(w, r)
			return
		}
		if len(rh.ranges) > 0 && ifRangeNeverHolds(r.Header["If-Range"]) {
			// The whole body, which squeeze may encode, is the answer.
			r, rh.ranges = withoutRange(r), nil
		}
		s, hw := m.open(w, r, &rh)
		r = withPlainTags(r, rh.ifNoneMatch, rh.ifMatch, s.rw.coding(), m.offers)
		completed := false
		defer func() { m.close(s, hw, completed) }()
		if sd := m.dicts.standaloneFor(r); sd != nil {
			sd.ServeHTTP(hw, r) // a WithDictionary path: squeeze serves it
		} else {
			next.ServeHTTP(hw, r)
		}
		completed = true
	})
}

// Close stops m's background work (upgrades, learned rounds, store calls)
// and waits for it; call it after [http.Server.Shutdown]. m still serves.
func (m *Middleware) Close() error {
	if m == nil {
		return nil
	}
	m.life.Close()
	if m.shared != nil {
		m.shared.Close() // the guard's own goroutine, once m's work is over
	}
	return nil
}

// requestHeader holds the request header fields the middleware reads on
// every request.
type requestHeader struct {
	contentEncoding, upgrade, connection, ranges, acceptEncoding, ifNoneMatch, ifMatch []string
}

// smallHeader is the most keys a request header may have for
// readRequestHeader to walk it rather than look its fields up: a Go
// client's request has three or four, a browser's a dozen or more.
const smallHeader = 8

// readRequestHeader reads the fields the middleware needs from a request's
// header: in one pass over a small map, where seven look-ups, each hashing
// its key, would cost more; by look-up otherwise. Keys are canonical, as
// net/http makes them.
func readRequestHeader(h http.Header) requestHeader {
	var rh requestHeader
	if len(h) > smallHeader {
		rh.contentEncoding, rh.upgrade, rh.connection = h["Content-Encoding"], h["Upgrade"], h["Connection"]
		rh.ranges, rh.acceptEncoding = h["Range"], h["Accept-Encoding"]
		rh.ifNoneMatch, rh.ifMatch = h["If-None-Match"], h["If-Match"]
		return rh
	}
	for k, v := range h {
		switch k {
		case "Content-Encoding":
			rh.contentEncoding = v
		case "Upgrade":
			rh.upgrade = v
		case "Connection":
			rh.connection = v
		case "Range":
			rh.ranges = v
		case "Accept-Encoding":
			rh.acceptEncoding = v
		case "If-None-Match":
			rh.ifNoneMatch = v
		case "If-Match":
			rh.ifMatch = v
		}
	}
	return rh
}

// isUpgrade reports whether r asks to switch protocols (WebSocket, h2c) or
// to tunnel: the response stream then is not an HTTP body at all.
func isUpgrade(r *http.Request, rh *requestHeader) bool {
	if r.Method == http.MethodConnect {
		return true
	}
	if len(rh.upgrade) == 0 {
		return false
	}
	return headerHasToken(rh.connection, "upgrade")
}
