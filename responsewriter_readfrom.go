package squeeze

import (
	"io"
	"net/http"

	"github.com/squeezehttp/squeeze/internal/pool"
)

// holdFrom takes what src gives into the buffer while the
// verdict waits. A body that fills the buffer exactly is told from a longer
// one by reading one byte more: only a longer one commits to a stream. As
// with net/http's own ReadFrom, an empty src writes nothing: the status is
// set (200 unless WriteHeader came first) by the first byte, not the call.
func (rw *responseWriter) holdFrom(src io.Reader) (int64, error) {
	rw.held = nil // what src gives joins the buffer
	var total int64
	if rw.state == stateWaiting && rw.status == 0 {
		m, err := readSome(src, rw.first[:])
		if m == 0 {
			if err == io.EOF {
				err = nil
			}
			return 0, err
		}
		rw.implicitHeader()
		k, err := rw.write(rw.first[:m])
		total = int64(k)
		if err != nil || rw.state != stateWaiting {
			return total, err
		}
	}
	if rw.state == stateWaiting {
		rw.implicitHeader()
	}
	if rw.state != stateWaiting {
		return total, nil
	}
	n, full, err := rw.fillBuffer(src)
	total += int64(n)
	if err != nil || !full {
		return total, err
	}
	var one [1]byte
	m, err := readSome(src, one[:])
	if m == 0 {
		if err == io.EOF {
			err = nil // the body ended with the buffer full
		}
		return total, err
	}
	if err := rw.advance(atOverflow, one[:m]); err != nil {
		return total, err
	}
	k, err := rw.write(one[:m])
	return total + int64(k), err
}

// readSome reads into p until it gets a byte or an error, as io.ReadAtLeast
// does for one byte, giving up on a reader that keeps returning nothing.
func readSome(src io.Reader, p []byte) (int, error) {
	for range 100 {
		if n, err := src.Read(p); n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// fillBuffer reads from src into the buffer until it is full or src ends. It
// reports whether the buffer filled, in which case more may follow. A body
// that goes past its declared length is cut there and reported as
// [http.ErrContentLength]. Like io.Copy, it gives up on a reader that
// returns nothing 100 times in a row.
func (rw *responseWriter) fillBuffer(src io.Reader) (int, bool, error) {
	if rw.buf == nil {
		rw.buf = rw.getBuffer()
	}
	b := *rw.buf
	start := len(b)
	defer func() { *rw.buf = b }()
	for empty := 0; len(b) < cap(b); {
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if rw.hdr.declared >= 0 && int64(len(b)) > rw.hdr.declared && !rw.head {
			b = b[:rw.hdr.declared]
			return len(b) - start, false, http.ErrContentLength
		}
		switch {
		case err == io.EOF:
			return len(b) - start, false, nil
		case err != nil:
			return len(b) - start, false, err
		case n > 0:
			empty = 0
		default:
			if empty++; empty == 100 {
				return len(b) - start, false, io.ErrNoProgress
			}
		}
	}
	return len(b) - start, true, nil
}

// copyThrough copies src to dst through a buffer from buffers rather than
// the 32 KiB one io.Copy would allocate.
func copyThrough(buffers *pool.Buffers, dst io.Writer, src io.Reader) (int64, error) {
	buf := buffers.Get()
	defer buffers.Put(buf)
	return io.CopyBuffer(dst, src, (*buf)[:cap(*buf)])
}
