package writers_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/writers"
)

func TestCanonicalMapsTokensCaseInsensitively(t *testing.T) {
	tests := []struct {
		token string
		want  string
		ok    bool
	}{
		{"gzip", writers.Gzip, true},
		{"GZIP", writers.Gzip, true},
		{"GzIp", writers.Gzip, true},
		{"x-gzip", writers.Gzip, true}, // RFC 9110 §8.4.1.3
		{"X-GZIP", writers.Gzip, true},
		{"deflate", writers.Deflate, true},
		{"Deflate", writers.Deflate, true},
		{"zstd", writers.Zstd, true},
		{"ZSTD", writers.Zstd, true},
		{"br", writers.Brotli, true},
		{"BR", writers.Brotli, true},
		{"identity", "", false},
		{"*", "", false},
		{"", "", false},
		{"x-deflate", "", false},
		{"x-zstd", "", false},
		{"brotli", "", false},
		{"compress", "", false},
		{"x-compress", "", false},
		{"dcz", "", false},
		{" gzip", "", false}, // the caller trims OWS, not Canonical
		{"gzip;q=1", "", false},
		{"gzi", "", false},
	}
	for _, tt := range tests {
		got, ok := writers.Canonical(tt.token)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tt.token, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLevelsTable(t *testing.T) {
	tests := []struct {
		coding string
		want   writers.LevelRange
	}{
		{writers.Gzip, writers.LevelRange{Min: -3, Max: 9, Default: 5}},
		{writers.Deflate, writers.LevelRange{Min: -3, Max: 9, Default: 5}},
		{writers.Zstd, writers.LevelRange{Min: 1, Max: 22, Default: 3}},
		{writers.Brotli, writers.LevelRange{Min: 0, Max: 11, Default: 5}},
	}
	for _, tt := range tests {
		got, err := writers.Levels(tt.coding)
		if err != nil || got != tt.want {
			t.Errorf("Levels(%q) = %+v, %v; want %+v, nil", tt.coding, got, err, tt.want)
		}
		if !got.Contains(got.Default) || writers.ValidateLevel(tt.coding, got.Default) != nil {
			t.Errorf("%s: default level %d is not valid", tt.coding, got.Default)
		}
	}
	for _, bad := range []string{"", "identity", "GZIP", "x-gzip", "compress"} {
		if r, err := writers.Levels(bad); err == nil {
			t.Errorf("Levels(%q) = %+v, nil; want an error (only canonical names)", bad, r)
		}
	}
}

func TestValidateLevel(t *testing.T) {
	tests := []struct {
		coding string
		level  int
		ok     bool
	}{
		{writers.Gzip, -4, false},
		{writers.Gzip, -3, true}, // stateless
		{writers.Gzip, -2, true}, // Huffman only
		{writers.Gzip, -1, false},
		{writers.Gzip, 0, false},
		{writers.Gzip, 1, true},
		{writers.Gzip, 9, true},
		{writers.Gzip, 10, false},
		{writers.Deflate, -3, true},
		{writers.Deflate, -1, false},
		{writers.Deflate, 0, false},
		{writers.Deflate, 9, true},
		{writers.Deflate, 10, false},
		{writers.Zstd, 0, false},
		{writers.Zstd, 1, true},
		{writers.Zstd, 22, true},
		{writers.Zstd, 23, false},
		{writers.Zstd, -1, false},
		{writers.Brotli, -1, false},
		{writers.Brotli, 0, true},
		{writers.Brotli, 11, true},
		{writers.Brotli, 12, false},
		{"identity", 1, false},
		{"x-gzip", 5, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		err := writers.ValidateLevel(tt.coding, tt.level)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateLevel(%q, %d) = %v; want ok=%v", tt.coding, tt.level, err, tt.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "writers: ") {
			t.Errorf("ValidateLevel(%q, %d) error %q lacks the package prefix", tt.coding, tt.level, err)
		}
	}
}

func TestNewEncoderRejectsBadCodingsAndLevels(t *testing.T) {
	tests := []struct {
		coding string
		level  int
	}{
		{writers.Gzip, 0},
		{writers.Gzip, -1},
		{writers.Gzip, 10},
		{writers.Deflate, 11},
		{writers.Zstd, 0},
		{writers.Zstd, 23},
		{writers.Brotli, 12},
		{writers.Brotli, -1},
		{"identity", 1},
		{"GZIP", 5}, // not canonical
		{"x-gzip", 5},
		{"lz4", 1},
		{"", 1},
	}
	for _, tt := range tests {
		e, err := writers.NewEncoder(tt.coding, tt.level)
		if err == nil || e != nil {
			t.Errorf("NewEncoder(%q, %d) = %v, %v; want nil, error", tt.coding, tt.level, e, err)
		}
	}
}

func TestNewDecoderRejectsUnknownCodings(t *testing.T) {
	for _, coding := range []string{"", "identity", "GZIP", "x-gzip", "compress", "lz4", "dcz"} {
		d, err := writers.NewDecoder(coding)
		if err == nil || d != nil {
			t.Errorf("NewDecoder(%q) = %v, %v; want nil, error", coding, d, err)
		}
	}
}

func TestCodingsAreCanonicalAndFresh(t *testing.T) {
	got := writers.Codings()
	want := []string{writers.Zstd, writers.Brotli, writers.Gzip, writers.Deflate}
	if !slices.Equal(got, want) {
		t.Fatalf("Codings() = %q; want %q", got, want)
	}
	for _, c := range got {
		if canon, ok := writers.Canonical(c); !ok || canon != c {
			t.Errorf("Canonical(%q) = %q, %v; want it unchanged", c, canon, ok)
		}
	}
	got[0] = "mutated"
	if writers.Codings()[0] != writers.Zstd {
		t.Error("Codings returned a shared slice")
	}
}

func TestLevelRangeContains(t *testing.T) {
	r := writers.LevelRange{Min: 1, Max: 3, Default: 2}
	for level, want := range map[int]bool{0: false, 1: true, 2: true, 3: true, 4: false} {
		if got := r.Contains(level); got != want {
			t.Errorf("%+v.Contains(%d) = %v; want %v", r, level, got, want)
		}
	}
}

func TestErrorsMatch(t *testing.T) {
	unknown := []struct {
		name string
		err  error
	}{
		{"Levels", func() error { _, err := writers.Levels("lz4"); return err }()},
		{"ValidateLevel", writers.ValidateLevel("x-gzip", 5)},
		{"NewEncoder", func() error { _, err := writers.NewEncoder("GZIP", 5); return err }()},
		{"NewDecoder", func() error { _, err := writers.NewDecoder("identity"); return err }()},
	}
	for _, tt := range unknown {
		if !errors.Is(tt.err, writers.ErrUnknownCoding) {
			t.Errorf("%s: error %v does not match ErrUnknownCoding", tt.name, tt.err)
		}
		if errors.Is(tt.err, writers.ErrInvalidLevel) {
			t.Errorf("%s: error %v matches ErrInvalidLevel", tt.name, tt.err)
		}
	}

	levels := []struct {
		coding string
		level  int
		msg    string
	}{
		{writers.Brotli, 12, "writers: level 12 is not valid for br (want 0 to 11)"},
		{writers.Zstd, 0, "writers: level 0 is not valid for zstd (want 1 to 22)"},
		{writers.Gzip, 0, "writers: level 0 is not valid for gzip (want 1 to 9, -2 (Huffman only) or -3 (stateless))"},
		{writers.Deflate, -1, "writers: level -1 is not valid for deflate (want 1 to 9, -2 (Huffman only) or -3 (stateless))"},
	}
	for _, tt := range levels {
		_, newErr := writers.NewEncoder(tt.coding, tt.level)
		for _, err := range []error{writers.ValidateLevel(tt.coding, tt.level), newErr} {
			if !errors.Is(err, writers.ErrInvalidLevel) || errors.Is(err, writers.ErrUnknownCoding) {
				t.Errorf("%s %d: error %v: want ErrInvalidLevel alone", tt.coding, tt.level, err)
			}
			var le *writers.LevelError
			if !errors.As(err, &le) {
				t.Fatalf("%s %d: error %v is not a *LevelError", tt.coding, tt.level, err)
			}
			r, _ := writers.Levels(tt.coding)
			if le.Coding != tt.coding || le.Level != tt.level || le.Range != r {
				t.Errorf("%s %d: LevelError = %+v", tt.coding, tt.level, *le)
			}
			if err.Error() != tt.msg {
				t.Errorf("%s %d: message %q; want %q", tt.coding, tt.level, err, tt.msg)
			}
		}
	}
}
