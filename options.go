package squeeze

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/squeezehttp/squeeze/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Content-coding names, as they appear in Accept-Encoding and
// Content-Encoding.
const (
	Zstd    = writers.Zstd
	Brotli  = writers.Brotli
	Gzip    = writers.Gzip
	Deflate = writers.Deflate
)

// Defaults for the options of the same names.
const (
	DefaultMinSize             = 1024
	DefaultBufferSize          = 32 << 10
	DefaultMaxDecompressedSize = 10 << 20
)

// DefaultEncodings returns the codings offered when WithEncodings is not
// given, in order of preference: zstd, br, gzip. deflate is left out because
// some clients have historically disagreed on whether it is zlib-wrapped.
func DefaultEncodings() []string { return []string{Zstd, Brotli, Gzip} }

// DefaultContentTypes returns the media-type patterns compressed when
// WithContentTypes is not given: text, JSON, JavaScript, XML, SVG, wasm,
// uncompressed font formats and the +json and +xml structured suffixes.
// Images, audio, video, archives and woff/woff2 (compressed inside) are not
// listed, so they pass through.
func DefaultContentTypes() []string {
	return []string{
		"text/*",
		"application/json", "application/x-ndjson", "*/*+json",
		"application/javascript", "application/x-javascript", "application/ecmascript",
		"application/xml", "*/*+xml", // *+xml covers image/svg+xml and application/xhtml+xml
		"application/wasm",
		"application/yaml", "application/x-yaml", "application/toml",
		"font/ttf", "font/otf", "application/x-font-ttf", "application/x-font-otf",
		"application/vnd.ms-fontobject",
	}
}

// Option configures a Middleware. Options are checked by New.
type Option func(*config) error

type config struct {
	encodings           []string
	levels              map[string]int
	minSize             int
	bufferSize          int
	contentTypes        []string
	maxDecompressedSize int64
}

// WithEncodings sets the codings offered to clients, most preferred first.
// Each must be one of Zstd, Brotli, Gzip or Deflate (case-insensitive,
// "x-gzip" meaning gzip); an empty list or a repeated coding is an error.
func WithEncodings(codings ...string) Option {
	return func(c *config) error {
		list, err := canonicalList("WithEncodings", codings, func(name string) (string, error) {
			coding, ok := writers.Canonical(name)
			if !ok {
				return "", fmt.Errorf("squeeze: WithEncodings: unknown coding %q (want zstd, br, gzip or deflate)", name)
			}
			return coding, nil
		})
		if err != nil {
			return err
		}
		c.encodings = list
		return nil
	}
}

// WithLevel sets the compression level of coding on the codec's own scale:
// gzip and deflate 1 to 9 (and -2 for Huffman only, -3 for stateless), zstd 1
// to 22, br 0 to 11. A level out of range is an error from New.
func WithLevel(coding string, level int) Option {
	return func(c *config) error {
		canonical, ok := writers.Canonical(coding)
		if !ok {
			return fmt.Errorf("squeeze: WithLevel: unknown coding %q", coding)
		}
		if err := writers.ValidateLevel(canonical, level); err != nil {
			return fmt.Errorf("squeeze: WithLevel: %w", err)
		}
		c.levels[canonical] = level
		return nil
	}
}

// WithMinSize sets the smallest body, in bytes, that is compressed. Smaller
// bodies go out unchanged, since the coding's framing would outweigh the
// saving. 0 compresses every eligible body; a negative size is an error.
// The default is DefaultMinSize.
func WithMinSize(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("squeeze: WithMinSize: size must not be negative, got %d", n)
		}
		c.minSize = n
		return nil
	}
}

// WithBufferSize sets how many bytes of a body are held back while deciding
// whether to compress it. A body that ends within the buffer is sent in one
// piece with a Content-Length. The size is raised to the minimum size if it
// is smaller. The default is DefaultBufferSize; it must be positive and at
// most 16 MiB.
func WithBufferSize(n int) Option {
	return func(c *config) error {
		if n <= 0 || n > 16<<20 {
			return fmt.Errorf("squeeze: WithBufferSize: size must be between 1 and 16 MiB, got %d", n)
		}
		c.bufferSize = n
		return nil
	}
}

// WithContentTypes replaces the list of media types that are compressed.
// A pattern is "type/subtype", "type/*", or "type/*+suffix" for a structured
// suffix such as "application/*+json"; "*" may stand for the type. Matching
// ignores case and media-type parameters.
func WithContentTypes(patterns ...string) Option {
	return func(c *config) error {
		list, err := canonicalList("WithContentTypes", patterns, parseTypePattern)
		if err != nil {
			return err
		}
		c.contentTypes = list
		return nil
	}
}

// canonicalList maps items to their canonical forms, refusing an empty list
// and an item that repeats another once canonical ("GZIP" after "gzip").
func canonicalList(option string, items []string, canonical func(string) (string, error)) ([]string, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("squeeze: %s needs at least one value", option)
	}
	list := make([]string, 0, len(items))
	for _, item := range items {
		c, err := canonical(item)
		if err != nil {
			return nil, err
		}
		if slices.Contains(list, c) {
			return nil, fmt.Errorf("squeeze: %s: %q is listed twice", option, item)
		}
		list = append(list, c)
	}
	return list, nil
}

// WithMaxDecompressedSize caps the decoded size of a request body sent with
// a Content-Encoding. Reading past the cap fails with *http.MaxBytesError,
// as http.MaxBytesReader would. The default is DefaultMaxDecompressedSize
// (10 MiB); n must be positive.
func WithMaxDecompressedSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("squeeze: WithMaxDecompressedSize: size must be positive, got %d", n)
		}
		c.maxDecompressedSize = n
		return nil
	}
}

// offer is one coding the middleware may answer with, and its encoders.
type offer struct {
	coding   string
	encoders *pool.Encoders
}

// Middleware compresses responses and decodes request bodies. It is safe for
// concurrent use; build it once with New and share it.
type Middleware struct {
	offers              []offer
	minSize             int
	buffers             *pool.Buffers
	types               []string
	maxDecompressedSize int64
	decoders            map[string]*pool.Decoders
}

// New returns a Middleware configured by opts, or an error naming the first
// invalid option.
func New(opts ...Option) (*Middleware, error) {
	c := config{
		encodings:           DefaultEncodings(),
		levels:              map[string]int{},
		minSize:             DefaultMinSize,
		bufferSize:          DefaultBufferSize,
		contentTypes:        DefaultContentTypes(),
		maxDecompressedSize: DefaultMaxDecompressedSize,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("squeeze: nil Option")
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	m := &Middleware{
		minSize:             c.minSize,
		types:               c.contentTypes,
		maxDecompressedSize: c.maxDecompressedSize,
		decoders:            map[string]*pool.Decoders{},
	}
	for coding := range c.levels {
		if !slices.Contains(c.encodings, coding) {
			return nil, fmt.Errorf("squeeze: WithLevel(%q) names a coding that WithEncodings does not offer", coding)
		}
	}
	for _, coding := range c.encodings {
		level, ok := c.levels[coding]
		if !ok {
			r, err := writers.Levels(coding)
			if err != nil {
				return nil, err
			}
			level = r.Default
		}
		encoders, err := pool.NewEncoders(coding, level)
		if err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
		m.offers = append(m.offers, offer{coding: coding, encoders: encoders})
	}
	bufferSize := max(c.bufferSize, c.minSize)
	var err error
	if m.buffers, err = pool.NewBuffers(bufferSize); err != nil {
		return nil, fmt.Errorf("squeeze: %w", err)
	}
	for _, coding := range writers.Codings() {
		if m.decoders[coding], err = pool.NewDecoders(coding); err != nil {
			return nil, fmt.Errorf("squeeze: %w", err)
		}
	}
	return m, nil
}

// MustNew is like New but panics if an option is invalid. It suits
// package-level variables.
func MustNew(opts ...Option) *Middleware {
	m, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return m
}

// parseTypePattern checks a WithContentTypes pattern and returns it in
// lower case.
func parseTypePattern(p string) (string, error) {
	lower := strings.ToLower(strings.TrimSpace(p))
	typ, sub, ok := strings.Cut(lower, "/")
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("squeeze: WithContentTypes: pattern %q %s", p, why)
	}
	switch {
	case !ok || typ == "" || sub == "":
		return bad("is not of the form type/subtype")
	case !isTypePatternText(typ) || !isTypePatternText(sub):
		return bad("has characters a media type cannot have (parameters, spaces, a second /)")
	case strings.Contains(typ, "*") && typ != "*":
		return bad("has a partial wildcard in its type")
	case sub == "*":
		return lower, nil
	case strings.HasPrefix(sub, "*+"):
		if len(sub) == 2 || strings.Contains(sub[2:], "*") {
			return bad("has an empty or wildcard suffix")
		}
		return lower, nil
	case strings.Contains(sub, "*"):
		return bad("has a wildcard that is neither * nor *+suffix")
	case typ == "*":
		return bad("has a wildcard type with a concrete subtype")
	}
	return lower, nil
}

// isTypePatternText reports whether s is made of token characters and the
// wildcard "*".
func isTypePatternText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '*' && !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// matchType reports whether the Content-Type value ct (parameters allowed)
// matches one of the lower-case patterns. It does not allocate.
func matchType(patterns []string, ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	typ, sub, ok := strings.Cut(ct, "/")
	if !ok || typ == "" || sub == "" || strings.IndexByte(sub, '/') >= 0 {
		return false // not a media type
	}
	for _, p := range patterns {
		ptyp, psub, _ := strings.Cut(p, "/")
		if ptyp != "*" && !strings.EqualFold(ptyp, typ) {
			continue
		}
		switch {
		case psub == "*":
			return true
		case strings.HasPrefix(psub, "*+"):
			suffix := psub[1:] // "+json"
			if len(sub) > len(suffix) && strings.EqualFold(sub[len(sub)-len(suffix):], suffix) {
				return true
			}
		case strings.EqualFold(psub, sub):
			return true
		}
	}
	return false
}
