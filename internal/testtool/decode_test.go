package testtool_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// encode compresses b for coding with the libraries' own encoders.
func encode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	return testtool.Encode(t, coding, b)
}

func TestReferenceDecodersReadEachCoding(t *testing.T) {
	want := []byte(strings.Repeat("testtool decodes what the libraries encode\n", 200))
	for _, coding := range []string{"gzip", "deflate", "zstd", "br"} {
		t.Run(coding, func(t *testing.T) {
			enc := encode(t, coding, want)
			if got := testtool.Decode(t, coding, enc); !bytes.Equal(got, want) {
				t.Errorf("Decode: %d bytes, want %d", len(got), len(want))
			}
			r, err := testtool.NewReader(coding, bytes.NewReader(enc))
			if err != nil {
				t.Fatal(err)
			}
			prefix := make([]byte, 100)
			if _, err := io.ReadFull(r, prefix); err != nil || !bytes.Equal(prefix, want[:100]) {
				t.Errorf("NewReader: first 100 bytes %q, %v", prefix, err)
			}
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := testtool.TryDecode(coding, enc[:len(enc)/2]); err == nil {
				t.Errorf("TryDecode of a truncated stream succeeded")
			}
			if _, _, ok := testtool.DecodeCommand(coding); !ok {
				return // deflate: no reference program
			}
			if got := testtool.DecodeCLI(t, coding, enc); !bytes.Equal(got, want) {
				t.Errorf("DecodeCLI: %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func TestIdentityAndUnknownCodings(t *testing.T) {
	if got := testtool.Decode(t, "", []byte("plain")); string(got) != "plain" {
		t.Errorf("identity decodes to %q", got)
	}
	if _, err := testtool.NewReader("compress", strings.NewReader("")); err == nil {
		t.Error("NewReader accepted an unknown coding")
	}
}
