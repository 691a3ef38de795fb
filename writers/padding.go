package writers

import (
	"encoding/binary"
	"fmt"
)

// This file holds padding: bytes that every decoder of a coding reads and
// drops, which hide the exact length of a compressed body (a defence in
// depth against BREACH-style attacks, which guess a secret from compressed
// lengths). Each coding has one place padding can go:
//
//   - gzip: the optional fields of the member header (RFC 1952 §2.3), a
//     comment (FCOMMENT) or an extra field (FEXTRA). Not a second member
//     after the stream: curl reports one as an error.
//   - zstd: after the stream, a skippable frame (RFC 8878 §3.1.2).
//   - br: inside the stream, between a Flush and Close: metadata
//     meta-blocks (RFC 7932 §9.2), since nothing may follow a brotli
//     stream's last meta-block and a Flush leaves the stream at a
//     meta-block boundary, on a byte boundary.
//
// A gzip or deflate stream can carry padding at its end too, inside the
// deflate stream, between a Flush and Close: deflate blocks that produce
// nothing (RFC 1951 §3.2.3), which [AppendDeflatePadding] makes. That is
// where a stream's padding goes when its amount is known only at the end;
// never a second gzip member, nor bytes after a member's trailer.

// MaxPadding is the most padding [AppendPadding] and
// [AppendGzipHeaderPadding] make in one call.
const MaxPadding = 1 << 16

// paddingFill is what padding carries: spaces, which a gzip comment may
// hold (it ends at the first zero byte).
var paddingFill = func() (b [256]byte) {
	for i := range b {
		b[i] = ' '
	}
	return b
}()

// MinPadding returns the fewest bytes of padding this package makes for
// coding: 1 for gzip (an empty comment) and br (an empty metadata
// meta-block), 8 for zstd (a skippable frame's header). deflate, and a
// coding this package does not know, are errors.
func MinPadding(coding string) (int, error) {
	switch coding {
	case Gzip, Brotli:
		return 1, nil
	case Zstd:
		return zstdPaddingMin, nil
	case Deflate:
		return 0, fmt.Errorf("writers: deflate cannot be padded: a zlib stream has nowhere a decoder skips")
	}
	return 0, unknownCoding(coding)
}

// zstdPaddingMin is a skippable frame's magic number and size.
const zstdPaddingMin = 8

// checkPadding reports whether n bytes of padding can be made for coding.
func checkPadding(coding string, n int) error {
	least, err := MinPadding(coding)
	if err != nil {
		return err
	}
	if n < least || n > MaxPadding {
		return fmt.Errorf("writers: %d bytes of %s padding: want %d to %d", n, coding, least, MaxPadding)
	}
	return nil
}

// AppendPadding appends to dst exactly n bytes of padding for zstd or br
// and returns the extended slice. n must be at least [MinPadding] of coding
// and at most [MaxPadding]. gzip is padded in its header instead: see
// [AppendGzipHeaderPadding].
//
// zstd padding is a skippable frame, which follows a complete stream,
// after [Encoder.Close] or after a stored encoding. br padding is one or
// more metadata meta-blocks, which go inside the stream, between
// [Encoder.Flush] and [Encoder.Close]: the Flush ends the pending
// meta-block on a byte boundary, and Close then adds the stream's last
// meta-block. Decoders that follow the RFCs (Go's, the reference
// command-line tools, curl, the browsers) read both and drop them.
func AppendPadding(dst []byte, coding string, n int) ([]byte, error) {
	if coding == Gzip {
		return dst, fmt.Errorf("writers: gzip is padded in its header: use AppendGzipHeaderPadding")
	}
	if err := checkPadding(coding, n); err != nil {
		return dst, err
	}
	if coding == Zstd {
		dst = binary.LittleEndian.AppendUint32(dst, 0x184d2a50)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n-zstdPaddingMin))
		return appendFill(dst, n-zstdPaddingMin), nil
	}
	return appendBrotliMetadata(dst, n), nil
}

// GzipHeaderLen is the length of the header of a gzip member with no
// optional fields, the header this package's encoders write.
const GzipHeaderLen = 10

// AppendGzipHeaderPadding appends to dst header, the first
// [GzipHeaderLen] bytes of a gzip stream, with exactly n bytes of optional
// fields added, and returns the extended slice: the stream's remaining
// bytes follow it unchanged. header must have no optional fields (its FLG
// byte zero), as this package's encoders write it; n must be from 1 to
// [MaxPadding]. Up to 256 bytes the padding is a comment (FCOMMENT) of
// spaces, as Go's gzip reader takes comments of at most 511 bytes; beyond,
// it is an extra field (FEXTRA) holding one subfield.
func AppendGzipHeaderPadding(dst, header []byte, n int) ([]byte, error) {
	if err := checkPadding(Gzip, n); err != nil {
		return dst, err
	}
	if len(header) != GzipHeaderLen || header[0] != 0x1f || header[1] != 0x8b || header[2] != 8 || header[3] != 0 {
		return dst, fmt.Errorf("writers: gzip padding needs a %d-byte member header with no optional fields", GzipHeaderLen)
	}
	if n <= 256 {
		dst = append(dst, header[:3]...)
		dst = append(dst, 0x10) // FCOMMENT
		dst = append(dst, header[4:]...)
		dst = appendFill(dst, n-1)
		return append(dst, 0), nil
	}
	// XLEN, then one subfield: SI1 SI2 ('P', 'D') and LEN, then its data.
	dst = append(dst, header[:3]...)
	dst = append(dst, 0x04) // FEXTRA
	dst = append(dst, header[4:]...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(n-2))
	dst = append(dst, 'P', 'D')
	dst = binary.LittleEndian.AppendUint16(dst, uint16(n-6))
	return appendFill(dst, n-6), nil
}

// MinDeflatePadding is the least padding [AppendDeflatePadding] makes:
// from it up, every length can be made.
const MinDeflatePadding = 9

// AppendDeflatePadding appends to dst exactly n bytes of deflate blocks
// that produce no output, and returns the extended slice. They go inside a
// gzip or deflate (zlib) stream between [Encoder.Flush] and
// [Encoder.Close]: the Flush (a sync flush) ends the data on a byte
// boundary with a block that is not the last, and Close then adds the
// last block and the trailer, whose CRC-32 or Adler-32 and length count
// only the plain bytes, which the padding leaves alone. n must be from
// [MinDeflatePadding] to [MaxPadding].
//
// The blocks are empty stored blocks (5 bytes each from a byte boundary:
// the 3-bit header, 5 bits to the boundary, LEN 0 and NLEN 0xffff) and
// empty fixed-Huffman blocks (10 bits each: the header and the 7-bit end of
// block), a run of k of them closed by an empty stored block, which brings
// the stream back to a byte boundary, taking ceil((10k+3)/8)+4 bytes: 9 to
// 12 bytes for k from 3 to 6, 13 as two runs (k 1 and 2).
func AppendDeflatePadding(dst []byte, n int) ([]byte, error) {
	if n < MinDeflatePadding || n > MaxPadding {
		return dst, fmt.Errorf("writers: %d bytes of deflate padding: want %d to %d", n, MinDeflatePadding, MaxPadding)
	}
	for ; n > 13; n -= 5 {
		dst = append(dst, 0, 0, 0, 0xff, 0xff)
	}
	switch n {
	case 13:
		dst = appendEmptyFixedRun(dst, 1)
		return appendEmptyFixedRun(dst, 2), nil
	default: // 9 to 12
		return appendEmptyFixedRun(dst, n-6), nil
	}
}

// appendEmptyFixedRun appends k empty fixed-Huffman blocks and an empty
// stored block, none of them the last, from a byte boundary to one.
func appendEmptyFixedRun(dst []byte, k int) []byte {
	var acc uint64 // bits, least significant first, as deflate packs them
	bits := 0
	for range k {
		acc |= 2 << bits // BFINAL 0, BTYPE 01; the end of block is 7 zero bits
		bits += 10
	}
	bits += 3 // BFINAL 0, BTYPE 00, then zeros to the byte boundary
	for ; bits > 0; bits -= 8 {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return append(dst, 0, 0, 0xff, 0xff) // LEN 0, NLEN
}

// appendFill appends n bytes of paddingFill.
func appendFill(dst []byte, n int) []byte {
	for n > 0 {
		k := min(n, len(paddingFill))
		dst = append(dst, paddingFill[:k]...)
		n -= k
	}
	return dst
}

// appendBrotliMetadata appends n bytes of brotli metadata meta-blocks,
// starting on a byte boundary. Each begins with ISLAST=0, MNIBBLES=0
// (coded 11), the reserved zero bit and MSKIPBYTES (RFC 7932 §9.2): with
// MSKIPBYTES 0 the block is that one byte, 0x06, and skips nothing; with 1
// or 2, MSKIPLEN-1 follows in as many bytes, the header is padded to a byte
// boundary, and MSKIPLEN bytes follow. A length of 2 is two empty blocks,
// since the shortest block that skips a byte is 3 bytes long.
func appendBrotliMetadata(dst []byte, n int) []byte {
	switch {
	case n == 1:
		return append(dst, 0x06)
	case n == 2:
		return append(dst, 0x06, 0x06)
	case n == 2+1<<8+1:
		// Too long for one byte of MSKIPLEN-1, too short for two.
		return appendBrotliMetadata(append(dst, 0x06), n-1)
	case n-2 <= 1<<8:
		// 6 header bits, then 8 bits of MSKIPLEN-1, then 2 bits of padding.
		skip := uint32(n - 2 - 1)
		v := uint32(0x16) | skip<<6
		dst = append(dst, byte(v), byte(v>>8))
		return appendFill(dst, n-2)
	default:
		// 6 header bits, then 16 bits of MSKIPLEN-1, then 2 of padding.
		// MSKIPLEN-1 is at least 1<<8 here, so its last byte is not zero,
		// as the RFC requires of MSKIPBYTES 2.
		skip := uint32(n - 3 - 1)
		v := uint32(0x26) | skip<<6
		dst = append(dst, byte(v), byte(v>>8), byte(v>>16))
		return appendFill(dst, n-3)
	}
}
