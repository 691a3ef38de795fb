package decode_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

func newDecoders(t *testing.T, limits decode.Limits) *decode.Decoders {
	t.Helper()
	d, err := decode.New(limits)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// closeCounter is a body that counts its Closes.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestNewValidatesAndFillsInTheLimits(t *testing.T) {
	for _, l := range []decode.Limits{{}, {MaxSize: -1}, {MaxSize: 1, Memory: -1}, {MaxSize: 1, Wait: -1}} {
		if _, err := decode.New(l); err == nil {
			t.Errorf("New(%+v) accepted", l)
		}
	}
	d := newDecoders(t, decode.Limits{MaxSize: 1})
	if got, want := d.Limits(), (decode.Limits{MaxSize: 1, Memory: decode.DefaultMemory, Wait: decode.DefaultWait}); got != want {
		t.Errorf("Limits() = %+v, want %+v", got, want)
	}
	for _, c := range writers.Codings() {
		if !d.Undoes(c) {
			t.Errorf("no decoders for %s", c)
		}
	}
	if d.Undoes(decode.DCZ) || d.Undoes("x-gzip") {
		t.Error("Undoes a coding without a pool of its own")
	}
}

// A response body undoes a stack of codings, last applied first, and gives
// its budget back on Close, which closes the body that arrived once.
func TestResponseBodyUndoesAStackAndReleasesOnClose(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 64<<10)
	d := newDecoders(t, decode.Limits{MaxSize: 1 << 20})
	raw := &closeCounter{Reader: bytes.NewReader(testtool.Encode(t, writers.Zstd, testtool.Encode(t, writers.Gzip, plain)))}
	b := d.NewResponseBody(context.Background(), raw, []string{writers.Gzip, writers.Zstd}, decode.Dictionary{})
	got, err := io.ReadAll(io.LimitReader(b, int64(len(plain)/2)))
	if err != nil || !bytes.Equal(got, plain[:len(plain)/2]) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if d.Idle() {
		t.Error("the budget is idle while the body holds decoders")
	}
	if err := b.Close(); err != nil || raw.closed != 1 {
		t.Fatalf("Close: %v, the body that arrived closed %d times", err, raw.closed)
	}
	if !d.Idle() {
		t.Error("Close did not give the budget back")
	}
	if _, err := b.Read(make([]byte, 1)); err != http.ErrBodyReadAfterClose {
		t.Errorf("Read after Close: %v", err)
	}
	if err := b.Close(); err != nil || raw.closed != 1 {
		t.Errorf("second Close: %v, the body that arrived closed %d times", err, raw.closed)
	}
}

func TestResponseBodyErrorsSpeakOfTheResponse(t *testing.T) {
	d := newDecoders(t, decode.Limits{MaxSize: 100})
	big := testtool.Encode(t, writers.Gzip, make([]byte, 1000))
	b := d.NewResponseBody(context.Background(), io.NopCloser(bytes.NewReader(big)), []string{writers.Gzip}, decode.Dictionary{})
	_, err := io.ReadAll(b)
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 100 || !strings.Contains(err.Error(), "response body too large") {
		t.Errorf("over the cap: %v", err)
	}
	b = d.NewResponseBody(context.Background(), io.NopCloser(strings.NewReader("not gzip")), []string{writers.Gzip}, decode.Dictionary{})
	_, err = io.ReadAll(b)
	if !errors.Is(err, decode.ErrInvalidBody) || !strings.Contains(err.Error(), "invalid gzip response body") {
		t.Errorf("corrupt: %v", err)
	}
}

// dictStreams returns a dcz and a dcb stream of plain against dict, as a
// server sends them: the header naming dict, then the stream.
func dictStreams(t *testing.T, dict, plain []byte) map[string][]byte {
	t.Helper()
	hash := sha256.Sum256(dict)
	var z bytes.Buffer
	z.Write(cdt.Header(cdt.DCZ, hash))
	zw, err := zstd.NewWriter(&z, zstd.WithEncoderDictRaw(0, dict), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	prepared, err := brrr.PrepareDictionary(dict)
	if err != nil {
		t.Fatal(err)
	}
	var br bytes.Buffer
	br.Write(cdt.Header(cdt.DCB, hash))
	bw, err := brrr.NewWriterOptions(&br, 5, brrr.WriterOptions{Dictionaries: []*brrr.PreparedDictionary{prepared}, LGWin: 18})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{cdt.DCZ: z.Bytes(), cdt.DCB: br.Bytes()}
}

func TestResponseBodyUndoesDictionaryCodings(t *testing.T) {
	html := corpus.HTML(t)
	dict := corpus.Prefix(t, html, 32<<10)
	plain := append(bytes.Clone(dict[:16<<10]), "a new version"...)
	offered := decode.Dictionary{Data: dict, Hash: sha256.Sum256(dict)}
	other := decode.Dictionary{Data: []byte("another"), Hash: sha256.Sum256([]byte("another"))}
	d := newDecoders(t, decode.Limits{MaxSize: 1 << 20})
	for coding, stream := range dictStreams(t, dict, plain) {
		t.Run(coding, func(t *testing.T) {
			for _, tt := range []struct {
				name   string
				body   []byte
				dict   decode.Dictionary
				codec  error // wrapped beside ErrInvalidBody; nil: valid
				strict bool  // the codec error must be exactly codec
			}{
				{"the dictionary offered", stream, offered, nil, false},
				{"another dictionary", stream, other, cdt.ErrMismatch, true},
				{"not a header", append([]byte("XXXXXXXX"), stream[8:]...), offered, cdt.ErrHeader, true},
				{"empty", nil, offered, io.ErrUnexpectedEOF, true},
				{"header only", stream[:len(cdt.Header(coding, offered.Hash))], offered, io.ErrUnexpectedEOF, false},
				{"cut short", stream[:len(stream)-3], offered, io.ErrUnexpectedEOF, false},
				{"trailing data", append(bytes.Clone(stream), 0), offered, io.ErrUnexpectedEOF, false},
			} {
				raw := &closeCounter{Reader: bytes.NewReader(tt.body)}
				b := d.NewResponseBody(context.Background(), raw, []string{coding}, tt.dict)
				got, err := io.ReadAll(b)
				if tt.codec == nil {
					if err != nil || !bytes.Equal(got, plain) {
						t.Errorf("%s: %d bytes, %v; want the plain body", tt.name, len(got), err)
					}
				} else if !errors.Is(err, decode.ErrInvalidBody) || tt.strict && !errors.Is(err, tt.codec) {
					t.Errorf("%s: %v; want ErrInvalidBody wrapping %v", tt.name, err, tt.codec)
				}
				_ = b.Close()
				if raw.closed != 1 {
					t.Errorf("%s: the body that arrived closed %d times", tt.name, raw.closed)
				}
			}
			if !d.Idle() {
				t.Error("the budget is not idle once every body is closed")
			}
		})
	}
}

// A body that finds the budget spent for the whole wait fails with ErrBusy;
// one whose context ends first too.
func TestBodiesFailBusyWhenTheBudgetStaysSpent(t *testing.T) {
	d := newDecoders(t, decode.Limits{MaxSize: 1 << 20, Memory: 1, Wait: time.Millisecond})
	plain := []byte("hello, hello")
	first := d.NewResponseBody(context.Background(), io.NopCloser(bytes.NewReader(testtool.Encode(t, writers.Gzip, plain))), []string{writers.Gzip}, decode.Dictionary{})
	if _, err := first.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	second := d.NewResponseBody(context.Background(), io.NopCloser(bytes.NewReader(testtool.Encode(t, writers.Gzip, plain))), []string{writers.Gzip}, decode.Dictionary{})
	if _, err := second.Read(make([]byte, 1)); !errors.Is(err, decode.ErrBusy) {
		t.Errorf("with the budget spent: %v, want ErrBusy", err)
	}
	first.Close()
	second.Close()
	third := d.NewResponseBody(context.Background(), io.NopCloser(bytes.NewReader(testtool.Encode(t, writers.Gzip, plain))), []string{writers.Gzip}, decode.Dictionary{})
	if got, err := io.ReadAll(third); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("once the budget is back: %q, %v", got, err)
	}
}

// Request reports each decoded body once, when its decoders go back: the
// codings as Content-Encoding named them, and the bytes on both sides.
func TestRequestReportsEachBodyOnce(t *testing.T) {
	plain := corpus.Prefix(t, corpus.JSON(t), 8<<10)
	body := testtool.Encode(t, writers.Zstd, testtool.Encode(t, writers.Gzip, plain))
	d := newDecoders(t, decode.Limits{MaxSize: 1 << 20})
	var got []decode.Stats
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	var cs decode.Codings
	for _, c := range []string{"x-gzip", "zstd"} {
		if !cs.Add(c) {
			t.Fatalf("Add(%q) refused", c)
		}
	}
	r2, release, ok := d.Request(httptest.NewRecorder(), r, &cs, func(st decode.Stats) { got = append(got, st) })
	if !ok {
		t.Fatal("refused")
	}
	if b, err := io.ReadAll(r2.Body); err != nil || !bytes.Equal(b, plain) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	release()
	if len(got) != 1 {
		t.Fatalf("%d reports, want 1", len(got))
	}
	if st := got[0]; st.Coding != "gzip, zstd" || st.Decoded != int64(len(plain)) || st.Compressed != int64(len(body)) || st.Elapsed <= 0 {
		t.Errorf("reported %+v; want gzip, zstd, %d decoded from %d", st, len(plain), len(body))
	}
}

func TestCodingsRefuseWhatCannotBeUndone(t *testing.T) {
	for _, tt := range []struct {
		tokens []string
		added  int // Adds that report true
	}{
		{[]string{"gzip", "br"}, 2},
		{[]string{"gzip", "br", "zstd"}, 2},
		{[]string{"compress"}, 0},
		{[]string{"gzip", "dcz"}, 1},
	} {
		var cs decode.Codings
		n := 0
		for _, token := range tt.tokens {
			if !cs.Add(token) {
				break
			}
			n++
		}
		if n != tt.added {
			t.Errorf("%q: %d added, want %d", tt.tokens, n, tt.added)
		}
	}
}

// An empty body claiming a coding reaches the handler, whose Read fails
// with ErrInvalidBody; closing it does nothing.
func TestRequestWithAnEmptyEncodedBodyFailsOnRead(t *testing.T) {
	d := newDecoders(t, decode.Limits{MaxSize: 1 << 20})
	var cs decode.Codings
	cs.Add("br")
	r2, release, ok := d.Request(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", http.NoBody), &cs, nil)
	if !ok || release != nil {
		t.Fatalf("ok %v, release %v", ok, release != nil)
	}
	if _, err := r2.Body.Read(make([]byte, 1)); !errors.Is(err, decode.ErrInvalidBody) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Read: %v", err)
	}
	if err := r2.Body.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
