package squeeze

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// readRequestHeader walks small headers and looks fields up in large ones:
// both ways must find exactly what look-ups find.
func TestReadRequestFindsWhatLookUpsFind(t *testing.T) {
	fields := map[string][]string{
		"Content-Encoding": {"gzip"},
		"Upgrade":          {"websocket"},
		"Connection":       {"Upgrade"},
		"Range":            {"bytes=0-9"},
		"Accept-Encoding":  {"br, gzip", "zstd"},
		"If-None-Match":    {`"a"`},
		"If-Match":         {`"b"`},
	}
	for extra := 0; extra <= 12; extra += 3 {
		for _, present := range []int{0, 1, 3, 7} {
			h := http.Header{}
			i := 0
			for k, v := range fields {
				if i == present {
					break
				}
				h[k] = v
				i++
			}
			for j := range extra {
				h[fmt.Sprintf("X-Other-%d", j)] = []string{"1"}
			}
			// A lower-case key is not a canonical one, which neither way
			// finds, as net/http never leaves one in a request.
			h["accept-encoding"] = []string{"identity"}
			want := requestHeader{
				contentEncoding: h["Content-Encoding"], upgrade: h["Upgrade"], connection: h["Connection"],
				ranges: h["Range"], acceptEncoding: h["Accept-Encoding"],
				ifNoneMatch: h["If-None-Match"], ifMatch: h["If-Match"],
			}
			if got := readRequestHeader(h); !reflect.DeepEqual(got, want) {
				t.Errorf("%d keys: readRequestHeader = %+v, want %+v", len(h), got, want)
			}
		}
	}
}
