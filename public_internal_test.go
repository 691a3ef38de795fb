package squeeze

import (
	"net/http"
	"testing"
)

func TestPublicResponseRefusesWhatIsPrivate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req, resp http.Header
		want      bool
	}{
		{"plain", nil, nil, true},
		{"max-age", nil, http.Header{"Cache-Control": {"max-age=60"}}, true},
		{"private", nil, http.Header{"Cache-Control": {"max-age=60, private"}}, false},
		{"private with fields", nil, http.Header{"Cache-Control": {`private="Set-Cookie"`}}, false},
		{"no-store", nil, http.Header{"Cache-Control": {"No-Store"}}, false},
		{"lower-case key", nil, http.Header{"cache-control": {"private"}}, false},
		{"set-cookie", nil, http.Header{"Set-Cookie": {"a=b"}}, false},
		{"set-cookie lower-case", nil, http.Header{"set-cookie": {"a=b"}}, false},
		{"vary star", nil, http.Header{"Vary": {"*"}}, false},
		{"authorization", http.Header{"Authorization": {"Bearer x"}}, nil, false},
		{"cookie", http.Header{"Cookie": {"s=1"}}, nil, false},
		{"cookie lower-case", http.Header{"cookie": {"s=1"}}, nil, false},
		{"cookie, public", http.Header{"Cookie": {"s=1"}}, http.Header{"Cache-Control": {"public, max-age=60"}}, true},
		{"authorization, s-maxage", http.Header{"Authorization": {"x"}}, http.Header{"Cache-Control": {"s-maxage=60"}}, false},
		{"authorization, must-revalidate", http.Header{"Authorization": {"x"}}, http.Header{"Cache-Control": {"must-revalidate"}}, false},
		{"cookie, public but private too", http.Header{"Cookie": {"s=1"}}, http.Header{"Cache-Control": {"public, private"}}, false},
		{"public, set-cookie", nil, http.Header{"Cache-Control": {"public"}, "Set-Cookie": {"a=b"}}, false},
		{"empty cookie line", http.Header{"Cookie": {}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := publicResponse(tc.req, tc.resp); got != tc.want {
				t.Errorf("publicResponse(%v, %v) = %v, want %v", tc.req, tc.resp, got, tc.want)
			}
		})
	}
}
