package squeeze

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	defaultMinSize             = 1024
	defaultBufferSize          = 32 << 10
	defaultMaxDecompressedSize = 10 << 20
)

// DefaultEncodings returns the codings offered without [WithEncodings]:
// zstd, br, gzip, in that order (not deflate, which clients disagree on).
func DefaultEncodings() []string { return []string{Zstd, Brotli, Gzip} }

// DefaultContentTypes returns the media-type patterns compressed when
// [WithContentTypes] is not given: text (CSV among it), JSON, JavaScript,
// XML, SVG, wasm, YAML, TOML, SQL, GraphQL, the binary but uncompressed
// formats protobuf, MessagePack, BMP and ICO, uncompressed font formats and
// the +json and +xml structured suffixes.
//
// It is a list of formats known to compress, not of formats known not to:
// images, audio, video, archives and woff/woff2 (compressed inside) are not
// listed, so they pass through. Nor is application/octet-stream, which
// names no format: it is what downloads (archives, installers, disk images)
// are served as, and compressing one past the buffer spends CPU on bytes
// that do not shrink and drops its Content-Length, which a download's
// progress needs. List it with [WithContentTypes] where it names
// compressible data, or allow everything and exclude with
// [WithoutContentTypes].
func DefaultContentTypes() []string {
	return []string{
		"text/*",
		"application/json", "application/x-ndjson", "*/*+json",
		"application/javascript", "application/x-javascript", "application/ecmascript",
		"application/xml", "*/*+xml", // *+xml covers image/svg+xml and application/xhtml+xml
		"application/wasm",
		"application/yaml", "application/x-yaml", "application/toml",
		"application/csv", "application/sql", "application/graphql",
		"application/protobuf", "application/x-protobuf",
		"application/msgpack", "application/x-msgpack", "application/vnd.msgpack",
		"image/bmp", "image/x-ms-bmp", "image/x-icon", "image/vnd.microsoft.icon",
		"font/ttf", "font/otf", "application/x-font-ttf", "application/x-font-otf",
		"application/vnd.ms-fontobject",
	}
}

// Option configures a [Middleware]. Options are checked by [New].
type Option func(*config) error

type config struct {
	encodings           []string
	dictCodings         []string // DCZ and DCB as WithEncodings lists them
	dictMatch           []string
	dictStoreSize       int64
	standalone          []standaloneConfig
	learned             []learnedConfig // WithLearnedDictionary
	levels              map[string]int
	minSize             int
	bufferSize          int
	contentTypes        []string
	exceptTypes         []string // WithoutContentTypes
	maxDecompressedSize int64
	noRequestDecoding   bool
	decoderMemory       int64
	observer            Observer
	cache               *Cache
	trustETags          bool          // CacheTrustedETags
	shared              SharedStore   // WithSharedStore
	sharedTimeout       time.Duration // SharedTimeout
	sharedMaxValue      int           // SharedMaxValue
	sharedWrites        int           // SharedWriteBudget: writes a minute
	sharedWriteBytes    int64         // SharedWriteBudget: bytes a minute
	sharedAdmitAfter    int           // SharedAdmitAfter
	lengthHiding        int           // WithLengthHiding; 0 when off
}

// WithEncodings sets the codings offered to clients, most preferred first.
// Each must be one of [Zstd], [Brotli], [Gzip], [Deflate], [DCZ] or [DCB]
// (case-insensitive, "x-gzip" meaning gzip); an empty list or a repeated
// coding is an error. The error for a coding squeeze does not know matches
// [writers.ErrUnknownCoding].
//
// The dictionary codings DCZ and DCB apply only where dictionaries are
// configured ([WithDictionaryMatch], [WithDictionary]) and win over the
// others when a client can use one. A list that names neither leaves both
// on, dcz first: configuring a dictionary is what asks for deltas, and a
// list written for the other codings does not turn them off. A list naming
// one offers only that one, and one listing DCB before DCZ prefers dcb. A
// list of dictionary codings alone is an error: a client holds a dictionary
// only after a response in another coding (or plain) gave it one, and a
// response whose client holds none would never be compressed.
func WithEncodings(codings ...string) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithEncodings(%s)", quoteList(codings))
		list, err := canonicalList(call, "coding", codings, func(name string) (string, error) {
			if equalFold(name, DCZ) || equalFold(name, DCB) {
				return strings.ToLower(name), nil
			}
			coding, ok := writers.Canonical(name)
			if !ok {
				return "", unknownCodingWant(call, name, "zstd, br, gzip, deflate, dcz or dcb")
			}
			return coding, nil
		})
		if err != nil {
			return err
		}
		var encodings, dictCodings []string
		for _, coding := range list {
			if coding == DCZ || coding == DCB {
				dictCodings = append(dictCodings, coding)
			} else {
				encodings = append(encodings, coding)
			}
		}
		if len(encodings) == 0 {
			return fmt.Errorf("squeeze: %s: dcz and dcb need a fallback coding: a client holds a "+
				"dictionary only after a response sent in another coding; list zstd, br, gzip or deflate too", call)
		}
		if len(dictCodings) == 0 {
			dictCodings = []string{DCZ, DCB} // the dictionary options decide
		}
		c.encodings, c.dictCodings = encodings, dictCodings
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
	return unknownCodingWant(call, name, "zstd, br, gzip or deflate")
}

// unknownCodingWant is unknownCodingError with the codings the call takes.
func unknownCodingWant(call, name, want string) error {
	return &optionError{
		msg: fmt.Sprintf("squeeze: %s: unknown coding %q (want %s)", call, name, want),
		err: writers.ErrUnknownCoding,
	}
}

// notOfferedError reports a WithLevel for a coding that the WithEncodings
// list (or the default list) leaves out, and spells out the WithEncodings
// call that would offer it.
func notOfferedError(coding string, level int, offered []string) error {
	names := map[string]string{Zstd: "squeeze.Zstd", Brotli: "squeeze.Brotli", Gzip: "squeeze.Gzip", Deflate: "squeeze.Deflate"}
	var fix []string
	for _, c := range append(slices.Clone(offered), coding) {
		fix = append(fix, names[c])
	}
	return fmt.Errorf("squeeze: WithLevel(%q, %d): %s is not offered (the codings offered are %s); "+
		"offer it with squeeze.WithEncodings(%s)",
		coding, level, coding, strings.Join(offered, ", "), strings.Join(fix, ", "))
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
// saving. 0 compresses every eligible body. A body is held back until it
// reaches the minimum size, so the buffer is raised to it: it must be 0 to
// 16 MiB, the largest buffer [WithBufferSize] takes. The default is
// 1024.
func WithMinSize(n int) Option {
	return func(c *config) error {
		if n < 0 || n > maxBufferSize {
			return fmt.Errorf("squeeze: WithMinSize(%d): size must be 0 to %d bytes (16 MiB)", n, maxBufferSize)
		}
		c.minSize = n
		return nil
	}
}

// maxBufferSize is the largest size WithBufferSize takes.
const maxBufferSize = 16 << 20

// WithBufferSize sets how many bytes of a body are held back while deciding
// whether to compress it. A body that may be encoded and ends within the
// buffer is sent in one piece with a Content-Length; a body known from its
// header to go out unchanged is not held back. The size is raised to the
// minimum size if it is smaller. The default is 32 KiB; it must
// be positive and at most 16 MiB.
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
// ignores case and media-type parameters. An empty list is an error: leave
// the option out to keep [DefaultContentTypes].
func WithContentTypes(patterns ...string) Option {
	return func(c *config) error {
		list, err := typePatterns("WithContentTypes", patterns, "leave the option out for DefaultContentTypes()")
		if err != nil {
			return err
		}
		c.contentTypes = list
		return nil
	}
}

// WithoutContentTypes sets media types that are never compressed, even
// where [WithContentTypes] (or the default list) matches them. The
// patterns are those of WithContentTypes. It turns the allow-list into an
// exclusion list, as gzhttp's ExceptContentTypes does:
//
//	squeeze.WithContentTypes("*/*"),
//	squeeze.WithoutContentTypes("image/*", "video/*", "audio/*", "application/zip"),
//
// An empty list is an error.
func WithoutContentTypes(patterns ...string) Option {
	return func(c *config) error {
		list, err := typePatterns("WithoutContentTypes", patterns, "leave the option out to exclude none")
		if err != nil {
			return err
		}
		c.exceptTypes = list
		return nil
	}
}

// typePatterns checks the patterns of the option named name; hint says what
// to write instead of an empty list.
func typePatterns(name string, patterns []string, hint string) ([]string, error) {
	call := fmt.Sprintf("%s(%s)", name, quoteList(patterns))
	if len(patterns) == 0 {
		return nil, fmt.Errorf("squeeze: %s: needs at least one pattern (%s)", call, hint)
	}
	return canonicalList(call, "pattern", patterns, func(p string) (string, error) {
		t, err := parseTypePattern(p)
		if err != nil {
			return "", fmt.Errorf("squeeze: %s: %w", call, err)
		}
		return t, nil
	})
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
// a Content-Encoding. Reading past the cap fails with *[http.MaxBytesError],
// as [http.MaxBytesReader] would. The default is 10 MiB
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

// WithRequestDecoding turns the decoding of request bodies on or off. It is
// on by default. When off, a request body passes through untouched, with its
// Content-Encoding and Content-Length, and none of the limits on decoded
// bodies apply; responses are compressed as before.
//
// Turn it off where the handler must see the bytes as sent: a proxy that
// forwards bodies as they are, a handler that stores compressed uploads
// as-is, or one that decodes them itself under limits of its own.
func WithRequestDecoding(enabled bool) Option {
	return func(c *config) error {
		c.noRequestDecoding = !enabled
		return nil
	}
}

// WithDecoderMemory sets the memory, in bytes, that the decoders of request
// bodies may hold at once, across all requests. The default is
// 256 MiB; n must be positive.
//
// Each layer of a request body is charged, when its decoder is taken on
// the first Read, what that decoder can hold (its window and tables; the
// table is in docs/reference.md), since a small body can make a decoder
// allocate its whole window and a stalled client keep it.
//
// A charge larger than the whole budget takes all of it. The charge is
// returned when the body is closed or the handler returns.
//
// When the budget is spent, Read waits up to 200 ms, within the request's
// context, for other bodies to finish, then fails with [ErrDecoderBusy].
func WithDecoderMemory(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("squeeze: WithDecoderMemory(%d): budget must be positive", n)
		}
		c.decoderMemory = n
		return nil
	}
}
