package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// decodeErr decodes b with an independent reference decoder of coding;
// "" returns b as it is.
func decodeErr(coding string, b []byte) ([]byte, error) {
	switch coding {
	case "":
		return b, nil
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case "br":
		return io.ReadAll(brotli.NewReader(bytes.NewReader(b)))
	}
	d, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}
