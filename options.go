package squeeze

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
	cache               *Cache
}

// WithEncodings sets the codings offered to clients, most preferred first.
// Each must be one of [Zstd], [Brotli], [Gzip] or [Deflate] (case-insensitive,
// "x-gzip" meaning gzip); an empty list or a repeated coding is an error. The
// error for a coding squeeze does not know matches
// [writers.ErrUnknownCoding].
func WithEncodings(codings ...string) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithEncodings(%s)", quoteList(codings))
		list, err := canonicalList(call, "coding", codings, func(name string) (string, error) {
			coding, ok := writers.Canonical(name)
			if !ok {
				return "", unknownCodingError(call, name)
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
// to 22, br 0 to 11. A level out of range is an error from [New] that
// matches [writers.ErrInvalidLevel]; a coding squeeze does not know, one
// that matches [writers.ErrUnknownCoding]. A level for a coding that
// [WithEncodings] does not offer is an error too.
func WithLevel(coding string, level int) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithLevel(%q, %d)", coding, level)
		canonical, ok := writers.Canonical(coding)
		if !ok {
			return unknownCodingError(call, coding)
		}
		if err := writers.ValidateLevel(canonical, level); err != nil {
			var le *writers.LevelError
			if errors.As(err, &le) {
				return &optionError{msg: fmt.Sprintf("squeeze: %s: level must be %s", call, le.Want()), err: err}
			}
			return fmt.Errorf("squeeze: %s: %w", call, err)
		}
		c.levels[canonical] = level
		return nil
	}
}

// optionError is an error in an option's value, worded in terms of the call
// the user wrote. It wraps the error of the package that found the fault,
// so errors.Is and errors.As still reach it.
type optionError struct {
	msg string
	err error
}

func (e *optionError) Error() string { return e.msg }
func (e *optionError) Unwrap() error { return e.err }

// unknownCodingError reports a coding name squeeze does not implement.
func unknownCodingError(call, name string) error {
	return &optionError{
		msg: fmt.Sprintf("squeeze: %s: unknown coding %q (want zstd, br, gzip or deflate)", call, name),
		err: writers.ErrUnknownCoding,
	}
}

// notOfferedError reports a WithLevel for a coding that the WithEncodings
// list (or the default list) leaves out.
func notOfferedError(coding string, level int, offered []string) error {
	return fmt.Errorf("squeeze: WithLevel(%q, %d): %s is not offered (the codings offered are %s; add it with WithEncodings)",
		coding, level, coding, strings.Join(offered, ", "))
}

// quoteList formats items as the arguments of a call: "a", "b".
func quoteList(items []string) string {
	var b strings.Builder
	for i, item := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", item)
	}
	return b.String()
}

// WithMinSize sets the smallest body, in bytes, that is compressed. Smaller
// bodies go out unchanged, since the coding's framing would outweigh the
// saving. 0 compresses every eligible body; a negative size is an error.
// The default is DefaultMinSize.
func WithMinSize(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("squeeze: WithMinSize(%d): size must not be negative", n)
		}
		c.minSize = n
		return nil
	}
}

// maxBufferSize is the largest size WithBufferSize takes.
const maxBufferSize = 16 << 20

// WithBufferSize sets how many bytes of a body are held back while deciding
// whether to compress it. A body that ends within the buffer is sent in one
// piece with a Content-Length. The size is raised to the minimum size if it
// is smaller. The default is DefaultBufferSize; it must be positive and at
// most 16 MiB.
func WithBufferSize(n int) Option {
	return func(c *config) error {
		if n <= 0 || n > maxBufferSize {
			return fmt.Errorf("squeeze: WithBufferSize(%d): size must be 1 to %d bytes (16 MiB)", n, maxBufferSize)
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
		call := fmt.Sprintf("WithContentTypes(%s)", quoteList(patterns))
		list, err := canonicalList(call, "pattern", patterns, parseTypePattern)
		if err != nil {
			return err
		}
		c.contentTypes = list
		return nil
	}
}

// canonicalList maps items to their canonical forms, refusing an empty list
// and an item that repeats another once canonical ("GZIP" after "gzip").
// call is the option call as the user wrote it, what names an item.
func canonicalList(call, what string, items []string, canonical func(string) (string, error)) ([]string, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("squeeze: %s: needs at least one %s", call, what)
	}
	list := make([]string, 0, len(items))
	for _, item := range items {
		c, err := canonical(item)
		if err != nil {
			return nil, err
		}
		if i := slices.Index(list, c); i >= 0 {
			if items[i] == item {
				return nil, fmt.Errorf("squeeze: %s: %s %q is listed twice", call, what, item)
			}
			return nil, fmt.Errorf("squeeze: %s: %s %q repeats %q", call, what, item, items[i])
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
			return fmt.Errorf("squeeze: WithMaxDecompressedSize(%d): size must be positive", n)
		}
		c.maxDecompressedSize = n
		return nil
	}
}
