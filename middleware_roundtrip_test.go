package squeeze_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Round trips through every coding and level, checked by the Go decoders and
// the reference C tools.

func TestRoundTripEveryCodingAndLevel(t *testing.T) {
	small, large := textBody(19, 8000), textBody(20, 64<<10+123)
	tests := []struct {
		coding string
		levels []int
		large  []int // levels also run on a body that outgrows the buffer
	}{
		{squeeze.Gzip, []int{-3, -2, 1, 5, 9}, []int{-3, -2, 1, 5, 9}},
		{squeeze.Deflate, []int{-3, -2, 1, 5, 9}, []int{-3, 1, 9}},
		{squeeze.Zstd, []int{1, 3, 7, 11, 19, 22}, []int{1, 3, 11}},
		{squeeze.Brotli, []int{0, 1, 4, 6, 9, 11}, []int{0, 4, 6}},
	}
	for _, tt := range tests {
		for _, level := range tt.levels {
			for _, body := range [][]byte{small, large} {
				if len(body) == len(large) && !slices.Contains(tt.large, level) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%d", tt.coding, level, len(body)), func(t *testing.T) {
					m := newMiddleware(t, squeeze.WithEncodings(tt.coding), squeeze.WithLevel(tt.coding, level))
					res, raw := record(m.Handler(writeText("text/html", body, 5000)), request("GET", tt.coding))
					if ce := res.Header.Get("Content-Encoding"); ce != tt.coding {
						t.Fatalf("Content-Encoding = %q, want %q", ce, tt.coding)
					}
					checkBody(t, res.Header, raw, body)
					if tt.coding == squeeze.Deflate {
						return // compress/zlib in checkBody is the independent decoder
					}
					if got := testtool.DecodeCLI(t, tt.coding, raw); !bytes.Equal(got, body) {
						t.Fatalf("reference tool decoded %d bytes, want %d", len(got), len(body))
					}
				})
			}
		}
	}
}
