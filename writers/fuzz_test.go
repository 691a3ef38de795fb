package writers_test

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze/writers"
)

// FuzzDecoders feeds arbitrary bytes to every decoder: no input may panic,
// and none may make one decoder unusable for the next stream.
func FuzzDecoders(f *testing.F) {
	for _, coding := range codings {
		f.Add(encode(f, coding, defaultLevel(f, coding), []byte("seed body, seed body, seed body")))
	}
	f.Add([]byte{0x78, 0x01})
	f.Add(zstdFrame(0x69, []byte("x")))
	f.Add([]byte{})
	decs := map[string]writers.Decoder{}
	for _, coding := range codings {
		decs[coding] = newDecoder(f, coding)
	}
	valid := map[string][]byte{}
	for _, coding := range codings {
		valid[coding] = encode(f, coding, defaultLevel(f, coding), []byte("after"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, coding := range codings {
			d := decs[coding]
			if err := d.Reset(bytes.NewReader(data)); err == nil {
				// Cap the output: a tiny input may legitimately expand a lot.
				_, _ = io.Copy(io.Discard, io.LimitReader(d, 1<<20))
			}
			if err := d.Reset(bytes.NewReader(valid[coding])); err != nil {
				t.Fatalf("%s: Reset after fuzz input: %v", coding, err)
			}
			if got, err := io.ReadAll(d); err != nil || string(got) != "after" {
				t.Fatalf("%s: decoder broken by the previous input: %q, %v", coding, got, err)
			}
		}
	})
}

// FuzzRoundTrip compresses arbitrary bytes at an arbitrary valid level, with
// a Flush at an arbitrary point, and checks they decode unchanged.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello, hello, hello"), uint8(0), uint8(5), uint16(3))
	f.Add([]byte{}, uint8(2), uint8(0), uint16(0))
	f.Add(bytes.Repeat([]byte{0}, 1000), uint8(3), uint8(11), uint16(999))
	// One encoder per coding and level, reused through Reset as a pool
	// would: building a best-level zstd or br encoder for every input made
	// each run slow enough, and its memory churn high enough, to stall the
	// fuzzing workers past the end of -fuzztime.
	var mu sync.Mutex
	encoders := map[string]writers.Encoder{}
	encoderFor := func(t *testing.T, coding string, level int) writers.Encoder {
		mu.Lock()
		defer mu.Unlock()
		k := fmt.Sprintf("%s/%d", coding, level)
		e, ok := encoders[k]
		if !ok {
			e = newEncoder(t, coding, level)
			encoders[k] = e
		}
		return e
	}
	f.Fuzz(func(t *testing.T, data []byte, codingIdx, levelIdx uint8, split uint16) {
		coding := codings[int(codingIdx)%len(codings)]
		levels := validLevels(t, coding)
		level := levels[int(levelIdx)%len(levels)]
		if coding == writers.Brotli && level >= 10 && len(data) > 4096 {
			level = 9 // keep each input fast
		}
		at := int(split) % (len(data) + 1)
		var out bytes.Buffer
		e := encoderFor(t, coding, level)
		e.Reset(&out)
		if _, err := e.Write(data[:at]); err != nil {
			t.Fatal(err)
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Write(data[at:]); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := decode(t, coding, out.Bytes())
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s/%d: %d bytes, %v; want %d", coding, level, len(got), err, len(data))
		}
	})
}
