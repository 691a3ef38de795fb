package squeeze

import "net/http"

// finish completes the response when the handler returns. After a panic or
// runtime.Goexit (completed false) nothing more is sent, and neither is the
// end of a stream whose length differs from the one the handler declared:
// the encoded stream is left without its end marker, so the client cannot
// take the truncated body for a whole one.
func (rw *responseWriter) finish(completed bool) {
	if !completed {
		if rw.state == stateComparing {
			_ = rw.unhold() // what a stream in progress would have sent
		}
		rw.releaseEncoder()
		rw.untouched = rw.state == stateWaiting && rw.status == 0
	} else {
		if rw.state == stateWaiting && rw.status == 0 {
			rw.leaveUntouched()
		}
		if rw.state == stateWaiting {
			rw.implicitHeader()
		}
		if rw.state == stateWaiting {
			_ = rw.advance(atEnd, nil)
		}
		if rw.state == stateComparing {
			rw.endCompared()
		}
		if rw.state == stateEncoding {
			rw.endStream()
		}
		if rw.state == stateDiscarding {
			rw.sendHit()
		}
	}
	if rw.hashed != nil {
		rw.m.hiding.endStream(rw.hashed)
		rw.hashed = nil
	}
	if rw.nhooks > 0 {
		end := rw.end(completed)
		for _, k := range rw.hooks[:rw.nhooks] {
			k.ended(end)
		}
	}
	if rw.buf != nil {
		rw.keepBuffer(rw.buf)
		rw.buf = nil
	}
	if rw.state != stateHijacked {
		if rw.m.observe != nil {
			rw.report.send(rw) // last: an observer that panics leaves no hook unended
		}
		rw.state = stateFinished
	}
}

// leaveUntouched makes the header edits of a response whose handler
// returned without choosing a status or writing a byte, decided as the
// empty 200 it would be (Vary, for one), and sends nothing: in net/http the
// implicit 200 is the server's, once the outermost handler has returned.
// Until then the response belongs to whoever writes next: a handler
// around the middleware, or one that writes through the writer the
// handler was given once it returned (echo's error handler, behind
// echo.WrapMiddleware), which close hands back the response for.
func (rw *responseWriter) leaveUntouched() {
	rw.untouched = true
	rw.status = http.StatusOK
	rw.readHeader(rw.w.Header())
	_ = rw.advance(atEnd, nil)
}

// endStream completes an encoded stream, or, when the body did not match
// its declared length, sends what was written without the stream's end, as
// net/http sends a short body: every decoder then reports it cut. Errors
// here mean the client went away; there is no one left to tell.
func (rw *responseWriter) endStream() {
	t0 := rw.clock()
	if rw.hdr.declared < 0 || rw.written == rw.hdr.declared || rw.head {
		_ = rw.endCarry() // held back in case it began a marked secret
		rw.closed = rw.closeStream()
	} else {
		_ = rw.enc.Flush()
	}
	rw.spent(t0)
	rw.releaseEncoder()
}

// closeStream completes an encoded stream, with its padding under
// WithLengthHiding, which all of its plain bytes decide: written straight
// to the wire, so that a Cache's fill keeps the stream unpadded; for br,
// dcb and gzip between a Flush and Close, for zstd and dcz after Close
// (lengthhiding.go). It reports whether the stream ended whole.
func (rw *responseWriter) closeStream() bool {
	pad := rw.m.hiding.streamPadding(rw.offer.coding, rw.hashed)
	if pad == nil {
		return rw.enc.Close() == nil
	}
	defer rw.m.hiding.bufs.Put(pad)
	within := deltaCodec(rw.offer.coding) != Zstd
	if within && rw.enc.Flush() != nil || !within && rw.enc.Close() != nil {
		return false
	}
	if _, err := (*wire)(rw).Write(*pad); err != nil {
		return false
	}
	return !within || rw.enc.Close() == nil
}

func (rw *responseWriter) releaseEncoder() {
	if rw.enc != nil {
		rw.offer.encoders.Put(rw.enc)
		rw.enc = nil
	}
}

// releaseBuffer gives the held-back buffer to the pool: the response goes
// on as a stream, or the handler took the connection.
func (rw *responseWriter) releaseBuffer() {
	if rw.buf != nil {
		rw.m.buffers.Put(rw.buf)
		rw.buf = nil
	}
}

// getBuffer returns an empty buffer: one the slot kept, or one from the
// pool.
func (rw *responseWriter) getBuffer() *[]byte {
	for i, b := range rw.slot.spare {
		if b != nil {
			rw.slot.spare[i] = nil
			return b
		}
	}
	return rw.m.buffers.Get()
}

// keepBuffer empties b and keeps it in the slot for the next response, or
// gives it to the pool if the slot has two already.
func (rw *responseWriter) keepBuffer(b *[]byte) {
	for i, spare := range rw.slot.spare {
		if spare == nil {
			*b = (*b)[:0]
			rw.slot.spare[i] = b
			return
		}
	}
	rw.m.buffers.Put(b)
}
