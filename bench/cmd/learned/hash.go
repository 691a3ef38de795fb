package main

import (
	"crypto/sha256"
	"encoding/base64"
)

// availableHash returns the base64 of dict's SHA-256, as Available-Dictionary
// carries it between colons.
func availableHash(dict []byte) string {
	h := sha256.Sum256(dict)
	return base64.StdEncoding.EncodeToString(h[:])
}
