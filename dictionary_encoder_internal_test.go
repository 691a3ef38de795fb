package squeeze

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"weak"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// largeDeltaDictionary returns a dictionary of about 1.5 MiB, past
// dczHistoryMax, with pages of a site at its start, across the start of
// its last dczHistoryMax bytes and near its end, random bytes between
// them, and a response made of pieces of those pages.
func largeDeltaDictionary() (dict, body []byte) {
	rng := rand.New(rand.NewPCG(3, 5))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	first, boundary, last := deltaBenchPage(1), deltaBenchPage(2), deltaBenchPage(3)
	const size = 1<<20 + 512<<10
	dict = append(dict, first...)
	// boundary straddles the start of the tail the encoder is given.
	dict = append(dict, random(size-dczHistoryMax-len(boundary)/2-len(dict))...)
	dict = append(dict, boundary...)
	dict = append(dict, random(size-len(last)-4096-len(dict))...)
	dict = append(dict, last...)
	dict = append(dict, random(4096)...)
	body = append(body, last[:20000]...)
	body = append(body, boundary...)
	body = append(body, first[:20000]...)
	body = append(body, last[20000:]...)
	return dict, body
}

// A dcz response against a learned dictionary larger than dczHistoryMax is
// coded against the dictionary's tail only, and decodes to the response with the
// whole dictionary, as a client holds it: with klauspost/compress's decoder
// at the window RFC 9842 obliges clients to accept (testtool's), and with
// the zstd CLI given the whole dictionary (`zstd -d -D`), for matches near
// the dictionary's end, across the start of the tail, and of content only
// the part before the tail holds.
func TestDCZHistoryDecodesWithWholeDictionary(t *testing.T) {
	dict, body := largeDeltaDictionary()
	s, err := newDictStore(&config{dictMatch: []string{"/*"}, dictStoreSize: 64 << 20}, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	d := &dictionary{hash: sha256.Sum256(dict), data: dict, static: true, learned: true}
	if len(dict) != 1<<20+512<<10 || len(dczHistory(d)) != dczHistoryMax {
		t.Fatalf("dictionary of %d bytes, history %d", len(dict), len(dczHistory(d)))
	}
	o := s.offerFor(d, DCZ)
	if o == nil {
		t.Fatal("no dcz offer")
	}
	var out bytes.Buffer
	e, err := o.encoders.Get(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.encoders.Put(e)
	delta := out.Bytes()

	// The frame is the one an encoder given only the tail writes.
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(dczWindow(dczHistoryMax)), zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true),
		zstd.WithEncoderDictRaw(0, dict[len(dict)-dczHistoryMax:]))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	zw.Reset(&want)
	_, _ = zw.Write(body)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(delta[40:], want.Bytes()) {
		t.Fatalf("the dcz frame (%d bytes) is not the frame of an encoder given the dictionary's last %d bytes (%d)", len(delta)-40, dczHistoryMax, want.Len())
	}
	if len(delta) > len(body)/2 {
		t.Fatalf("the delta takes %d bytes for %d: the tail's pages were not matched", len(delta), len(body))
	}

	got, err := testtool.DecodeDictionary(DCZ, delta, dict)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("klauspost/compress with the whole dictionary: %d bytes, %v; want the %d-byte body", len(got), err, len(body))
	}
	zstdCLI := testtool.Require(t, "zstd")
	dictFile := filepath.Join(t.TempDir(), "dictionary")
	if err := os.WriteFile(dictFile, dict, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(zstdCLI, "-d", "-c", "-q", "-D", dictFile)
	cmd.Stdin = bytes.NewReader(delta[40:])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err = cmd.Output()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("zstd -d -D with the whole dictionary: %d bytes, %v %s; want the %d-byte body", len(got), err, stderr.String(), len(body))
	}
}

// A dcz response against a dictionary that is not learned, an earlier
// version of the resource, is coded against all of it, however large: its
// content lies at the distance of the whole dictionary, which a tail would
// lose (a 1.2 MiB release with a few words changed: hundreds of bytes
// against all of it, 180 KB against its last 512 KiB).
func TestDCZVersionDictionaryIsGivenWhole(t *testing.T) {
	var v1 []byte
	for i := 0; len(v1) < 1200<<10; i++ {
		v1 = append(v1, deltaBenchPage(i)...)
	}
	v2 := append([]byte(nil), v1...)
	for i := 1000; i < len(v2); i += 50000 {
		copy(v2[i:], "CHANGED")
	}
	s, err := newDictStore(&config{dictMatch: []string{"/*"}, dictStoreSize: 64 << 20}, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	d := s.insert(&dictionary{hash: sha256.Sum256(v1), data: v1}, int64(cap(v1))+dictEntryBytes, 0)
	if h := dczHistory(d); len(h) != len(v1) {
		t.Fatalf("a remembered dictionary of %d bytes is given %d", len(v1), len(h))
	}
	o := s.offerFor(d, DCZ)
	if o == nil {
		t.Fatal("no dcz offer")
	}
	var out bytes.Buffer
	e, err := o.encoders.Get(&out)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.Write(v2)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.encoders.Put(e)
	if out.Len() > 4<<10 {
		t.Errorf("the next version took %d bytes as dcz; want a few hundred", out.Len())
	}
	if got, err := testtool.DecodeDictionary(DCZ, out.Bytes(), v1); err != nil || !bytes.Equal(got, v2) {
		t.Errorf("decoded %d bytes, %v; want the %d-byte version", len(got), err, len(v2))
	}
}

// countingEncoder is a writers.Encoder that counts its resets.
type countingEncoder struct {
	resets int
	w      io.Writer
}

func (c *countingEncoder) Reset(w io.Writer)           { c.resets++; c.w = w }
func (c *countingEncoder) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *countingEncoder) Flush() error                { return nil }
func (c *countingEncoder) Close() error                { return nil }

// A pooled delta encoder resets its inner encoder once per response, not
// at both the pool's Put and its next Get (internal/pool resets at each):
// a dictionary encoder's reset is what a delta pays for its dictionary
// (zstd copies the dictionary's tables and history back). Its output is
// the header, then the inner encoder's, to each response's own writer,
// and a pooled one holds no reference to the last.
func TestFramedEncoderResetsItsInnerEncoderOncePerResponse(t *testing.T) {
	inner := &countingEncoder{}
	e := newFramedEncoder([]byte("H"), inner)
	before := inner.resets
	const responses = 10
	for i := range responses {
		var out bytes.Buffer
		e.Reset(&out) // the pool's Get
		fmt.Fprintf(e, "response %d", i)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		e.Reset(io.Discard) // the pool's Put
		if want := fmt.Sprintf("Hresponse %d", i); out.String() != want {
			t.Fatalf("response %d wrote %q, want %q", i, out.String(), want)
		}
		if e.dst.w != io.Discard {
			t.Fatalf("a pooled encoder still writes to %T; want io.Discard", e.dst.w)
		}
	}
	if n := inner.resets - before; n != responses {
		t.Errorf("%d responses reset the inner encoder %d times; want %d", responses, n, responses)
	}
}

// A delta encoder dropped after use is freed: go-brrr's Writer at the
// levels it runs workers for (br 11, the Cache's upgrades) has a
// finalizer, and a cycle through it (the inner encoder writing into its
// framedEncoder) is never collected, which held every upgrade encoder,
// 32 MB each, for good.
func TestFramedEncoderDroppedIsFreed(t *testing.T) {
	data := deltaBenchPage(1)
	prepared, err := brrr.PrepareDictionary(data)
	if err != nil {
		t.Fatal(err)
	}
	bw, err := brrr.NewWriterOptions(nil, 11, brrr.WriterOptions{Dictionaries: []*brrr.PreparedDictionary{prepared}, LGWin: dcbWindowBits})
	if err != nil {
		t.Fatal(err)
	}
	e := newFramedEncoder([]byte("H"), bw)
	e.Reset(io.Discard)
	_, _ = e.Write(deltaBenchPage(2))
	_ = e.Close()
	e.Reset(io.Discard)
	freed := weak.Make(e)
	e = nil
	for range 4 {
		runtime.GC()
	}
	if freed.Value() != nil {
		t.Error("a dropped dcb encoder is still on the heap after four collections")
	}
}
