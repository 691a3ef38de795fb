package squeeze

import (
	"bytes"
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
				w.Header().Set("Cache-Control", "max-age=3600") // fresh, to be kept as a dictionary
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

// Bodies being collected to remember hold at most half the store's budget,
// however many slow clients there are: reservations past it are refused
// rather than evicting the dictionaries held.
func TestDictionaryCapturesHoldAtMostHalfTheBudget(t *testing.T) {
	const budget = 4 << 20
	m, err := New(WithDictionaryMatch("/js/*"), WithDictionaryStoreSize(budget))
	if err != nil {
		t.Fatal(err)
	}
	s := m.dicts
	const held = 12
	for i := range held {
		body := bytes.Repeat([]byte{byte('a' + i)}, int(s.maxBody/8))
		s.remember(body, "/js/*", true, fromResponse, 0)
	}
	if n := s.remembered.Len(); n != held {
		t.Fatalf("%d dictionaries held, want %d", n, held)
	}
	reserved := 0
	for s.reserve(s.maxBody / 4) {
		reserved++
		if reserved > 100 {
			t.Fatal("reservations never refused")
		}
	}
	if got, limit := int64(reserved)*(s.maxBody/4), 2*s.maxBody; got > limit {
		t.Errorf("captures hold %d bytes, more than half the budget (%d)", got, limit)
	}
	if n := s.remembered.Len(); n < held/2 {
		t.Errorf("captures evicted %d of %d dictionaries, want at most half", held-n, held)
	}
	s.release(int64(reserved) * (s.maxBody / 4))
	if !s.reserve(s.maxBody) {
		t.Error("a reservation after the others were released is refused")
	}
}
