package decode

import (
	"crypto/sha256"
	"io"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/writers"
)

// DCZ and DCB are the dictionary codings NewResponseBody undoes with a
// Dictionary.
const (
	DCZ = cdt.DCZ
	DCB = cdt.DCB
)

// Dictionary is a dictionary a client offered: its bytes and their
// SHA-256, which a dcz or dcb stream's header must name. Data is never
// modified.
type Dictionary struct {
	Data []byte
	Hash [sha256.Size]byte
}

// zstdWindow returns the largest window a dcz stream with d may declare
// (see cdt.ZstdWindow).
func (d *Dictionary) zstdWindow() int64 {
	return cdt.ZstdWindow(len(d.Data))
}

// checkHeader reads the header of a dcz or dcb stream from r and checks it
// names d.
func (d *Dictionary) checkHeader(coding string, r io.Reader) error {
	return cdt.ReadHeader(coding, r, d.Hash)
}

// newDecoder returns a decoder for the rest of a dcz (kind zstd) or dcb
// (kind br) stream read from r, with d as its dictionary. These decoders are
// not pooled: one is built for each response and dropped by close.
func (d *Dictionary) newDecoder(kind string, r io.Reader) (*dictDecoder, error) {
	dd := &dictDecoder{src: countingReader{r: r}}
	if kind == writers.Zstd {
		w := uint64(d.zstdWindow())
		z, err := zstd.NewReader(&dd.src,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(w),
			zstd.WithDecoderMaxMemory(w+uint64(len(d.Data))),
			zstd.WithDecodeBuffersBelow(0),
			zstd.WithDecoderDictRaw(0, d.Data),
		)
		if err != nil {
			return nil, err
		}
		dd.zstd, dd.window = z, int64(w)
		return dd, nil
	}
	br, err := brrr.NewReaderOptions(&dd.src, brrr.ReaderOptions{Dictionaries: [][]byte{d.Data}})
	if err != nil {
		return nil, err
	}
	dd.br, dd.window = br, cdt.BrotliWindow
	return dd, nil
}

// dictDecoder decodes the body of a dcz or dcb stream after its header.
type dictDecoder struct {
	src    countingReader
	zstd   *zstd.Decoder
	br     *brrr.Reader
	window int64
	err    error // sticky end or failure of the br stream
}

// Read decodes. A stream followed by more bytes is an error, as it is for
// the pooled decoders; so is a dcz stream with no frame at all.
func (d *dictDecoder) Read(p []byte) (int, error) {
	if d.zstd != nil {
		n, err := d.zstd.Read(p)
		if err == io.EOF && d.src.n == 0 {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.br.Read(p)
	if err == io.EOF {
		// The br reader stops at the end of its stream; so must the input.
		var one [1]byte
		switch k, perr := io.ReadFull(&d.src, one[:]); {
		case k > 0:
			err = cdt.ErrTrailingData
		case perr != io.EOF:
			err = perr
		}
	}
	if err != nil {
		d.err = err
	}
	return n, err
}

// Window reports the window charged for the stream.
func (d *dictDecoder) Window() int64 { return d.window }

// close drops the decoder's buffers and its source.
func (d *dictDecoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
	} else {
		_ = d.br.Close()
	}
	d.src.r = nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewDictionaryReader returns a reader of the plain bytes of body, a whole
// dcz or dcb stream against d, after checking that its header names d, and
// a function that drops the decoder. The decoder is not pooled and charged
// to no budget: callers charge what it may hold (its window, see
// cdt.ZstdWindow, and d) and bound what they read.
func NewDictionaryReader(coding string, body io.Reader, d Dictionary) (io.Reader, func(), error) {
	if err := d.checkHeader(coding, body); err != nil {
		return nil, nil, err
	}
	kind := writers.Zstd
	if coding == DCB {
		kind = writers.Brotli
	}
	dd, err := d.newDecoder(kind, body)
	if err != nil {
		return nil, nil, err
	}
	return dd, dd.close, nil
}
