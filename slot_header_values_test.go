package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Each response owns the backing arrays of the header values the middleware
// sets (slot.go, headerValues): an in-place write into one response's
// values reaches no other response, on the wire or under -race.

// lowerInPlace is what a careless access logger (or a header-normalising
// middleware) does to the header map of its own response once the response
// is over: it rewrites the values where they are, the common Go idiom for
// editing a slice it owns. Every value the middleware sets is the
// response's own, so this can touch no other response.
func lowerInPlace(h http.Header) {
	for _, v := range h {
		for i := range v {
			v[i] = strings.ToLower(v[i])
		}
	}
}

// Response B is served right after A, by the same slot, with the same body;
// B's owner then edits B's own map in place (slices.DeleteFunc, which zeroes
// what it removes, or a plain v[i] = ...). A's kept map must not change: a
// slice shared between them would show B's edits, "Vary: " empty and lower-
// cased values. Every pair served back to back by one slot would show it;
// under -race sync.Pool drops some Puts, hence the pairs.
func TestInPlaceEditOfOneResponseLeavesAnotherUnchanged(t *testing.T) {
	m := newMiddleware(t)
	body := textBody(41, 4000)
	h := m.Handler(writeText("text/plain", body, 0))
	for round := range 40 {
		a := serve(h, http.MethodGet, "gzip")
		b := serve(h, http.MethodGet, "gzip")
		want := http.Header{}
		for _, k := range []string{"Content-Encoding", "Vary", "Content-Length"} {
			want[k] = slices.Clone(a.Header()[k])
		}
		if want.Get("Content-Encoding") != "gzip" || want.Get("Content-Length") == "" || want.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("response A was not encoded whole: %v", a.Header())
		}
		// B's owner, done with B, edits B's own map.
		bh := b.Header()
		bh["Vary"] = slices.DeleteFunc(bh["Vary"], func(s string) bool { return strings.EqualFold(s, "accept-encoding") })
		bh["Content-Length"][0] = "0"
		lowerInPlace(bh)
		got := http.Header{}
		for k := range want {
			got[k] = a.Header()[k]
		}
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("round %d: editing response B's own header map changed response A's %s from %q to %q (A: %v)",
					round, k, want[k], got[k], a.Header())
			}
		}
	}
}

// An access logger that takes each response's header map once the response is
// over and, on its own goroutine, lower-cases the values in place races with
// no later request and changes no later response. Any read of a value the
// slot still shares is a race: this test fails under -race only; without it a
// race is there but not reported.
func TestInPlaceEditAfterResponseRacesNoLaterRequest(t *testing.T) {
	if !squeeze.RaceEnabled {
		t.Skip("the race needs -race to be reported")
	}
	m := newMiddleware(t)
	body := textBody(42, 4000)
	inner := m.Handler(writeText("text/plain", body, 0))
	logs := make(chan http.Header, 16)
	var logger sync.WaitGroup
	logger.Add(1)
	go func() {
		defer logger.Done()
		for h := range logs {
			lowerInPlace(h)
		}
	}()
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		logs <- w.Header()
	})
	for range 200 {
		rec := httptest.NewRecorder()
		outer.ServeHTTP(rec, request(http.MethodGet, "gzip"))
		if v := rec.Result().Header.Get("Vary"); v != "Accept-Encoding" {
			t.Errorf("Vary on the wire: %q, want Accept-Encoding", v)
			break
		}
	}
	close(logs)
	logger.Wait()
}

// hookedWriter is an outer writer that runs before just as the status line
// goes out: the moment at which a goroutine running elsewhere (here, the
// owner of an earlier response) happens to act, made deterministic.
type hookedWriter struct {
	*httptest.ResponseRecorder
	before func()
}

func (w hookedWriter) WriteHeader(code int) {
	if w.before != nil {
		w.before()
	}
	w.ResponseRecorder.WriteHeader(code)
}

// An earlier response's owner (A's access logger) rewrites A's own Content-
// Length and Vary in place while response B, served by the same slot with the
// same length, is between setLength and its status line: B goes out with its
// own values (with shared slices it would go out with "Content-Length: 1" for
// a 1.4 KB gzip body and "Vary: *"). The interleaving is forced with a hook
// in B's writer; with net/http it is two goroutines racing (see
// TestInPlaceEditAfterResponseRacesNoLaterRequest).
func TestEarlierResponseEditDoesNotGoOutWithLaterResponse(t *testing.T) {
	m := newMiddleware(t)
	body := textBody(43, 4000)
	h := m.Handler(writeText("text/plain", body, 0))
	for round := range 40 {
		a := serve(h, http.MethodGet, "gzip")
		wantLength := a.Header().Get("Content-Length")
		if a.Header().Get("Content-Encoding") != "gzip" || wantLength == "" {
			t.Fatalf("response A was not encoded whole: %v", a.Header())
		}
		b := hookedWriter{ResponseRecorder: httptest.NewRecorder()}
		b.before = func() {
			// A's logger, elsewhere, with A's own map.
			a.Header()["Content-Length"][0] = "1"
			a.Header()["Vary"][0] = "*"
		}
		h.ServeHTTP(b, request(http.MethodGet, "gzip"))
		res := b.Result()
		if got := res.Header.Get("Content-Length"); got != wantLength || got != strconv.Itoa(b.Body.Len()) {
			t.Fatalf("round %d: response B went out with Content-Length %q for a %d-byte body (A's was %q); header %v",
				round, got, b.Body.Len(), wantLength, res.Header)
		}
		if got := res.Header.Get("Vary"); got != "Accept-Encoding" {
			t.Fatalf("round %d: response B went out with Vary %q", round, got)
		}
	}
}
