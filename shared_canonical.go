package squeeze

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/gzip"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/writers"
)

// This file holds what makes an encoding taken from the fleet's store
// canonical: the form squeeze's own encoders give it, with nothing beside
// the encoding of the plain body. A value that decodes to the plain bytes
// may still carry bytes of its writer's choosing where decoders skip them
// (what WithLengthHiding adds on the wire, and a hostile store could add
// for keeps); the store serves no such value:
//
//   - gzip: one member, whose header is the 10 bytes writers' encoder
//     writes: no optional fields (name, comment, extra field, header CRC),
//     no modification time, the XFL a level gives, OS 255; nothing after
//     the member's trailer.
//   - zstd: one frame, with no dictionary ID and its unused bit clear;
//     nothing before or after it, skippable frames included. dcz: the
//     same after its 40-byte header.
//   - br and dcb: nothing after the stream, which their decoders refuse
//     already. A metadata meta-block inside the stream is not detected:
//     neither Go brotli decoder reports one, and finding one without them
//     takes a second brotli decoder (docs/reference.md).
//
// The checks read headers only, linear in the value's zstd blocks; the
// content is left to the one decoding verify does, which for gzip stops at
// the end of the first member.

// canonicalFraming reports whether value has the framing squeeze's
// encoders give coding, as listed above; the decoding checks the rest.
func canonicalFraming(coding string, value []byte) bool {
	switch coding {
	case Gzip:
		h := value
		return len(h) >= writers.GzipHeaderLen &&
			h[0] == 0x1f && h[1] == 0x8b && h[2] == 8 && h[3] == 0 &&
			binary.LittleEndian.Uint32(h[4:]) == 0 && (h[8] == 0 || h[8] == 2 || h[8] == 4) && h[9] == 0xff
	case Zstd:
		return zstdOneFrame(value)
	case DCZ:
		n := len(cdt.Header(DCZ, [32]byte{}))
		return len(value) > n && zstdOneFrame(value[n:])
	}
	return true
}

// zstdOneFrame reports whether b is exactly one zstd frame (RFC 8878
// §3.1.1) with no dictionary ID and no unused or reserved bit set,
// following its block headers without decoding them.
func zstdOneFrame(b []byte) bool {
	if len(b) < 5 || binary.LittleEndian.Uint32(b) != 0xfd2fb528 {
		return false
	}
	fhd := b[4]
	if fhd&0x1b != 0 { // Dictionary_ID_Flag, the reserved and the unused bit
		return false
	}
	single := fhd&0x20 != 0
	i := 5 + [4]int{0, 2, 4, 8}[fhd>>6]
	if !single {
		i++ // Window_Descriptor
	} else if fhd>>6 == 0 {
		i++ // a one-byte Frame_Content_Size
	}
	for {
		if len(b)-i < 3 {
			return false
		}
		h := int(b[i]) | int(b[i+1])<<8 | int(b[i+2])<<16
		i += 3
		switch h >> 1 & 3 {
		case 0, 2: // raw, compressed
			i += h >> 3
		case 1: // RLE: one byte
			i++
		default:
			return false
		}
		if i > len(b) {
			return false
		}
		if h&1 != 0 { // the last block
			break
		}
	}
	if fhd&4 != 0 {
		i += 4 // Content_Checksum
	}
	return i == len(b)
}

// errTrailingMember is what oneMember reports for bytes after a gzip
// member: a second member, or anything else.
var errTrailingMember = errors.New("squeeze: bytes after the gzip member")

// oneMember reads one gzip member from src and reports anything after it
// as an error, where writers' decoder, as HTTP clients do, would read on
// into a next member.
type oneMember struct {
	r   *gzip.Reader
	src *bytes.Reader
}

// newOneMember returns a reader of the first gzip member of value.
func newOneMember(value []byte) (io.Reader, error) {
	src := bytes.NewReader(value)
	r, err := gzip.NewReader(src) // a bytes.Reader is read with no read-ahead
	if err != nil {
		return nil, err
	}
	r.Multistream(false)
	return &oneMember{r: r, src: src}, nil
}

func (m *oneMember) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err == io.EOF && m.src.Len() > 0 {
		err = errTrailingMember
	}
	return n, err
}
