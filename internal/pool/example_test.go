package pool_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"

	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// A log shipper compresses batches of records from several goroutines, each
// batch one zstd frame, with encoders from one shared pool: a handful of
// encoders serve any number of batches, however many goroutines there are.
// The receiving end decodes with a pool of decoders the same way.
func Example() {
	encoders, err := pool.NewEncoders(writers.Zstd, 3)
	if err != nil {
		log.Fatal(err)
	}
	decoders, err := pool.NewDecoders(writers.Zstd)
	if err != nil {
		log.Fatal(err)
	}

	// compress writes one batch of records through a pooled encoder.
	compress := func(records []string) ([]byte, error) {
		var frame bytes.Buffer
		e, err := encoders.Get(&frame)
		if err != nil {
			return nil, err
		}
		defer encoders.Put(e)
		for _, r := range records {
			if _, err := io.WriteString(e, r+"\n"); err != nil {
				return nil, err
			}
		}
		if err := e.Close(); err != nil {
			return nil, err
		}
		return frame.Bytes(), nil
	}

	const shippers = 4
	frames := make([][]byte, shippers)
	errs := make([]error, shippers)
	var wg sync.WaitGroup
	for i := range shippers {
		wg.Go(func() {
			var batch []string
			for seq := range 200 {
				batch = append(batch, fmt.Sprintf(`{"shipper":%d,"seq":%d,"level":"info","msg":"disk usage checked"}`, i, seq))
			}
			frames[i], errs[i] = compress(batch)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		log.Fatal(err)
	}

	for i, frame := range frames {
		d, err := decoders.Get(bytes.NewReader(frame))
		if err != nil {
			log.Fatal(err)
		}
		records := 0
		sc := bufio.NewScanner(d)
		for sc.Scan() {
			records++
		}
		decoders.Put(d)
		if err := sc.Err(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("shipper %d: %d records in a %s frame of under 2 KiB: %v\n", i, records, encoders.Coding(), len(frame) < 2<<10)
	}
	// Output:
	// shipper 0: 200 records in a zstd frame of under 2 KiB: true
	// shipper 1: 200 records in a zstd frame of under 2 KiB: true
	// shipper 2: 200 records in a zstd frame of under 2 KiB: true
	// shipper 3: 200 records in a zstd frame of under 2 KiB: true
}

// One pool per coding and level serves every response: Get an encoder
// pointed at the response, Put it back when the response is done.
func ExampleEncoders() {
	encoders, err := pool.NewEncoders(writers.Gzip, 5)
	if err != nil {
		log.Fatal(err) // an invalid coding or level is reported here
	}

	respond := func(w io.Writer, body string) error {
		e, err := encoders.Get(w)
		if err != nil {
			return err
		}
		defer encoders.Put(e)
		if _, err := io.WriteString(e, body); err != nil {
			return err
		}
		return e.Close()
	}

	var wire bytes.Buffer
	if err := respond(&wire, "hello, pooled gzip"); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("% x\n", wire.Bytes()[:2]) // the gzip magic number
	// Output:
	// 1f 8b
}

// A Decoders pool reads compressed request bodies. Get reports a stream
// whose header is already wrong, and the decoder stays in the pool.
func ExampleDecoders() {
	decoders, err := pool.NewDecoders(writers.Gzip)
	if err != nil {
		log.Fatal(err)
	}

	if _, err := decoders.Get(strings.NewReader("not gzip at all")); err != nil {
		fmt.Println("rejected:", err)
	}

	body := []byte{
		0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xcb, 0x48,
		0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x86, 0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
	}
	d, err := decoders.Get(bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer decoders.Put(d) // detaches d from the body
	plain, err := io.ReadAll(d)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(plain))
	// Output:
	// rejected: gzip: invalid header
	// hello
}

// Buffers hands out empty slices of one capacity; Put drops any that were
// grown past it, so the pool's memory stays what NewBuffers promised.
func ExampleBuffers() {
	buffers, err := pool.NewBuffers(32 << 10)
	if err != nil {
		log.Fatal(err)
	}
	buf := buffers.Get()
	*buf = append(*buf, "a response prefix held back until its size is known"...)
	fmt.Println(len(*buf), cap(*buf))
	buffers.Put(buf)
	// Output:
	// 51 32768
}
