package squeeze

import (
	"bytes"
	"crypto/sha256"
)

// BestDelta returns plain encoded as coding (dcz or dcb) against dict at
// the level the cache's upgrades use: what an upgraded delta must be.
func BestDelta(coding string, dict, plain []byte) ([]byte, error) {
	d := &dictionary{hash: sha256.Sum256(dict), data: dict}
	enc, err := newUpgradeEncoder(coding, upgradeLevel(coding), d)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc.Reset(&out)
	if _, err := enc.Write(plain); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
