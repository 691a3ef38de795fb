package squeeze

import (
	"bytes"
	"crypto/sha256"
	"io"
	"strconv"
	"strings"
	"testing"
)

// The budget an upgrade claims for a delta's encoder and decoder bounds all
// they allocate, the dictionary's tables and the window included, for
// dictionaries small and large and at every level an upgrade tries.
func TestUpgradeDeltaCodecMemoryIsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	const MiB = 1 << 20
	for _, size := range []int{16 << 10, 256 << 10, 2 << 20} {
		var b strings.Builder
		for i := 0; b.Len() < size; i++ {
			b.WriteString("line " + strconv.Itoa(i*7919%100003) + " of a script that compresses\n")
		}
		dict := []byte(b.String()[:size])
		plain := bytes.Clone(dict)
		for i := len(plain) / 7; i < len(plain); i += len(plain) / 7 {
			copy(plain[i:], "a change of the next version")
		}
		d := &dictionary{hash: sha256.Sum256(dict), data: dict}
		for _, coding := range []string{DCB, DCZ} {
			var encoded bytes.Buffer
			for _, level := range upgradeLevels(coding, upgradeLevel(coding)) {
				encoded.Reset()
				total, held := allocated(func() any {
					enc, err := newUpgradeEncoder(coding, level, d)
					if err != nil {
						t.Fatal(err)
					}
					enc.Reset(&encoded)
					if _, err := enc.Write(plain); err != nil {
						t.Fatal(err)
					}
					if err := enc.Close(); err != nil {
						t.Fatal(err)
					}
					return enc
				})
				total -= int64(encoded.Cap())
				claim := upgradeEncoderMemory(coding, level, d)
				t.Logf("%d KiB %s-%d: %.1f MiB allocated, %.1f MiB held; claims %.1f MiB",
					size>>10, coding, level, float64(total)/MiB, float64(held)/MiB, float64(claim)/MiB)
				if total > claim {
					t.Errorf("%d KiB %s-%d allocates %.1f MiB; an upgrade claims %.1f MiB for it",
						size>>10, coding, level, float64(total)/MiB, float64(claim)/MiB)
				}
			}
			total, _ := allocated(func() any {
				dec, done, err := newDeltaDecoder(coding, encoded.Bytes(), d)
				if err != nil {
					t.Fatal(err)
				}
				defer done()
				buf := make([]byte, upgradeChunk)
				n := 0
				for {
					k, err := io.ReadFull(dec, buf)
					n += k
					if err != nil {
						break
					}
				}
				if n != len(plain) {
					t.Fatalf("decoded %d bytes, want %d", n, len(plain))
				}
				return nil
			})
			claim := deltaDecoderMemory(coding, d, int64(len(plain))) + upgradeChunk
			t.Logf("%d KiB %s decoder: %.1f MiB allocated; claims %.1f MiB", size>>10, coding, float64(total)/MiB, float64(claim)/MiB)
			if total > claim {
				t.Errorf("a %d KiB %s decoder allocates %.1f MiB; an upgrade claims %.1f MiB", size>>10, coding, float64(total)/MiB, float64(claim)/MiB)
			}
		}
	}
}
