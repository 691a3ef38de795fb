package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

var codings = []string{writers.Gzip, writers.Deflate, writers.Zstd, writers.Brotli}

func defaultLevel(tb testing.TB, coding string) int {
	tb.Helper()
	r, err := writers.Levels(coding)
	if err != nil {
		tb.Fatal(err)
	}
	return r.Default
}

func newEncoders(tb testing.TB, coding string) *pool.Encoders {
	tb.Helper()
	p, err := pool.NewEncoders(coding, defaultLevel(tb, coding))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func newDecoders(tb testing.TB, coding string) *pool.Decoders {
	tb.Helper()
	p, err := pool.NewDecoders(coding)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func newBuffers(tb testing.TB, size int) *pool.Buffers {
	tb.Helper()
	p, err := pool.NewBuffers(size)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// decode decompresses data with a decoder from p, which it puts back.
func decode(tb testing.TB, p *pool.Decoders, data []byte) ([]byte, error) {
	tb.Helper()
	d, err := p.Get(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer p.Put(d)
	return io.ReadAll(d)
}

// compress writes payload through an encoder from p and puts it back.
func compress(tb testing.TB, p *pool.Encoders, payload []byte) []byte {
	tb.Helper()
	var out bytes.Buffer
	e, err := p.Get(&out)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.Write(payload); err != nil {
		tb.Fatal(err)
	}
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
	p.Put(e)
	return out.Bytes()
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestConstructorsValidate(t *testing.T) {
	for _, tt := range []struct {
		coding string
		level  int
		want   error
	}{
		{"identity", 1, writers.ErrUnknownCoding},
		{"GZIP", 5, writers.ErrUnknownCoding},
		{"x-gzip", 5, writers.ErrUnknownCoding},
		{writers.Gzip, 0, writers.ErrInvalidLevel},
		{writers.Zstd, 23, writers.ErrInvalidLevel},
		{writers.Brotli, 12, writers.ErrInvalidLevel},
	} {
		if p, err := pool.NewEncoders(tt.coding, tt.level); err == nil || p != nil || !errors.Is(err, tt.want) {
			t.Errorf("NewEncoders(%q, %d) = %v, %v; want nil, an error matching %v", tt.coding, tt.level, p, err, tt.want)
		}
	}
	for _, coding := range []string{"", "identity", "GZIP", "compress"} {
		if p, err := pool.NewDecoders(coding); err == nil || p != nil || !errors.Is(err, writers.ErrUnknownCoding) {
			t.Errorf("NewDecoders(%q) = %v, %v; want nil, an error matching writers.ErrUnknownCoding", coding, p, err)
		}
	}
	for _, size := range []int{0, -1} {
		if p, err := pool.NewBuffers(size); err == nil || p != nil || !errors.Is(err, pool.ErrInvalidSize) {
			t.Errorf("NewBuffers(%d) = %v, %v; want nil, an error matching ErrInvalidSize", size, p, err)
		}
	}
	for _, coding := range codings {
		if e := newEncoders(t, coding); e.Coding() != coding {
			t.Errorf("Encoders.Coding() = %q; want %q", e.Coding(), coding)
		}
	}
}

// getSame calls get and checks that it returns want, the object just put
// back, so a test pins down what happens to a reused object. Without -race a
// Get right after a Put on the same goroutine always returns it; under -race
// sync.Pool drops a quarter of Puts at random, so there the test goes on
// with whatever object came back.
func getSame[T comparable](t *testing.T, want T, get func() T) T {
	t.Helper()
	got := get()
	if got != want && !raceEnabled {
		t.Fatal("Get right after Put returned a different object")
	}
	return got
}

func TestEncodersGetWritesOnlyToTheNewDestination(t *testing.T) {
	html := corpus.HTML(t)
	secret := html[:40<<10]
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			p := newEncoders(t, coding)
			// A response abandoned mid-stream: written, never closed.
			var first bytes.Buffer
			e, err := p.Get(&first)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Write(secret); err != nil {
				t.Fatal(err)
			}
			p.Put(e)
			leaked := first.Len()

			var second bytes.Buffer
			payload := html[200<<10 : 216<<10]
			e2 := getSame(t, e, func() *pool.Encoder {
				second.Reset()
				e, err := p.Get(&second)
				if err != nil {
					t.Fatal(err)
				}
				return e
			})
			if _, err := e2.Write(payload); err != nil {
				t.Fatal(err)
			}
			if err := e2.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := e2.Close(); err != nil {
				t.Fatal(err)
			}
			p.Put(e2)
			if first.Len() != leaked {
				t.Errorf("the first destination got %d more bytes after Put", first.Len()-leaked)
			}
			got, err := testtool.TryDecode(coding, second.Bytes())
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("second stream decodes to %d bytes, %v; want exactly its own %d", len(got), err, len(payload))
			}
			// Same bytes as a fresh encoder: no dictionary or checksum
			// state from the abandoned stream.
			fresh, _ := writers.NewEncoder(coding, defaultLevel(t, coding))
			var want bytes.Buffer
			fresh.Reset(&want)
			_, _ = fresh.Write(payload)
			_ = fresh.Flush()
			_ = fresh.Close()
			if !bytes.Equal(second.Bytes(), want.Bytes()) {
				t.Errorf("a reused encoder's output differs from a fresh one's")
			}
		})
	}
}

func TestDoublePutPanics(t *testing.T) {
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			ep := newEncoders(t, coding)
			e, err := ep.Get(io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ep.Put(e)
			mustPanic(t, "second Encoders.Put", func() { ep.Put(e) })

			dp := newDecoders(t, coding)
			d, err := dp.Get(bytes.NewReader(compress(t, ep, []byte("x"))))
			if err != nil {
				t.Fatal(err)
			}
			dp.Put(d)
			mustPanic(t, "second Decoders.Put", func() { dp.Put(d) })
		})
	}
}

// gzip and deflate read the stream header in Reset, so Decoders.Get reports
// a corrupt header itself; zstd and br report it from the first Read. Either
// way the decoder must go back to the pool, not leak from it.
func TestDecodersGetReturnsHeaderErrorAndKeepsDecoder(t *testing.T) {
	valid := []byte("a valid body, decoded after the corrupt one")
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			ep := newEncoders(t, coding)
			stream := compress(t, ep, valid)
			p := newDecoders(t, coding)
			d, err := p.Get(bytes.NewReader(stream))
			if err != nil {
				t.Fatal(err)
			}
			p.Put(d)

			corrupt := map[string][]byte{
				writers.Gzip:    []byte("\x1f\x8c\x08 not gzip magic"),
				writers.Deflate: {0x78}, // half a zlib header
				writers.Zstd:    []byte("\x28\xb5\x2f\xfe not zstd magic"),
				// WBITS 16, so that the decoder stays poolable (a
				// larger window is dropped: see MaxPooledWindow).
				writers.Brotli: {0x00, 0xff, 0xff, 0xff, 0xff, 0xff},
			}[coding]
			got, err := p.Get(bytes.NewReader(corrupt))
			switch coding {
			case writers.Gzip, writers.Deflate:
				if err == nil || got != nil {
					t.Fatalf("Get(corrupt) = %v, %v; want nil and the header error", got, err)
				}
			default:
				if err != nil {
					t.Fatalf("Get(corrupt) = %v; %s reports corruption from Read", err, coding)
				}
				if _, err := io.ReadAll(got); err == nil {
					t.Fatal("Read of a corrupt stream: no error")
				}
				p.Put(got)
			}
			d2 := getSame(t, d, func() *pool.Decoder {
				d, err := p.Get(bytes.NewReader(stream))
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
			out, err := io.ReadAll(d2)
			if err != nil || !bytes.Equal(out, valid) {
				t.Fatalf("the decoder after the error: %q, %v", out, err)
			}
			p.Put(d2)
		})
	}
}

func TestDecodersGetEmptyBodyIsAnError(t *testing.T) {
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			p := newDecoders(t, coding)
			out, err := decode(t, p, nil)
			if err == nil || err == io.EOF {
				t.Fatalf("decode(empty body) = %q, %v; want a truncation error", out, err)
			}
		})
	}
}

func TestBuffers(t *testing.T) {
	const size = 1024
	b, err := pool.NewBuffers(size)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != size {
		t.Fatalf("Size() = %d", b.Size())
	}
	buf := b.Get()
	if len(*buf) != 0 || cap(*buf) != size {
		t.Fatalf("Get: len %d cap %d; want 0, %d", len(*buf), cap(*buf), size)
	}
	*buf = append(*buf, "hello"...)
	b.Put(buf)
	again := getSame(t, buf, b.Get)
	if len(*again) != 0 {
		t.Fatalf("a reused buffer has length %d; Put must empty it", len(*again))
	}

	tests := []struct {
		name  string
		alter func(*[]byte)
	}{
		{"grown", func(p *[]byte) { *p = append(*p, make([]byte, size+1)...) }},
		{"cut", func(p *[]byte) { *p = (*p)[: 0 : size/2] }},
		{"replaced", func(p *[]byte) { *p = make([]byte, 0, 10) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := b.Get()
			tt.alter(buf)
			b.Put(buf)
			for range 10 {
				got := b.Get()
				if got == buf {
					t.Fatal("the pool kept a buffer whose capacity is not Size")
				}
				if cap(*got) != size || len(*got) != 0 {
					t.Fatalf("Get: len %d cap %d; want 0, %d", len(*got), cap(*got), size)
				}
				defer b.Put(got)
			}
		})
	}
}

// A pooled codec must not keep the last response writer or request body
// reachable: both can pin a connection's buffers.
func TestPutReleasesDestinationAndSource(t *testing.T) {
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			ep := newEncoders(t, coding)
			dp := newDecoders(t, coding)
			stream := compress(t, ep, bytes.Repeat([]byte("release me "), 1000))
			encReleased, decReleased := make(chan struct{}), make(chan struct{})
			e, d := useAndPut(t, ep, dp, stream, encReleased, decReleased)
			waitClosed(t, encReleased, "the encoder's last destination")
			waitClosed(t, decReleased, "the decoder's last source")
			runtime.KeepAlive(e)
			runtime.KeepAlive(d)
		})
	}
}

//go:noinline
func useAndPut(t *testing.T, ep *pool.Encoders, dp *pool.Decoders, stream []byte, encReleased, decReleased chan struct{}) (*pool.Encoder, *pool.Decoder) {
	dst := new(bytes.Buffer)
	runtime.AddCleanup(dst, func(ch chan struct{}) { close(ch) }, encReleased)
	e, err := ep.Get(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write([]byte("in flight")); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	ep.Put(e)

	src := bytes.NewReader(stream)
	runtime.AddCleanup(src, func(ch chan struct{}) { close(ch) }, decReleased)
	d, err := dp.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf [10]byte
	if _, err := io.ReadFull(d, buf[:]); err != nil {
		t.Fatal(err)
	}
	dp.Put(d)
	return e, d
}

func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-ch:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still reachable after Put", what)
		}
	}
}

// Many goroutines share each pool, each writing a payload no other writes;
// every output must decode to its own payload. Run with -race.
func TestConcurrentUseKeepsStreamsApart(t *testing.T) {
	html := corpus.HTML(t)
	const workers, rounds = 8, 12
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			ep := newEncoders(t, coding)
			dp := newDecoders(t, coding)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					var out bytes.Buffer
					for r := range rounds {
						off := (w*rounds + r) * 1000 % (len(html) - 8<<10)
						payload := fmt.Appendf(nil, "worker %d round %d\n%s", w, r, html[off:off+1+(w*r*397)%(8<<10)])
						out.Reset()
						e, err := ep.Get(&out)
						if err != nil {
							errs <- err
							return
						}
						half := len(payload) / 2
						_, err1 := e.Write(payload[:half])
						err2 := e.Flush()
						_, err3 := e.Write(payload[half:])
						err4 := e.Close()
						ep.Put(e)
						for _, err := range []error{err1, err2, err3, err4} {
							if err != nil {
								errs <- err
								return
							}
						}
						got, err := decode(t, dp, out.Bytes())
						if err != nil {
							errs <- fmt.Errorf("worker %d round %d: %w", w, r, err)
							return
						}
						if !bytes.Equal(got, payload) {
							errs <- fmt.Errorf("worker %d round %d: decoded %q..., want %q...",
								w, r, got[:min(len(got), 24)], payload[:24])
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestGetBuildsAnewWhenThePoolIsEmpty(t *testing.T) {
	for _, coding := range codings {
		t.Run(coding, func(t *testing.T) {
			ep := newEncoders(t, coding)
			// Hold more than the pool was seeded with.
			var encs []*pool.Encoder
			var outs []*bytes.Buffer
			for range 3 {
				out := new(bytes.Buffer)
				e, err := ep.Get(out)
				if err != nil {
					t.Fatal(err)
				}
				encs, outs = append(encs, e), append(outs, out)
			}
			for i, e := range encs {
				if _, err := io.Copy(e, strings.NewReader(fmt.Sprint("stream ", i))); err != nil {
					t.Fatal(err)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for i, out := range outs {
				got, err := testtool.TryDecode(coding, out.Bytes())
				if err != nil || string(got) != fmt.Sprint("stream ", i) {
					t.Errorf("stream %d decodes to %q, %v", i, got, err)
				}
				ep.Put(encs[i])
			}
		})
	}
}

// TestDecodersPutDropsLargeWindows: a decoder keeps the history buffer of
// the largest window it met, so one that met a window over MaxPooledWindow
// is dropped rather than pooled; the next Get builds a fresh one. A decoder
// that met only small windows is pooled as before.
func TestDecodersPutDropsLargeWindows(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops Puts at random under -race, so what Get returns proves nothing")
	}
	plain := corpus.Prefix(t, corpus.HTML(t), 4<<10)
	// A zstd frame with an 8 MiB Window_Descriptor holding plain in one
	// last raw block, and br at lgwin 24 and 16.
	bigZstd := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68}
	v := 1 | uint32(len(plain))<<3
	bigZstd = append(append(bigZstd, byte(v), byte(v>>8), byte(v>>16)), plain...)
	brAt := func(lgwin int) []byte {
		var buf bytes.Buffer
		w := brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 5, LGWin: lgwin})
		if _, err := w.Write(plain); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	cases := []struct {
		name   string
		coding string
		body   []byte
		pooled bool
	}{
		{"zstd, 8 MiB window", writers.Zstd, bigZstd, false},
		{"br, lgwin 24", writers.Brotli, brAt(24), false},
		{"br, lgwin 16", writers.Brotli, brAt(16), true},
		{"zstd, squeeze's encoder", writers.Zstd, encodeDefault(t, writers.Zstd, plain), true},
		{"gzip", writers.Gzip, encodeDefault(t, writers.Gzip, plain), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dp := newDecoders(t, tc.coding)
			d, err := dp.Get(bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			// A goroutine that moves to another P between Put and Get
			// misses what it put, so a pooled decoder needs only come
			// back once in a few tries; a dropped one never does.
			pooled := false
			var window int64
			for range 5 {
				if got, err := io.ReadAll(d); err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("decoded %d bytes, %v", len(got), err)
				}
				window = d.Window()
				dp.Put(d)
				d2, err := dp.Get(bytes.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				pooled = pooled || d2 == d
				d = d2
			}
			dp.Put(d)
			if pooled != tc.pooled {
				t.Errorf("window %d: pooled %v, want %v (MaxPooledWindow %d)", window, pooled, tc.pooled, pool.MaxPooledWindow)
			}
		})
	}
}

// encodeDefault compresses plain with a fresh encoder at the default level.
func encodeDefault(tb testing.TB, coding string, plain []byte) []byte {
	tb.Helper()
	e, err := writers.NewEncoder(coding, defaultLevel(tb, coding))
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	e.Reset(&buf)
	if _, err := e.Write(plain); err != nil {
		tb.Fatal(err)
	}
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestEncodersFuncBuildsWithTheFunction(t *testing.T) {
	built := 0
	p, err := pool.NewEncodersFunc("x-custom", func() (writers.Encoder, error) {
		built++
		return writers.NewEncoder(writers.Gzip, 5)
	})
	if err != nil || built != 1 {
		t.Fatalf("NewEncodersFunc: %v, built %d encoders; want one at once", err, built)
	}
	if p.Coding() != "x-custom" {
		t.Errorf("Coding() = %q, want x-custom", p.Coding())
	}
	var out bytes.Buffer
	e, err := p.Get(&out)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.Write([]byte("hello"))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	p.Put(e)
	if got := testtool.Decode(t, writers.Gzip, out.Bytes()); string(got) != "hello" {
		t.Errorf("decoded %q", got)
	}
	if _, err := pool.NewEncodersFunc("bad", func() (writers.Encoder, error) { return nil, writers.ErrUnknownCoding }); !errors.Is(err, writers.ErrUnknownCoding) {
		t.Errorf("a failing build: %v, want its error", err)
	}
}

// A pool made by NewEncodersFuncKeepingOne lends an encoder it built
// before however often the garbage collector ran while it sat idle (a
// sync.Pool gives its idle encoders up by the second collection), and
// builds only for what is held beyond that one; a second Put of the kept
// encoder still panics.
func TestEncodersKeepingOneLendABuiltEncoderAfterCollections(t *testing.T) {
	for _, keeping := range []bool{false, true} {
		builds := 0
		build := func() (writers.Encoder, error) {
			builds++
			return writers.NewEncoder(writers.Zstd, 3)
		}
		newPool := pool.NewEncodersFunc
		if keeping {
			newPool = pool.NewEncodersFuncKeepingOne
		}
		ep, err := newPool(writers.Zstd, build)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			runtime.GC()
			runtime.GC()
			var out bytes.Buffer
			e, err := ep.Get(&out)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(e, "stream ", i)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := testtool.TryDecode(writers.Zstd, out.Bytes()); err != nil || string(got) != fmt.Sprint("stream ", i) {
				t.Fatalf("stream %d decodes to %q, %v", i, got, err)
			}
			ep.Put(e)
		}
		if keeping && builds != 1 || !keeping && builds != 4 {
			t.Errorf("keeping one %v: %d encoders built for 3 streams after collections; want %d", keeping, builds, map[bool]int{false: 4, true: 1}[keeping])
		}
		if !keeping {
			continue
		}
		a, _ := ep.Get(io.Discard)
		b, _ := ep.Get(io.Discard) // held beyond the kept one: built
		if builds != 2 {
			t.Errorf("%d encoders built for two held at once; want 2", builds)
		}
		ep.Put(a)
		ep.Put(b)
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a second Put of the kept encoder did not panic")
				}
			}()
			ep.Put(a)
		}()
	}
}
