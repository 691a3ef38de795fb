package testtool_test

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

func TestReadEventReadsToTheBlankLine(t *testing.T) {
	lines := bufio.NewReader(strings.NewReader("event:tick\ndata:0\n\ndata: 1\n\ndata: cut"))
	for _, want := range []struct {
		event string
		err   error
	}{{"event:tick\ndata:0\n\n", nil}, {"data: 1\n\n", nil}, {"data: cut", io.EOF}} {
		if got, err := testtool.ReadEvent(lines); got != want.event || err != want.err {
			t.Errorf("ReadEvent = %q, %v; want %q, %v", got, err, want.event, want.err)
		}
	}
}
