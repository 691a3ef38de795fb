package squeeze

import "testing"

// Every best-level encoding is made at BestLevel of the codec it runs on,
// by the Cache's upgrades and the FileServer's, deltas included, so that
// both name one encoding alike in a fleet's store; an encoding at that
// level or above (zstd 20 to 22 encode as 19) is at its best and is not
// encoded again.
func TestUpgradesEncodeAtBestLevel(t *testing.T) {
	for _, tt := range []struct {
		coding string
		want   int
	}{
		{Brotli, 11}, {Zstd, 19}, {Gzip, 9}, {Deflate, 9}, {DCB, 11}, {DCZ, 19},
	} {
		if got := upgradeLevel(tt.coding); got != tt.want {
			t.Errorf("upgradeLevel(%q) = %d, want %d", tt.coding, got, tt.want)
		}
		if got, best := upgradeLevel(tt.coding), BestLevel(deltaCodec(tt.coding)); got != best {
			t.Errorf("upgradeLevel(%q) = %d, BestLevel(%q) = %d", tt.coding, got, deltaCodec(tt.coding), best)
		}
		if !reachedBest(tt.coding, tt.want) || reachedBest(tt.coding, tt.want-1) {
			t.Errorf("%s: reachedBest does not start at level %d", tt.coding, tt.want)
		}
		if levels := upgradeLevels(tt.coding, upgradeLevel(tt.coding)); levels[0] != tt.want {
			t.Errorf("upgradeLevels(%q) = %v, want %d first", tt.coding, levels, tt.want)
		}
	}
	if !reachedBest(Zstd, 22) {
		t.Error("zstd 22 is short of the best")
	}
}
