package squeeze

import "testing"

// TestVerdictForAFile drives the decision with the facts of a FileServer
// file: the reasons a file goes out plain are the Middleware's, in the
// Middleware's order, and a file's own (its siblings, its store's limit,
// an encoding that did not help) are cases of the same switch.
func TestVerdictForAFile(t *testing.T) {
	m := MustNew(WithBufferSize(4096), WithMinSize(100))
	file := func(edit func(*facts)) facts {
		f := facts{
			responseFields: responseFields{contentType: "text/javascript", typed: true, eligible: true, declared: 20000},
			status:         200, event: atFile, offered: true, storeLimit: 100000,
		}
		edit(&f)
		return f
	}
	tests := []struct {
		name string
		f    facts
		want verdict
		why  Reason
	}{
		{"encoded", file(func(*facts) {}), sendEncoded, reasonNone},
		{"longer than the buffer, encoded whole", file(func(f *facts) { f.declared = 50000 }), sendEncoded, reasonNone},
		{"HEAD, encoded", file(func(f *facts) { f.head = true }), sendEncoded, reasonNone},
		{"image", file(func(f *facts) { f.eligible = false }), sendPlain, ReasonContentType},
		{"image with siblings not accepted", file(func(f *facts) { f.eligible, f.siblings, f.offered = false, true, false }), sendPlain, ReasonNotAccepted},
		{"image's sibling", file(func(f *facts) { f.eligible, f.siblings, f.precoded = false, true, true }), sendEncoded, reasonNone},
		{"small file's sibling", file(func(f *facts) { f.declared, f.siblings, f.precoded = 10, true, true }), sendEncoded, reasonNone},
		{"range", file(func(f *facts) { f.ranged, f.offered = true, false }), sendPlain, ReasonRange},
		{"image, range", file(func(f *facts) { f.eligible, f.ranged = false, true }), sendPlain, ReasonContentType},
		{"client accepts nothing", file(func(f *facts) { f.offered = false }), sendPlain, ReasonNotAccepted},
		{"too small", file(func(f *facts) { f.declared = 10 }), sendPlain, ReasonTooSmall},
		{"too small, client accepts nothing", file(func(f *facts) { f.declared, f.offered = 10, false }), sendPlain, ReasonNotAccepted},
		{"empty", file(func(f *facts) { f.declared = 0 }), sendPlain, ReasonTooSmall},
		{"longer than the store keeps", file(func(f *facts) { f.declared = 100001 }), sendPlain, ReasonTooLarge},
		{"as long as the store keeps", file(func(f *facts) { f.declared = 100000 }), sendEncoded, reasonNone},
		{"a store that keeps nothing", file(func(f *facts) { f.storeLimit = -200 }), sendPlain, ReasonTooLarge},
		{"a response longer than any store", facts{responseFields: responseFields{contentType: "text/html", typed: true, eligible: true, declared: 1 << 40}, status: 200, offered: true}, sendEncoded, reasonNone},
		{"no gain", file(func(f *facts) { f.noGain = true }), sendPlain, ReasonNoGain},
		{"no room in the store's budget", file(func(f *facts) { f.noRoom = true }), sendPlain, ReasonNoRoom},
		{"not modified", file(func(f *facts) { f.status = 304 }), sendPlain, ReasonStatus},
		{"partial", file(func(f *facts) { f.status = 206 }), sendPlain, ReasonPartial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why, _ := m.decide(&tt.f)
			if v != tt.want || why != tt.why {
				t.Errorf("decide = %d, %q; want %d, %q", v, why, tt.want, tt.why)
			}
		})
	}
}
