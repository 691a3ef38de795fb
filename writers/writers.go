// Package writers gives every HTTP content coding (zstd, br, gzip, deflate)
// one face: an [Encoder] that compresses into an [io.Writer] and a [Decoder]
// that decompresses from an [io.Reader]. Both are resettable, so one instance
// serves many streams without allocating its tables again; package
// [github.com/squeezehttp/squeeze/internal/pool] keeps them for reuse across
// goroutines.
//
// Nothing here depends on net/http: a database driver or a log shipper that
// compresses with a coding named by its HTTP token can use the package alone.
//
// The codecs are github.com/klauspost/compress (gzip, deflate, zstd),
// github.com/molecule-man/go-brrr (br encoding) and
// github.com/andybalholm/brotli (br decoding, the long-fuzzed codec for
// hostile input). Every constructor validates its
// arguments and returns an error instead of a nil or half-built value: a
// coding the package does not implement is an error matching
// [ErrUnknownCoding], a level out of range a [*LevelError] matching
// [ErrInvalidLevel].
package writers

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownCoding is matched by the error returned for a coding this package
// does not implement, or one not in its canonical form (see [Canonical]).
// Test for it with [errors.Is].
var ErrUnknownCoding = errors.New("writers: unknown content coding")

// ErrInvalidLevel is matched by every [*LevelError]. Test for it with
// [errors.Is].
var ErrInvalidLevel = errors.New("writers: invalid compression level")

// LevelError reports a level that a coding does not accept. It matches
// [ErrInvalidLevel]; [errors.As] recovers the coding, the level and the range
// that was expected.
type LevelError struct {
	Coding string     // the canonical coding, such as "br"
	Level  int        // the level that was asked for
	Range  LevelRange // the levels the coding accepts (see [Levels])
}

// Error describes the level and what the coding would have accepted.
func (e *LevelError) Error() string {
	return fmt.Sprintf("writers: level %d is not valid for %s (want %s)", e.Level, e.Coding, e.Want())
}

// Is reports whether target is [ErrInvalidLevel].
func (e *LevelError) Is(target error) bool { return target == ErrInvalidLevel }

// Want describes the levels the coding accepts, such as "0 to 11", or for
// gzip and deflate "1 to 9, -2 (Huffman only) or -3 (stateless)".
func (e *LevelError) Want() string {
	if e.Coding == Gzip || e.Coding == Deflate {
		// 0 stores without compressing and -1 means "library default";
		// neither belongs in a compression configuration.
		return fmt.Sprintf("1 to %d, -2 (Huffman only) or -3 (stateless)", e.Range.Max)
	}
	return fmt.Sprintf("%d to %d", e.Range.Min, e.Range.Max)
}

// Content-coding names as registered with IANA and used in the
// Accept-Encoding and Content-Encoding header fields.
const (
	Zstd    = "zstd"
	Brotli  = "br"
	Gzip    = "gzip"
	Deflate = "deflate"
)

// ZstdMaxWindow is the largest zstd window a Decoder accepts. RFC 9659
// requires HTTP recipients to support 8 MB windows and lets them refuse
// larger ones, which bounds the memory one hostile stream can claim.
const ZstdMaxWindow = 8 << 20

// zstdEncoderWindow bounds the memory each in-flight zstd response holds.
// A larger window adds memory to every response in flight for a few percent
// on large bodies, a smaller one loses more than that on large JSON, and a
// body of 64 KiB or less compresses the same with either (the measurements
// are in docs/internals.md#encoders-windows-and-levels).
const zstdEncoderWindow = 128 << 10

// brotliEncoderWindowBits is log2 of the brotli encoder window (RFC 7932
// allows up to 24). 2^18 = 256 KiB covers typical HTTP bodies while keeping
// the per-stream ring buffer small: the codec's default of 22 holds several
// times the memory per in-flight response for a gain of a few percent on
// large JSON and none on HTML (docs/internals.md#encoders-windows-and-levels).
// The ring buffer grows with the input, so small bodies hold the same at any
// window.
const brotliEncoderWindowBits = 18

// LevelRange describes the levels a coding accepts, on the codec's own scale.
type LevelRange struct {
	Min, Max int
	// Default is the level recommended for compressing on the fly, chosen
	// from measurements on real HTML, JSON and JavaScript (see
	// docs/internals.md#encoders-windows-and-levels in the repository).
	Default int
}

// Contains reports whether level is between Min and Max. gzip and deflate
// refuse 0 and -1 within their range; [ValidateLevel] knows that.
func (r LevelRange) Contains(level int) bool { return level >= r.Min && level <= r.Max }

// Levels returns the level range of coding, which must be a canonical name
// (see [Canonical]); any other is an error matching [ErrUnknownCoding].
//
// gzip and deflate accept -3 (stateless: no history between writes, almost
// no memory held), -2 (Huffman only) and 1 to 9. zstd accepts 1 to 22 as the
// zstd command line does, but klauspost/compress has four speeds: 1-2 run
// its fastest, 3-5 its default, 6-9 "better" and 10-22 "best", close to zstd
// -1, -3, -7 and -11. br accepts 0 to 11.
//
// The defaults (gzip and deflate 5, zstd 3, br 5) were chosen for on-the-fly
// compression from measurements on real HTML, JSON and JavaScript; the table
// and the reasons are in the repository's docs/perf-history.md#default-levels.
func Levels(coding string) (LevelRange, error) {
	switch coding {
	case Gzip, Deflate:
		return LevelRange{Min: -3, Max: 9, Default: 5}, nil
	case Zstd:
		return LevelRange{Min: 1, Max: 22, Default: 3}, nil
	case Brotli:
		return LevelRange{Min: 0, Max: 11, Default: 5}, nil
	}
	return LevelRange{}, unknownCoding(coding)
}

// ValidateLevel returns nil if level is valid for coding, a [*LevelError]
// (matching [ErrInvalidLevel]) if it is not, and an error matching
// [ErrUnknownCoding] if coding is not a canonical name.
func ValidateLevel(coding string, level int) error {
	r, err := Levels(coding)
	if err != nil {
		return err
	}
	if !r.Contains(level) || ((coding == Gzip || coding == Deflate) && (level == 0 || level == -1)) {
		return &LevelError{Coding: coding, Level: level, Range: r}
	}
	return nil
}

// Codings returns the codings this package implements, most preferred first
// for HTTP responses: zstd, br, gzip, deflate. The caller owns the returned
// slice.
func Codings() []string { return []string{Zstd, Brotli, Gzip, Deflate} }

// Canonical maps a coding token, compared case-insensitively, to its canonical
// name. "x-gzip" is gzip (RFC 9110 §8.4.1.3). It reports false for identity
// and for codings this package does not implement.
func Canonical(token string) (string, bool) {
	switch {
	case strings.EqualFold(token, Zstd):
		return Zstd, true
	case strings.EqualFold(token, Brotli):
		return Brotli, true
	case strings.EqualFold(token, Gzip), strings.EqualFold(token, "x-gzip"):
		return Gzip, true
	case strings.EqualFold(token, Deflate):
		return Deflate, true
	}
	return "", false
}

func unknownCoding(coding string) error {
	return fmt.Errorf("%w %q (want zstd, br, gzip or deflate)", ErrUnknownCoding, coding)
}
