package squeeze_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

// smuggle is a rewrite of a fleet's encoding that still decodes to the
// same plain bytes but carries bytes of the writer's choosing, where
// decoders skip them.
type smuggle struct {
	name    string
	codings []string
	rewrite func(t *testing.T, v []byte) []byte
}

// emptyFrame returns a complete stream of coding holding nothing.
func emptyFrame(t *testing.T, coding string) []byte {
	t.Helper()
	enc, err := writers.NewEncoder(coding, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(&out)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// padding returns n bytes of writers' padding for coding.
func padding(t *testing.T, coding string, n int) []byte {
	t.Helper()
	p, err := writers.AppendPadding(nil, coding, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const dczHeaderLen = 40

var smuggles = []smuggle{
	{"an empty member after", []string{squeeze.Gzip}, func(t *testing.T, v []byte) []byte {
		return append(v, emptyFrame(t, squeeze.Gzip)...)
	}},
	{"a comment in the header", []string{squeeze.Gzip}, func(t *testing.T, v []byte) []byte {
		p, err := writers.AppendGzipHeaderPadding(nil, v[:writers.GzipHeaderLen], 40)
		if err != nil {
			t.Fatal(err)
		}
		return append(p, v[writers.GzipHeaderLen:]...)
	}},
	{"an extra field in the header", []string{squeeze.Gzip}, func(t *testing.T, v []byte) []byte {
		p, err := writers.AppendGzipHeaderPadding(nil, v[:writers.GzipHeaderLen], 280)
		if err != nil {
			t.Fatal(err)
		}
		return append(p, v[writers.GzipHeaderLen:]...)
	}},
	{"a modification time", []string{squeeze.Gzip}, func(_ *testing.T, v []byte) []byte {
		copy(v[4:8], "time")
		return v
	}},
	{"a skippable frame after", []string{squeeze.Zstd, squeeze.DCZ}, func(t *testing.T, v []byte) []byte {
		return append(v, padding(t, squeeze.Zstd, 64)...)
	}},
	{"a skippable frame before", []string{squeeze.Zstd}, func(t *testing.T, v []byte) []byte {
		return append(padding(t, squeeze.Zstd, 64), v...)
	}},
	{"a skippable frame after the dcz header", []string{squeeze.DCZ}, func(t *testing.T, v []byte) []byte {
		out := append([]byte(nil), v[:dczHeaderLen]...)
		out = append(out, padding(t, squeeze.Zstd, 64)...)
		return append(out, v[dczHeaderLen:]...)
	}},
	{"an empty frame after", []string{squeeze.Zstd, squeeze.DCZ}, func(t *testing.T, v []byte) []byte {
		return append(v, emptyFrame(t, squeeze.Zstd)...)
	}},
	{"metadata after the stream", []string{squeeze.Brotli, squeeze.DCB}, func(t *testing.T, v []byte) []byte {
		return append(v, padding(t, squeeze.Brotli, 64)...)
	}},
}

// An encoding in the fleet's store that decodes to the plain body but
// carries more than its encoding (a second gzip member, optional gzip
// header fields, a zstd skippable frame or a second frame, bytes after a
// brotli stream) is refused as one that fails verification: the replica
// counts it, encodes for itself, and serves only the encoding of the plain
// body.
func TestSharedUpgradeRefusesSmuggledBytes(t *testing.T) {
	for _, tc := range fleetVariants(t) {
		for _, s := range smuggles {
			if !strings.Contains(strings.Join(s.codings, " "), tc.coding) {
				continue
			}
			t.Run(tc.name+"/"+s.name, func(t *testing.T) {
				tc.wantRefused(t, func(v []byte) []byte { return s.rewrite(t, bytes.Clone(v)) })
			})
		}
	}
}
