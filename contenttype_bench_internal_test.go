package squeeze

import "testing"

// BenchmarkMatchTypesDefault matches response types against the default
// list: one that matches early, one that matches last and one that
// matches nothing, which scans the whole list.
func BenchmarkMatchTypesDefault(b *testing.B) {
	patterns := DefaultContentTypes()
	for i, p := range patterns {
		patterns[i], _ = parseTypePattern(p)
	}
	types := compileTypes(patterns)
	for _, ct := range []string{"text/html; charset=utf-8", "application/vnd.ms-fontobject", "image/png"} {
		b.Run("type="+ct, func(b *testing.B) {
			for b.Loop() {
				matchTypes(types, ct)
			}
		})
	}
}
