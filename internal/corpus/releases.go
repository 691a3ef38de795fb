package corpus

import (
	"embed"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// releases holds real release pairs from npm, MIT-licensed (see
// testdata/releases/LICENSE), compressed with zstd.
//
//go:embed testdata/releases/*.zst
var releases embed.FS

// Release is one version of a published file and the one before it: what a
// returning client holds as a dictionary, and what it fetches next.
type Release struct {
	Name     string // "react-dom" or "lodash"
	Old, New []byte
}

// Releases returns the release pairs: react-dom's UMD production build
// 18.2.0 and 18.3.1 (about 129 KiB each), and lodash.min.js 4.17.15 and
// 4.17.21 (about 72 KiB each), as npm pack fetches them.
func Releases(tb testing.TB) []Release {
	tb.Helper()
	return []Release{
		{"react-dom", release(tb, "react-dom-18.2.0.production.min.js"), release(tb, "react-dom-18.3.1.production.min.js")},
		{"lodash", release(tb, "lodash-4.17.15.min.js"), release(tb, "lodash-4.17.21.min.js")},
	}
}

func release(tb testing.TB, name string) []byte {
	tb.Helper()
	z, err := releases.ReadFile("testdata/releases/" + name + ".zst")
	if err != nil {
		tb.Fatalf("corpus: %v", err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		tb.Fatalf("corpus: zstd decoder: %v", err)
	}
	defer d.Close()
	out, err := d.DecodeAll(z, nil)
	if err != nil {
		tb.Fatalf("corpus: decoding %s: %v", name, err)
	}
	return out
}
