package writers_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/squeezehttp/squeeze/writers"
)

// A program that stores or ships compressed data, with no HTTP in sight,
// compresses a buffer with each coding at its recommended level and reads it
// back.
func Example() {
	record := bytes.Repeat([]byte(`{"level":"info","msg":"request served","status":200}`+"\n"), 100)
	for _, coding := range writers.Codings() {
		levels, err := writers.Levels(coding)
		if err != nil {
			log.Fatal(err)
		}
		enc, err := writers.NewEncoder(coding, levels.Default)
		if err != nil {
			log.Fatal(err)
		}
		var compressed bytes.Buffer
		enc.Reset(&compressed)
		if _, err := enc.Write(record); err != nil {
			log.Fatal(err)
		}
		if err := enc.Close(); err != nil { // Close ends the stream, not the buffer
			log.Fatal(err)
		}

		dec, err := writers.NewDecoder(coding)
		if err != nil {
			log.Fatal(err)
		}
		if err := dec.Reset(&compressed); err != nil {
			log.Fatal(err)
		}
		plain, err := io.ReadAll(dec)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-7s level %d: %d bytes, smaller: %v, round trip: %v\n",
			coding, levels.Default, len(record), compressed.Len() < len(record)/10, bytes.Equal(plain, record))
	}
	// Output:
	// zstd    level 3: 5300 bytes, smaller: true, round trip: true
	// br      level 5: 5300 bytes, smaller: true, round trip: true
	// gzip    level 5: 5300 bytes, smaller: true, round trip: true
	// deflate level 5: 5300 bytes, smaller: true, round trip: true
}

// One Encoder and one Decoder serve stream after stream: Reset keeps their
// tables and buffers.
func ExampleEncoder() {
	enc, err := writers.NewEncoder(writers.Zstd, 3)
	if err != nil {
		log.Fatal(err)
	}
	dec, err := writers.NewDecoder(writers.Zstd)
	if err != nil {
		log.Fatal(err)
	}
	for _, body := range []string{"first stream", "second stream"} {
		var compressed bytes.Buffer
		enc.Reset(&compressed)
		if _, err := io.WriteString(enc, body); err != nil {
			log.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			log.Fatal(err)
		}

		if err := dec.Reset(&compressed); err != nil {
			log.Fatal(err)
		}
		plain, err := io.ReadAll(dec)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(plain))
	}
	// Detach, so the decoder keeps nothing of the last input alive.
	if err := dec.Reset(nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// first stream
	// second stream
}

// Flush sends what was written so far as a decodable prefix, as a streaming
// response (server-sent events, a long HTML page) needs.
func ExampleEncoder_Flush() {
	var wire bytes.Buffer
	enc, err := writers.NewEncoder(writers.Gzip, 5)
	if err != nil {
		log.Fatal(err)
	}
	enc.Reset(&wire)
	if _, err := io.WriteString(enc, "data: first event\n\n"); err != nil {
		log.Fatal(err)
	}
	if err := enc.Flush(); err != nil {
		log.Fatal(err)
	}

	// The client decodes the event before the stream is complete.
	dec, err := writers.NewDecoder(writers.Gzip)
	if err != nil {
		log.Fatal(err)
	}
	if err := dec.Reset(bytes.NewReader(wire.Bytes())); err != nil {
		log.Fatal(err)
	}
	event := make([]byte, len("data: first event\n\n"))
	if _, err := io.ReadFull(dec, event); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", event)
	// Output:
	// "data: first event\n\n"
}

// Canonical turns an Accept-Encoding or Content-Encoding token into the
// name the rest of the package takes.
func ExampleCanonical() {
	for _, token := range []string{"GZIP", "x-gzip", "br", "Zstd", "identity", "compress"} {
		coding, ok := writers.Canonical(token)
		fmt.Printf("%-8s -> %q %v\n", token, coding, ok)
	}
	// Output:
	// GZIP     -> "gzip" true
	// x-gzip   -> "gzip" true
	// br       -> "br" true
	// Zstd     -> "zstd" true
	// identity -> "" false
	// compress -> "" false
}

// Levels and ValidateLevel check a configured level before any encoder is
// built. The error for a bad level is a *LevelError, which errors.Is matches
// with ErrInvalidLevel.
func ExampleLevels() {
	for _, coding := range writers.Codings() {
		r, err := writers.Levels(coding)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-7s %d..%d default %d\n", coding, r.Min, r.Max, r.Default)
	}
	err := writers.ValidateLevel(writers.Brotli, 12)
	fmt.Println(err)
	var le *writers.LevelError
	if errors.As(err, &le) {
		fmt.Printf("%s wants %s\n", le.Coding, le.Want())
	}
	fmt.Println(errors.Is(err, writers.ErrInvalidLevel))
	_, err = writers.NewEncoder("lz4", 1)
	fmt.Println(errors.Is(err, writers.ErrUnknownCoding), err)
	// Output:
	// zstd    1..22 default 3
	// br      0..11 default 5
	// gzip    -3..9 default 5
	// deflate -3..9 default 5
	// writers: level 12 is not valid for br (want 0 to 11)
	// br wants 0 to 11
	// true
	// true writers: unknown content coding "lz4" (want zstd, br, gzip or deflate)
}

// A deflate Decoder takes the zlib streams RFC 9110 specifies and the raw
// deflate streams some clients send instead.
func ExampleNewDecoder() {
	dec, err := writers.NewDecoder(writers.Deflate)
	if err != nil {
		log.Fatal(err)
	}
	zlibStream := []byte{0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15}
	rawStream := []byte{0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}
	for _, body := range [][]byte{zlibStream, rawStream} {
		if err := dec.Reset(bytes.NewReader(body)); err != nil {
			log.Fatal(err)
		}
		var out strings.Builder
		if _, err := io.Copy(&out, dec); err != nil {
			log.Fatal(err)
		}
		fmt.Println(out.String())
	}
	// Output:
	// hello
	// hello
}

// Padding hides a compressed length: zstd takes it after the stream, br
// between Flush and Close, gzip in its header. Every decoder drops it.
func ExampleAppendPadding() {
	page := bytes.Repeat([]byte("<li>an item of a page that holds a secret</li>\n"), 50)
	for _, coding := range []string{writers.Zstd, writers.Brotli, writers.Gzip} {
		enc, err := writers.NewEncoder(coding, 5)
		if err != nil {
			log.Fatal(err)
		}
		var out bytes.Buffer
		enc.Reset(&out)
		if _, err := enc.Write(page); err != nil {
			log.Fatal(err)
		}
		if coding == writers.Brotli {
			if err := enc.Flush(); err != nil { // the data ends on a byte boundary
				log.Fatal(err)
			}
			pad, err := writers.AppendPadding(nil, coding, 20)
			if err != nil {
				log.Fatal(err)
			}
			out.Write(pad)
		}
		if err := enc.Close(); err != nil {
			log.Fatal(err)
		}
		body := out.Bytes()
		switch coding {
		case writers.Zstd:
			if body, err = writers.AppendPadding(body, coding, 20); err != nil {
				log.Fatal(err)
			}
		case writers.Gzip:
			padded, err := writers.AppendGzipHeaderPadding(nil, body[:writers.GzipHeaderLen], 20)
			if err != nil {
				log.Fatal(err)
			}
			body = append(padded, body[writers.GzipHeaderLen:]...)
		}

		dec, err := writers.NewDecoder(coding)
		if err != nil {
			log.Fatal(err)
		}
		if err := dec.Reset(bytes.NewReader(body)); err != nil {
			log.Fatal(err)
		}
		plain, err := io.ReadAll(dec)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-4s padded: round trip %v\n", coding, bytes.Equal(plain, page))
	}
	// Output:
	// zstd padded: round trip true
	// br   padded: round trip true
	// gzip padded: round trip true
}
