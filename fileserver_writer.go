package squeeze

import (
	"errors"
	"io"
	"net/http"
	"strconv"
)

// This file holds fileWriter, the ResponseWriter of one file response.

// fileWriter is the ResponseWriter of one file response: it counts the
// bytes sent for the observer, and drops the Accept-Ranges that
// http.ServeContent sets on an encoded response, whose byte ranges it
// does not serve.
type fileWriter struct {
	http.ResponseWriter
	encoded bool
	status  int
	n       int64
	// verify, when set, is asked before the last byte of a 200 or 206
	// body goes out whether the bytes sent came from those that were
	// verified (serveSibling, serveOrphan). The last byte is held back
	// until it says so; when it does not, the body stops there (cut), one
	// byte short of its Content-Length, and the response is aborted
	// (endVerified), so no client gets a complete body that was not
	// verified. left is what the body has yet to send.
	verify func() bool
	left   int64
	cut    bool
}

// errCut is what a fileWriter's Write answers once its verify has failed.
var errCut = errors.New("squeeze: FileServer: the body changed while it was sent")

func (w *fileWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.verify != nil {
			w.left = -1 // no Content-Length: nothing goes out
			if code != http.StatusOK && code != http.StatusPartialContent {
				w.verify = nil // no body of the file
			} else if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil {
				w.left = n
			}
		}
	}
	if w.encoded {
		h := w.Header()
		delete(h, "Accept-Ranges")
		if code != http.StatusOK && code != http.StatusNotModified {
			// A 412 (or any error) has no encoded body: its header must
			// not describe one.
			delete(h, "Content-Encoding")
			delete(h, "Content-Length")
			delete(h, "Etag")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.verify != nil {
		return w.writeVerified(p)
	}
	return w.write(p)
}

func (w *fileWriter) write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// writeVerified writes p, holding back the body's last byte until verify
// says the bytes sent came from those that were verified.
func (w *fileWriter) writeVerified(p []byte) (int, error) {
	if w.cut || w.left <= 0 {
		w.cut = true
		return 0, errCut
	}
	if int64(len(p)) < w.left {
		n, err := w.write(p)
		w.left -= int64(n)
		return n, err
	}
	n, err := w.write(p[:w.left-1])
	w.left -= int64(n)
	if err != nil {
		return n, err
	}
	if !w.verify() {
		w.cut = true
		return n, errCut
	}
	k, err := w.write(p[n:])
	w.left -= int64(k)
	return n + k, err
}

// ReadFrom keeps sendfile for plain files.
func (w *fileWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.verify != nil {
		return io.Copy(writeOnly{w}, src)
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writeOnly{w.ResponseWriter}, src)
	}
	w.n += n
	return n, err
}

// Unwrap returns the underlying ResponseWriter, for
// [http.ResponseController].
func (w *fileWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
