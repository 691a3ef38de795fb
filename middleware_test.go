package squeeze_test

import (
	"testing"

	"github.com/squeezehttp/squeeze"
)

// The API: coding names, New and MustNew with their options, and the
// package-level Handler. The behaviour of a response has a file of its own.

func TestCodingNamesAreTheRegisteredTokens(t *testing.T) {
	for got, want := range map[string]string{squeeze.Zstd: "zstd", squeeze.Brotli: "br", squeeze.Gzip: "gzip", squeeze.Deflate: "deflate"} {
		if got != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
}

func TestNewValidatesEveryOption(t *testing.T) {
	tests := []struct {
		name    string
		opts    []squeeze.Option
		wantErr bool
	}{
		{"defaults", nil, false},
		{"all four codings", []squeeze.Option{squeeze.WithEncodings(squeeze.Deflate, squeeze.Gzip, squeeze.Brotli, squeeze.Zstd)}, false},
		{"x-gzip is gzip", []squeeze.Option{squeeze.WithEncodings("x-gzip")}, false},
		{"coding names ignore case", []squeeze.Option{squeeze.WithEncodings("GZIP", "Br", "ZSTD")}, false},
		{"unknown coding", []squeeze.Option{squeeze.WithEncodings(squeeze.Gzip, "compress")}, true},
		{"identity is not an encoding", []squeeze.Option{squeeze.WithEncodings("identity")}, true},
		{"empty encodings", []squeeze.Option{squeeze.WithEncodings()}, true},
		{"duplicate coding", []squeeze.Option{squeeze.WithEncodings(squeeze.Gzip, squeeze.Zstd, squeeze.Gzip)}, true},
		{"duplicate through x-gzip alias", []squeeze.Option{squeeze.WithEncodings(squeeze.Gzip, "x-gzip")}, true},
		{"gzip level -3 (stateless)", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, -3)}, false},
		{"gzip level -2 (huffman)", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, -2)}, false},
		{"gzip level 1", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, 1)}, false},
		{"gzip level 9", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, 9)}, false},
		{"gzip level 0", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, 0)}, true},
		{"gzip level -1", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, -1)}, true},
		{"gzip level 10", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, 10)}, true},
		{"gzip level -4", []squeeze.Option{squeeze.WithLevel(squeeze.Gzip, -4)}, true},
		{"deflate level 9", []squeeze.Option{squeeze.WithEncodings(squeeze.Deflate), squeeze.WithLevel(squeeze.Deflate, 9)}, false},
		{"deflate level 10", []squeeze.Option{squeeze.WithEncodings(squeeze.Deflate), squeeze.WithLevel(squeeze.Deflate, 10)}, true},
		{"zstd level 1", []squeeze.Option{squeeze.WithLevel(squeeze.Zstd, 1)}, false},
		{"zstd level 22", []squeeze.Option{squeeze.WithLevel(squeeze.Zstd, 22)}, false},
		{"zstd level 0", []squeeze.Option{squeeze.WithLevel(squeeze.Zstd, 0)}, true},
		{"zstd level 23", []squeeze.Option{squeeze.WithLevel(squeeze.Zstd, 23)}, true},
		{"br level 0", []squeeze.Option{squeeze.WithLevel(squeeze.Brotli, 0)}, false},
		{"br level 11", []squeeze.Option{squeeze.WithLevel(squeeze.Brotli, 11)}, false},
		{"br level -1", []squeeze.Option{squeeze.WithLevel(squeeze.Brotli, -1)}, true},
		{"br level 12", []squeeze.Option{squeeze.WithLevel(squeeze.Brotli, 12)}, true},
		{"level for unknown coding", []squeeze.Option{squeeze.WithLevel("lzma", 1)}, true},
		{"level for coding off by default", []squeeze.Option{squeeze.WithLevel(squeeze.Deflate, 5)}, true},
		{"level for coding WithEncodings dropped", []squeeze.Option{squeeze.WithEncodings(squeeze.Gzip), squeeze.WithLevel(squeeze.Zstd, 3)}, true},
		{"level given before its encoding", []squeeze.Option{squeeze.WithLevel(squeeze.Deflate, 5), squeeze.WithEncodings(squeeze.Deflate)}, false},
		{"negative min size", []squeeze.Option{squeeze.WithMinSize(-1)}, true},
		{"zero min size", []squeeze.Option{squeeze.WithMinSize(0)}, false},
		{"zero buffer size", []squeeze.Option{squeeze.WithBufferSize(0)}, true},
		{"negative buffer size", []squeeze.Option{squeeze.WithBufferSize(-5)}, true},
		{"buffer below min size is allowed", []squeeze.Option{squeeze.WithBufferSize(16), squeeze.WithMinSize(4096)}, false},
		{"empty content types", []squeeze.Option{squeeze.WithContentTypes()}, true},
		{"content type patterns", []squeeze.Option{squeeze.WithContentTypes("text/html", "image/*", "application/*+json", "*/*+xml")}, false},
		{"content type with parameters", []squeeze.Option{squeeze.WithContentTypes("text/html; charset=utf-8")}, true},
		{"content type without subtype", []squeeze.Option{squeeze.WithContentTypes("text")}, true},
		{"partial wildcard subtype", []squeeze.Option{squeeze.WithContentTypes("text/ht*")}, true},
		{"wildcard type with concrete subtype", []squeeze.Option{squeeze.WithContentTypes("*/json")}, true},
		{"duplicate content type", []squeeze.Option{squeeze.WithContentTypes("text/html", "TEXT/HTML")}, true},
		{"nil option", []squeeze.Option{nil}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := squeeze.New(tt.opts...)
			if tt.wantErr {
				if err == nil {
					t.Fatal("New succeeded, want an error")
				}
				if m != nil {
					t.Error("New returned a Middleware along with its error")
				}
				return
			}
			if err != nil || m == nil {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

func TestMustNewPanicsOnInvalidOption(t *testing.T) {
	if m := squeeze.MustNew(squeeze.WithMinSize(10)); m == nil {
		t.Fatal("MustNew returned nil for valid options")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew(WithLevel(Brotli, 12)) did not panic")
		}
	}()
	squeeze.MustNew(squeeze.WithLevel(squeeze.Brotli, 12))
}

func TestPackageHandlerUsesDefaults(t *testing.T) {
	tests := []struct {
		name   string
		ae     string
		size   int
		wantCE string
	}{
		{"zstd preferred", "gzip, br, zstd", 4000, squeeze.Zstd},
		{"deflate is off by default", "deflate", 4000, ""},
		{"gzip when asked", "gzip, deflate", 4000, squeeze.Gzip},
		{"below the default min size", "gzip", squeeze.DefaultMinSize - 1, ""},
		{"at the default min size", "gzip", squeeze.DefaultMinSize, squeeze.Gzip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(1, tt.size)
			res, raw := record(squeeze.Handler(writeText("text/plain", body, 0)), request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}
