package squeeze

import (
	"bytes"
	"testing"

	"github.com/squeezehttp/squeeze/writers"
)

// FuzzCanonicalFraming runs the header checks of the fleet's encodings on
// any bytes: they never panic nor read out of bounds, and a zstd frame
// they accept ends exactly where the value does, as writers' encoder makes
// it.
func FuzzCanonicalFraming(f *testing.F) {
	for _, coding := range []string{Zstd, Gzip} {
		enc, err := writers.NewEncoder(coding, 3)
		if err != nil {
			f.Fatal(err)
		}
		var out bytes.Buffer
		enc.Reset(&out)
		_, _ = enc.Write(bytes.Repeat([]byte("canonical "), 300))
		_ = enc.Close()
		f.Add(out.Bytes())
	}
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, coding := range []string{Gzip, Zstd, DCZ, Brotli, DCB} {
			canonicalFraming(coding, b)
		}
		if zstdOneFrame(b) && zstdOneFrame(append(bytes.Clone(b), 0)) {
			t.Fatalf("a frame and a frame with a byte after it both pass: % x", b)
		}
	})
}
