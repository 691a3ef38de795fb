package squeeze

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/decode"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Transport is an [http.RoundTripper] that asks for compressed responses
// and decodes them under the limits squeeze puts on request bodies,
// compresses request bodies, and, when given a budget for them, speaks
// Compression Dictionary Transport (RFC 9842). It wraps another
// RoundTripper, [http.DefaultTransport] unless Base says otherwise.
//
// Its zero value is ready to use: it offers zstd, br and gzip, decodes
// responses up to 10 MiB, and sends request bodies as
// they are. As with [http.Transport], the fields must not change once the
// Transport has been used, and a Transport should be reused rather than
// created per request: it holds the decoder pools, the decoder memory
// budget and the dictionaries. It is safe for concurrent use.
//
// When the caller set no Accept-Encoding, the request is not HEAD and
// carries no Range, RoundTrip asks for the Encodings and decodes the body
// (at most two stacked codings), as [http.Transport] does for its gzip:
// Content-Encoding and Content-Length go and Uncompressed is true. Reading
// fails past MaxDecompressedSize with an [*http.MaxBytesError], on a bad
// stream with [ErrInvalidBody], and with [ErrDecoderBusy] when
// DecoderMemory stays spent for 200 ms. Close bodies: one never closed
// holds its decoders until the garbage collector finds it.
//
// With RequestEncoding set, request bodies of at least RequestMinSize
// bytes are compressed; the caller's request is never modified.
//
// With DictionaryStoreSize above zero, fresh Use-As-Dictionary responses
// are kept per origin and offered back (RFC 9842). A stored dictionary
// identifies the client to its origin much as a cookie does: a client
// that must not be recognised keeps dictionaries off. The details and
// bounds are in docs/reference.md ("Go clients").
type Transport struct {
	// Base carries the requests; nil means [http.DefaultTransport].
	Base http.RoundTripper

	// Encodings lists the codings offered in Accept-Encoding, most
	// preferred first: any of [Zstd], [Brotli], [Gzip] and [Deflate]. nil
	// means [DefaultEncodings] (zstd, br, gzip); an empty list offers
	// identity only. Any other coding, or one listed twice, is an error
	// from RoundTrip.
	Encodings []string

	// MaxDecompressedSize caps a decoded body; 0 means 10 MiB, negative errs.
	MaxDecompressedSize int64

	// DecoderMemory is what its response decoders may hold at once, charged
	// as [WithDecoderMemory] says; 0 means 256 MiB, negative is an error.
	DecoderMemory int64

	// RequestEncoding is the coding request bodies are compressed with,
	// at its default level; "" sends them as they are.
	RequestEncoding string

	// RequestMinSize is the smallest request body RequestEncoding takes.
	RequestMinSize int64

	// DictionaryStoreSize is the byte budget of stored dictionaries and of
	// the bodies being read to become ones; 0 (the default) turns
	// dictionaries off. A body over a quarter of it is not kept.
	DictionaryStoreSize int64

	// DictionaryMaxAge is the longest a dictionary is kept, however long
	// its response stays fresh; 0 means 30 days, negative is an error.
	DictionaryMaxAge time.Duration

	once  sync.Once
	state *transportState
}

// defaultDictionaryMaxAge is the longest a [Transport] keeps a dictionary
// when DictionaryMaxAge is 0: 30 days. A stored dictionary identifies the
// client to its origin as a cookie would, and a response may declare
// decades of freshness; 30 days covers the release cycles of the bundles
// dictionaries are made for while bounding how long one can serve as an
// identifier.
const defaultDictionaryMaxAge = 30 * 24 * time.Hour

// uploadBufferMax is the longest request body of known length that is
// compressed before it is sent, so its Content-Length can be given.
const uploadBufferMax = 64 << 10

// transportState is what a Transport builds from its fields on first use.
type transportState struct {
	err error // an invalid field: every RoundTrip fails with it

	acceptEncoding     string // without dictionaries
	acceptEncodingDict string // with dcb and dcz added
	dec                *decode.Decoders
	upload             *pool.Encoders // nil: bodies go as they are
	uploadBuf          *pool.Buffers
	dicts              *clientDictStore // nil: no dictionaries
}

// init returns t's state, built from its fields on first use.
func (t *Transport) init() *transportState {
	t.once.Do(func() { t.state = t.build() })
	return t.state
}

// build checks t's fields and builds the state they describe; a field in
// error leaves it with err set, which every request then returns.
func (t *Transport) build() *transportState {
	s := new(transportState)
	fail := func(err error) *transportState {
		s.err = err
		return s
	}
	for _, f := range [...]struct {
		name string
		v    int64
	}{
		{"MaxDecompressedSize", t.MaxDecompressedSize},
		{"DecoderMemory", t.DecoderMemory},
		{"RequestMinSize", t.RequestMinSize},
		{"DictionaryStoreSize", t.DictionaryStoreSize},
	} {
		if f.v < 0 {
			return fail(fmt.Errorf("squeeze: Transport: %s %d must not be negative", f.name, f.v))
		}
	}
	if t.DictionaryMaxAge < 0 {
		return fail(fmt.Errorf("squeeze: Transport: DictionaryMaxAge %v must not be negative", t.DictionaryMaxAge))
	}
	offered, err := t.offered()
	if err != nil {
		return fail(err)
	}
	s.acceptEncoding = strings.Join(offered, ", ")
	if s.acceptEncoding == "" {
		s.acceptEncoding = "identity"
	}
	s.acceptEncodingDict = strings.Join(append(offered, DCB, DCZ), ", ")
	limit := t.MaxDecompressedSize
	if limit == 0 {
		limit = defaultMaxDecompressedSize
	}
	dec, err := decode.New(decode.Limits{MaxSize: limit, Memory: cmp.Or(t.DecoderMemory, defaultDecoderMemory)})
	if err != nil {
		return fail(err)
	}
	s.dec = dec
	if t.RequestEncoding != "" {
		if s.upload, s.uploadBuf, err = t.uploadPools(); err != nil {
			return fail(err)
		}
	}
	if t.DictionaryStoreSize > 0 {
		maxAge := t.DictionaryMaxAge
		if maxAge == 0 {
			maxAge = defaultDictionaryMaxAge
		}
		s.dicts = newClientDictStore(t.DictionaryStoreSize, maxAge)
	}
	return s
}

// uploadPools returns the pools that compress request bodies in
// RequestEncoding, at its default level.
func (t *Transport) uploadPools() (*pool.Encoders, *pool.Buffers, error) {
	coding, ok := writers.Canonical(t.RequestEncoding)
	if !ok {
		return nil, nil, &optionError{
			msg: fmt.Sprintf("squeeze: Transport: RequestEncoding %q is not a coding squeeze implements (want zstd, br, gzip or deflate)", t.RequestEncoding),
			err: writers.ErrUnknownCoding,
		}
	}
	levels, err := writers.Levels(coding)
	if err != nil {
		return nil, nil, err
	}
	enc, err := pool.NewEncoders(coding, levels.Default)
	if err != nil {
		return nil, nil, fmt.Errorf("squeeze: Transport: %w", err)
	}
	buf, err := pool.NewBuffers(32 << 10)
	if err != nil {
		return nil, nil, err
	}
	return enc, buf, nil
}

// offered returns the canonical names of the codings Encodings offers, or
// an error naming the list as written when it has a coding squeeze does not
// implement or names one coding twice, under one name or two (x-gzip is
// gzip).
func (t *Transport) offered() ([]string, error) {
	encodings := t.Encodings
	if encodings == nil {
		return DefaultEncodings(), nil
	}
	field := fmt.Sprintf("Transport: Encodings %#v", encodings)
	offered := make([]string, 0, len(encodings))
	for _, e := range encodings {
		coding, ok := writers.Canonical(e)
		if !ok {
			return nil, unknownCodingError(field, e)
		}
		if i := slices.Index(offered, coding); i >= 0 {
			if encodings[i] == e {
				return nil, fmt.Errorf("squeeze: %s: coding %q is listed twice", field, e)
			}
			return nil, fmt.Errorf("squeeze: %s: coding %q repeats %q", field, e, encodings[i])
		}
		offered = append(offered, coding)
	}
	return offered, nil
}

// RoundTrip sends req through Base, compressing its body and asking for and
// decoding a compressed response as the [Transport] documentation describes.
// req is not modified: a request that needs other header fields or another
// body is sent as a copy. As every [http.RoundTripper], it closes req.Body,
// even on errors.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := t.init()
	if s.err != nil {
		closeRequestBody(req)
		return nil, s.err
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	out := req
	copied := false
	copyReq := func() {
		if !copied {
			r := *req
			r.Header = req.Header.Clone()
			if r.Header == nil {
				r.Header = make(http.Header)
			}
			out, copied = &r, true
		}
	}

	if s.upload != nil && req.Body != nil && req.Body != http.NoBody && len(req.Header["Content-Encoding"]) == 0 {
		copyReq()
		if err := s.compressRequest(out, t.RequestMinSize); err != nil {
			closeRequestBody(req)
			return nil, err
		}
	}

	decode := len(req.Header["Accept-Encoding"]) == 0 && req.Method != http.MethodHead && len(req.Header["Range"]) == 0
	var dict *clientDict
	if decode {
		copyReq()
		ae := s.acceptEncoding
		if s.dicts != nil && req.URL != nil {
			if dict = s.dicts.match(req, time.Now()); dict != nil {
				ae = s.acceptEncodingDict
				out.Header.Set("Available-Dictionary", dict.availableDictionary())
				if dict.id != "" {
					out.Header.Set("Dictionary-ID", cdt.DictionaryID(dict.id))
				}
			}
		}
		out.Header.Set("Accept-Encoding", ae)
	}

	resp, err := base.RoundTrip(out)
	if err != nil || !decode {
		return resp, err
	}
	s.decodeResponse(out, resp, dict)
	return resp, nil
}

// CloseIdleConnections closes the idle connections of Base, if it has such
// a method, as [http.Client.CloseIdleConnections] expects of a Transport.
func (t *Transport) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(closeIdler); ok {
		c.CloseIdleConnections()
	}
}

// closeRequestBody closes req's body, as a RoundTripper must on errors.
func closeRequestBody(req *http.Request) {
	if req != nil && req.Body != nil {
		_ = req.Body.Close()
	}
}

// decodeResponse replaces resp's body with its decoding when its
// Content-Encoding names codings the Transport can undo, and arranges for
// it to be stored as a dictionary if it asks to be. req is the request sent
// and dict the dictionary it offered, if any.
func (s *transportState) decodeResponse(req *http.Request, resp *http.Response, dict *clientDict) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified || resp.StatusCode < 200 {
		return
	}
	var codings [decode.MaxCodings]string
	n := 0
	for token := range contentCodings(resp.Header["Content-Encoding"]) {
		coding, ok := writers.Canonical(token)
		switch {
		case ok && s.dec.Undoes(coding):
		case dict != nil && (strings.EqualFold(token, DCZ) || strings.EqualFold(token, DCB)):
			coding = strings.ToLower(token)
		default:
			return // a coding it cannot undo: the response as it came
		}
		if n == len(codings) {
			return // too deep a stack
		}
		codings[n] = coding
		n++
	}
	var capture *dictCapture
	if s.dicts != nil {
		offer, ok := offerOf(req, resp, time.Now(), s.dicts.maxAge)
		size := int64(-1)
		if n == 0 {
			size = resp.ContentLength // of the body as it will be read
		}
		if ok && size <= s.dicts.maxCapture {
			capture = &dictCapture{store: s.dicts, offer: offer, size: size}
		}
	}
	if n == 0 {
		if capture != nil {
			body := &transportBody{r: resp.Body, c: resp.Body, capture: capture}
			// A body dropped unclosed gives its capture's reservation
			// back when collected.
			runtime.AddCleanup(body, (*dictCapture).abandon, capture)
			resp.Body = body
		}
		return
	}
	var d decode.Dictionary
	if dict != nil {
		d = decode.Dictionary{Data: dict.data, Hash: dict.hash}
	}
	b := s.dec.NewResponseBody(req.Context(), resp.Body, codings[:n], d)
	body := &transportBody{r: b, c: b, capture: capture}
	// A body dropped without Close gives its decoders and its budget back
	// when collected; b does not point back to body, so body can be.
	runtime.AddCleanup(body, func(b *decode.Body) { _ = b.Close() }, b)
	if capture != nil {
		runtime.AddCleanup(body, (*dictCapture).abandon, capture)
	}
	resp.Body = body
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
}

// transportBody is the Body of a response a Transport decodes or keeps as a
// dictionary.
type transportBody struct {
	r       io.Reader
	c       io.Closer
	capture *dictCapture // nil unless the response becomes a dictionary
}

// Read reads the decoded body; see [Transport] for its errors.
func (t *transportBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if c := t.capture; c != nil {
		c.write(p[:n])
		switch {
		case err == io.EOF:
			c.finish()
		case err != nil:
			c.abandon()
		}
	}
	return n, err
}

// Close gives the decoders and any capture's reservation back and closes
// the response body.
func (t *transportBody) Close() error {
	if c := t.capture; c != nil {
		c.abandon()
	}
	return t.c.Close()
}

// compressRequest makes r, a copy of the caller's request, send its body
// compressed, when it is long enough.
func (s *transportState) compressRequest(r *http.Request, minSize int64) error {
	body := r.Body
	length := r.ContentLength
	if length == 0 {
		length = -1 // a client request's 0 with a Body is unknown
	}
	if length >= 0 && length < minSize {
		return nil
	}
	if length < 0 && minSize > 0 {
		// Unknown length: read up to minSize bytes to tell.
		head, err := io.ReadAll(io.LimitReader(body, minSize))
		if err != nil {
			return err
		}
		if int64(len(head)) < minSize {
			// Shorter than the threshold: send it as it is, with its
			// length now known.
			_ = body.Close()
			r.Body = io.NopCloser(bytes.NewReader(head))
			r.ContentLength = int64(len(head))
			return nil
		}
		body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), body), body}
	}
	r.Header.Set("Content-Encoding", s.upload.Coding())
	if length >= 0 && length <= uploadBufferMax {
		// Compress it all now, so the length is known and a retry or a
		// redirect resends the same bytes.
		var buf bytes.Buffer
		err := s.compressTo(&buf, body)
		_ = body.Close()
		if err != nil {
			return err
		}
		enc := buf.Bytes()
		r.Body = io.NopCloser(bytes.NewReader(enc))
		r.ContentLength = int64(len(enc))
		r.Header.Set("Content-Length", fmt.Sprint(len(enc)))
		if r.GetBody != nil {
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(enc)), nil }
		}
		return nil
	}
	r.Body = s.compressing(body)
	r.ContentLength = -1
	r.Header.Del("Content-Length")
	if orig := r.GetBody; orig != nil {
		r.GetBody = func() (io.ReadCloser, error) {
			b, err := orig()
			if err != nil {
				return nil, err
			}
			return s.compressing(b), nil
		}
	}
	return nil
}

// compressTo writes src compressed to dst.
func (s *transportState) compressTo(dst io.Writer, src io.Reader) error {
	e, err := s.upload.Get(dst)
	if err != nil {
		return err
	}
	defer s.upload.Put(e)
	buf := s.uploadBuf.Get()
	defer s.uploadBuf.Put(buf)
	if _, err := io.CopyBuffer(e, src, (*buf)[:cap(*buf)]); err != nil {
		return err
	}
	return e.Close()
}

// compressing returns a body that reads src compressed, pulled through a
// pooled encoder as the body is read: no goroutine, nothing to leak.
func (s *transportState) compressing(src io.ReadCloser) io.ReadCloser {
	return &compressingBody{s: s, src: src}
}

// compressingBody compresses its source as it is read. net/http may Close
// it while a Read is blocked (when the response arrives first); Close
// closes the source, which ends the Read, then gives the encoder back.
type compressingBody struct {
	s   *transportState
	src io.ReadCloser

	mu     sync.Mutex // guards the fields below and serialises Read
	enc    *pool.Encoder
	buf    *[]byte      // input read from src
	out    bytes.Buffer // compressed bytes not yet returned
	done   bool         // the stream is complete in out
	err    error        // sticky: the source's failure
	closed bool
}

func (c *compressingBody) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.out.Len() == 0 {
		switch {
		case c.closed:
			return 0, http.ErrBodyReadAfterClose
		case c.err != nil:
			return 0, c.err
		case c.done:
			return 0, io.EOF
		}
		c.fill()
	}
	return c.out.Read(p)
}

// fill reads one chunk of the source and compresses it into out, finishing
// the stream at the source's end.
func (c *compressingBody) fill() {
	if c.enc == nil {
		e, err := c.s.upload.Get(&c.out)
		if err != nil {
			c.err = err
			return
		}
		c.enc, c.buf = e, c.s.uploadBuf.Get()
	}
	in := (*c.buf)[:cap(*c.buf)]
	n, err := c.src.Read(in)
	if n > 0 {
		if _, werr := c.enc.Write(in[:n]); werr != nil {
			c.err = werr
		}
	}
	switch {
	case c.err != nil:
	case err == io.EOF:
		c.err = c.enc.Close()
		c.done = c.err == nil
		c.release()
	case err != nil:
		c.err = err
		c.release()
	}
}

func (c *compressingBody) release() {
	if c.enc != nil {
		c.s.upload.Put(c.enc)
		c.s.uploadBuf.Put(c.buf)
		c.enc, c.buf = nil, nil
	}
}

// Close closes the source and gives the encoder back.
func (c *compressingBody) Close() error {
	err := c.src.Close()
	c.mu.Lock()
	c.closed = true
	c.release()
	c.mu.Unlock()
	return err
}
