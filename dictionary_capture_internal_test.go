package squeeze

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A body collected to remember holds its reservation of the dictionary
// store's budget only while its response runs: however the response ends,
// remembered, cut short, of the wrong length or too long to remember, the
// store holds no reservation after it.
func TestDictionaryCaptureReleasesItsReservationWhateverTheEnd(t *testing.T) {
	const budget = 1 << 20
	body := strings.Repeat("squeeze dictionary capture 0123456789\n", 4<<10) // ~152 KiB, several growths
	for _, tc := range []struct {
		name     string
		declared int  // Content-Length set, 0 for none
		size     int  // bytes written
		panics   bool // the handler panics after writing
		stored   bool // a dictionary is remembered
	}{
		{"streamed and remembered", 0, len(body), false, true},
		{"declared and remembered", len(body), len(body), false, true},
		{"cut short by a panic", 0, len(body), true, false},
		{"shorter than declared", len(body), len(body) / 2, false, false},
		{"longer than the store takes", 0, budget/4 + 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(WithDictionaryMatch("/js/*"), WithDictionaryStoreSize(budget))
			if err != nil {
				t.Fatal(err)
			}
			long := strings.Repeat(body, budget/len(body)+1)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/javascript")
				if tc.declared > 0 {
					w.Header().Set("Content-Length", strconv.Itoa(tc.declared))
				}
				for p := long[:tc.size]; len(p) > 0; {
					n := min(len(p), 8<<10)
					_, _ = w.Write([]byte(p[:n]))
					p = p[n:]
				}
				if tc.panics {
					panic(http.ErrAbortHandler)
				}
			}))
			func() {
				defer func() { _ = recover() }()
				req := httptest.NewRequest(http.MethodGet, "/js/app.js", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				h.ServeHTTP(httptest.NewRecorder(), req)
			}()
			s := m.dicts
			s.mu.Lock()
			reserved, stored := s.remembered.Reserved(), s.remembered.Len()
			s.mu.Unlock()
			if reserved != 0 || (stored == 1) != tc.stored {
				t.Errorf("after the response the store reserves %d bytes and holds %d dictionaries; want 0 and stored=%v", reserved, stored, tc.stored)
			}
		})
	}
}
