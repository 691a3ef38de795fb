package squeeze_test

import (
	"errors"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

// Every error New can return for an option names the call as the user wrote
// it and says what would be accepted, and still wraps the error of the
// package that found the fault.
func TestNewErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		opts []squeeze.Option
		msg  string
		is   error // nil: no sentinel to match
	}{
		{"nil option", []squeeze.Option{nil},
			"squeeze: New: option 1 of 1 is nil", nil},
		{"unknown coding", []squeeze.Option{squeeze.WithEncodings("gzip", "lz4")},
			`squeeze: WithEncodings("gzip", "lz4"): unknown coding "lz4" (want zstd, br, gzip, deflate, dcz or dcb)`, writers.ErrUnknownCoding},
		{"identity is no coding", []squeeze.Option{squeeze.WithEncodings("identity")},
			`squeeze: WithEncodings("identity"): unknown coding "identity" (want zstd, br, gzip, deflate, dcz or dcb)`, writers.ErrUnknownCoding},
		{"no codings", []squeeze.Option{squeeze.WithEncodings()},
			"squeeze: WithEncodings(): needs at least one coding", nil},
		{"coding twice", []squeeze.Option{squeeze.WithEncodings("gzip", "zstd", "gzip")},
			`squeeze: WithEncodings("gzip", "zstd", "gzip"): coding "gzip" is listed twice`, nil},
		{"coding twice under an alias", []squeeze.Option{squeeze.WithEncodings("gzip", "X-Gzip")},
			`squeeze: WithEncodings("gzip", "X-Gzip"): coding "X-Gzip" repeats "gzip"`, nil},
		{"br level", []squeeze.Option{squeeze.WithLevel(squeeze.Brotli, 12)},
			`squeeze: WithLevel("br", 12): level must be 0 to 11`, writers.ErrInvalidLevel},
		{"zstd level", []squeeze.Option{squeeze.WithLevel("ZSTD", 0)},
			`squeeze: WithLevel("ZSTD", 0): level must be 1 to 22`, writers.ErrInvalidLevel},
		{"gzip level", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, -1)},
			`squeeze: WithLevel("gzip", -1): level must be 1 to 9, -2 (Huffman only) or -3 (stateless)`, writers.ErrInvalidLevel},
		{"level of an unknown coding", []squeeze.Option{squeeze.WithLevel("lzma", 1)},
			`squeeze: WithLevel("lzma", 1): unknown coding "lzma" (want zstd, br, gzip or deflate)`, writers.ErrUnknownCoding},
		{"level of a coding not offered", []squeeze.Option{squeeze.WithLevel(squeeze.Deflate, 6)},
			`squeeze: WithLevel("deflate", 6): deflate is not offered (the codings offered are zstd, br, gzip); offer it with squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate)`, nil},
		{"level of a coding not offered by a list", []squeeze.Option{squeeze.WithEncodings(squeeze.Gzip), squeeze.WithLevel("DEFLATE", 5)},
			`squeeze: WithLevel("deflate", 5): deflate is not offered (the codings offered are gzip); offer it with squeeze.WithEncodings(squeeze.Gzip, squeeze.Deflate)`, nil},
		// A client holds a dictionary only after a response in another
		// coding gave it one: dcz or dcb alone would compress nothing.
		{"dictionary coding alone", []squeeze.Option{squeeze.WithEncodings(squeeze.DCZ)},
			`squeeze: WithEncodings("dcz"): dcz and dcb need a fallback coding: a client holds a dictionary only after a response sent in another coding; list zstd, br, gzip or deflate too`, nil},
		{"dictionary codings alone", []squeeze.Option{squeeze.WithEncodings("DCB", squeeze.DCZ)},
			`squeeze: WithEncodings("DCB", "dcz"): dcz and dcb need a fallback coding: a client holds a dictionary only after a response sent in another coding; list zstd, br, gzip or deflate too`, nil},
		{"negative min size", []squeeze.Option{squeeze.WithMinSize(-1)},
			"squeeze: WithMinSize(-1): size must be 0 to 16777216 bytes (16 MiB)", nil},
		// The buffer is raised to the minimum size, so a minimum beyond
		// the largest buffer would lift its bound.
		{"huge min size", []squeeze.Option{squeeze.WithMinSize(256 << 20)},
			"squeeze: WithMinSize(268435456): size must be 0 to 16777216 bytes (16 MiB)", nil},
		{"zero buffer", []squeeze.Option{squeeze.WithBufferSize(0)},
			"squeeze: WithBufferSize(0): size must be 1 to 16777216 bytes (16 MiB)", nil},
		{"huge buffer", []squeeze.Option{squeeze.WithBufferSize(32 << 20)},
			"squeeze: WithBufferSize(33554432): size must be 1 to 16777216 bytes (16 MiB)", nil},
		{"no content types", []squeeze.Option{squeeze.WithContentTypes()},
			"squeeze: WithContentTypes(): needs at least one pattern (leave the option out for DefaultContentTypes())", nil},
		{"no excluded content types", []squeeze.Option{squeeze.WithoutContentTypes()},
			"squeeze: WithoutContentTypes(): needs at least one pattern (leave the option out to exclude none)", nil},
		{"bad excluded content type", []squeeze.Option{squeeze.WithoutContentTypes("image")},
			`squeeze: WithoutContentTypes("image"): pattern "image" is not of the form type/subtype`, nil},
		{"content type twice", []squeeze.Option{squeeze.WithContentTypes("text/html", "TEXT/HTML")},
			`squeeze: WithContentTypes("text/html", "TEXT/HTML"): pattern "TEXT/HTML" repeats "text/html"`, nil},
		{"zero decompressed size", []squeeze.Option{squeeze.WithMaxDecompressedSize(0)},
			"squeeze: WithMaxDecompressedSize(0): size must be positive", nil},
		{"negative decoder memory", []squeeze.Option{squeeze.WithDecoderMemory(-5)},
			"squeeze: WithDecoderMemory(-5): budget must be positive", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := squeeze.New(tt.opts...)
			if err == nil || m != nil {
				t.Fatalf("New = %v, %v; want nil and an error", m, err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			for _, other := range []error{writers.ErrUnknownCoding, writers.ErrInvalidLevel} {
				if other != tt.is && errors.Is(err, other) {
					t.Errorf("error %v matches %v too", err, other)
				}
			}
		})
	}
}

// A level error carries the writers.LevelError with the coding, level and
// range, for a caller that reports it its own way.
func TestNewLevelErrorAs(t *testing.T) {
	_, err := squeeze.New(squeeze.WithLevel("BR", 12))
	var le *writers.LevelError
	if !errors.As(err, &le) {
		t.Fatalf("errors.As(%v, *writers.LevelError) = false", err)
	}
	if le.Coding != writers.Brotli || le.Level != 12 || le.Range.Max != 11 {
		t.Errorf("LevelError = %+v", *le)
	}
}

// BestLevel reads a coding's name as WithEncodings and WithLevel do, case
// aside and x-gzip meaning gzip, and answers a name it does not know with
// -1, which no coding takes, so that it cannot pass for a level.
func TestBestLevelReadsNamesAsWithEncodings(t *testing.T) {
	for _, tt := range []struct {
		coding string
		want   int
	}{
		{"br", 11}, {"BR", 11}, {"Br", 11},
		{"zstd", 19}, {"ZSTD", 19},
		{"gzip", 9}, {"GZIP", 9}, {"x-gzip", 9}, {"X-Gzip", 9},
		{"deflate", 9}, {"Deflate", 9},
		{"identity", -1}, {"dcz", -1}, {"dcb", -1}, {"lz4", -1}, {"", -1}, {"*", -1},
	} {
		got := squeeze.BestLevel(tt.coding)
		if got != tt.want {
			t.Errorf("BestLevel(%q) = %d, want %d", tt.coding, got, tt.want)
		}
		if _, ok := writers.Canonical(tt.coding); !ok {
			for _, coding := range writers.Codings() {
				if _, err := squeeze.New(squeeze.WithEncodings(writers.Codings()...), squeeze.WithLevel(coding, got)); err == nil {
					t.Errorf("BestLevel(%q) = %d is a valid %s level", tt.coding, got, coding)
				}
			}
			continue
		}
		if _, err := squeeze.New(squeeze.WithEncodings(tt.coding), squeeze.WithLevel(tt.coding, got)); err != nil {
			t.Errorf("WithLevel(%q, BestLevel(%q)): %v", tt.coding, tt.coding, err)
		}
	}
}
