package squeeze

import (
	"bytes"
	"io"
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
		d, plain := scriptVersions(size)
		for _, coding := range []string{DCB, DCZ} {
			var encoded bytes.Buffer
			for _, level := range upgradeLevels(coding, upgradeLevel(coding)) {
				claim := upgradeEncoderMemory(coding, level, d)
				total, held := allocated(claim, &encoded, func() any {
					enc, err := newUpgradeEncoder(coding, level, d)
					if err != nil {
						t.Fatal(err)
					}
					enc.Reset(&encoded)
					writeAndClose(t, enc, plain)
					return enc
				})
				t.Logf("%d KiB %s-%d: %.1f MiB allocated, %.1f MiB held; claims %.1f MiB",
					size>>10, coding, level, float64(total)/MiB, float64(held)/MiB, float64(claim)/MiB)
				if total > claim {
					t.Errorf("%d KiB %s-%d allocates %.1f MiB; an upgrade claims %.1f MiB for it",
						size>>10, coding, level, float64(total)/MiB, float64(claim)/MiB)
				}
			}
			claim := deltaDecoderMemory(coding, d, int64(len(plain))) + upgradeChunk
			total, _ := allocated(claim, nil, func() any {
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
			t.Logf("%d KiB %s decoder: %.1f MiB allocated; claims %.1f MiB", size>>10, coding, float64(total)/MiB, float64(claim)/MiB)
			if total > claim {
				t.Errorf("a %d KiB %s decoder allocates %.1f MiB; an upgrade claims %.1f MiB", size>>10, coding, float64(total)/MiB, float64(claim)/MiB)
			}
		}
	}
}
