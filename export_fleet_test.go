package squeeze

import (
	"crypto/sha256"

	"github.com/squeezehttp/squeeze/internal/storeguard"
)

// BestDelta returns plain encoded as coding (dcz or dcb) against dict at
// the level the cache's upgrades use: what an upgraded delta must be.
func BestDelta(coding string, dict, plain []byte) ([]byte, error) {
	return EncodeDelta(coding, UpgradeLevel(coding), dict, plain)
}

// UpgradeLevel is the level the cache's upgrades use for coding.
var UpgradeLevel = upgradeLevel

// EncodeDelta returns plain encoded as coding (dcz or dcb) against dict
// at level, as an upgrade's encoder makes it.
func EncodeDelta(coding string, level int, dict, plain []byte) ([]byte, error) {
	d := &dictionary{hash: sha256.Sum256(dict), data: dict}
	enc, err := newUpgradeEncoder(coding, level, d)
	if err != nil {
		return nil, err
	}
	return encodeOnce(enc, plain)
}

// SharedAdmitAfterDefault is SharedAdmitAfter's default.
const SharedAdmitAfterDefault = storeguard.DefaultAdmitAfter
