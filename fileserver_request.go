package squeeze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// This file holds one request to the file server, from its URL path to the
// representation it is sent: the checks on the path (dot files, "..",
// encoded slashes), directories and their index.html, the choice among the
// plain file, a sibling, an encoding from the store and a delta
// (serveFile), and the headers and preconditions each goes out with.

// fileRequest is what one request to the file server needs as it goes.
type fileRequest struct {
	s    *fileServer
	fsys fs.FS
	w    *fileWriter
	r    *http.Request
	name string // the plain file's name in fsys
	// upath is the request's URL path as it arrived, escaped, before any
	// prefix was stripped: dictionary patterns apply to it.
	upath string
	meta  *fileMeta
	ev    ResponseInfo
	// public is set when the response may be shared beyond its client
	// (publicResponse), as serveFile finds it.
	public bool
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Should the Middleware's Handler wrap the file server after all, the
	// file server reports this response, and the Handler must not.
	s.m.skipReport(w)
	if len(r.Header["Range"]) > 0 && ifRangeNeverHolds(r.Header["If-Range"]) {
		r = withoutRange(r) // the whole file, which may go out encoded
	}
	fr := &fileRequest{s: s, r: r, w: &fileWriter{ResponseWriter: w}}
	if s.m.observe != nil {
		defer fr.report()
	}
	w = fr.w
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		fileError(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	upath := r.URL.Path
	if !strings.HasPrefix(upath, "/") {
		upath = "/" + upath
	}
	if containsDotDot(upath) {
		fileError(w, "invalid URL path", http.StatusBadRequest)
		return
	}
	raw := strings.ToLower(r.URL.RawPath)
	if strings.ContainsAny(upath, "\x00\\") || strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") {
		fileError(w, "404 page not found", http.StatusNotFound)
		return
	}
	fsys, err := s.files()
	if err != nil {
		s.logf("squeeze: FileServer: %v", err)
		fileError(w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	name := strings.TrimPrefix(path.Clean(upath), "/")
	if name == "" {
		name = "."
	}
	if !fs.ValidPath(name) {
		fileError(w, "404 page not found", http.StatusNotFound)
		return
	}
	fr.fsys, fr.name, fr.upath = fsys, name, originalPath(r)
	if !s.dotfiles && hasDotSegment(name) {
		fr.fail(fs.ErrNotExist)
		return
	}
	fr.serve(strings.HasSuffix(upath, "/"))
}

// originalPath returns the escaped URL path r arrived with, before
// [http.StripPrefix] or a router removed a prefix.
func originalPath(r *http.Request) string {
	if r.RequestURI != "" && r.RequestURI != "*" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			return u.EscapedPath()
		}
	}
	return r.URL.EscapedPath()
}

// FileServerDotfiles sets whether a [Middleware.FileServer] serves files and directories whose names start with a dot. By default it
// does not: a path with any segment starting with a dot (/.env,
// /.git/config, /.well-known/security.txt) gets 404, as if the file were
// missing, and such files are never dictionaries, since a tree meant to be
// served often holds a .env or a .git directory by mistake, and squeeze
// precompress skips them too. Allow them only for a tree whose every
// dotfile is public; to serve /.well-known alone, mount a FileServer with
// this option on that path only.
func FileServerDotfiles(allow bool) FileServerOption {
	return func(s *fileServer) { s.dotfiles = allow }
}

// hasDotSegment reports whether the cleaned name in an fs.FS ("." for the
// root) has an element starting with a dot.
func hasDotSegment(name string) bool {
	for _, e := range strings.Split(name, "/") {
		if e != "." && strings.HasPrefix(e, ".") {
			return true
		}
	}
	return false
}

// containsDotDot reports whether a path has a ".." element.
func containsDotDot(v string) bool {
	for _, e := range strings.FieldsFunc(v, func(c rune) bool { return c == '/' }) {
		if e == ".." {
			return true
		}
	}
	return false
}

// serve answers the request. slash says the URL path ended with "/".
func (fr *fileRequest) serve(slash bool) {
	f, err := fr.fsys.Open(fr.name)
	if err == nil {
		st, err := f.Stat()
		switch {
		case err != nil:
			_ = f.Close()
			fr.fail(err)
			return
		case st.IsDir():
			_ = f.Close()
			if !slash {
				// The relative form keeps any stripped prefix.
				fr.redirect(path.Base(fr.r.URL.Path) + "/")
				return
			}
			fr.name = path.Join(fr.name, "index.html")
			if f, err = fr.fsys.Open(fr.name); err != nil {
				fr.fail(err)
				return
			}
			if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
				_ = f.Close()
				fr.fail(fs.ErrNotExist)
				return
			}
		case !st.Mode().IsRegular():
			_ = f.Close()
			fr.fail(fs.ErrNotExist)
			return
		case slash:
			_ = f.Close()
			fr.fail(fs.ErrNotExist)
			return
		}
		defer func() { _ = f.Close() }()
		fr.serveFile(f, st)
		return
	}
	if !errors.Is(err, fs.ErrNotExist) || slash {
		fr.fail(err)
		return
	}
	fr.serveOrphan()
}

// fail answers with 403 for a permission error and 404 for anything else:
// what a path that leads out of the tree gets is no different from a
// missing file.
func (fr *fileRequest) fail(err error) {
	if errors.Is(err, fs.ErrPermission) {
		fileError(fr.w, "403 Forbidden", http.StatusForbidden)
		return
	}
	fileError(fr.w, "404 page not found", http.StatusNotFound)
}

func (fr *fileRequest) redirect(to string) {
	if fr.r.URL.RawQuery != "" {
		to += "?" + fr.r.URL.RawQuery
	}
	fr.w.Header().Set("Location", to)
	fr.w.WriteHeader(http.StatusMovedPermanently)
}

// serveFile serves the regular file f, open on fr.name, with info st, in
// steps: the version of the file (fileVersion), the codings on offer for it
// (fileOffers), the one the client gets (chooseOffer), the header
// (fileHeader), then decide's verdict: the plain file, a sibling, or an
// encoding (serveEncoding).
func (fr *fileRequest) serveFile(f fs.File, st fs.FileInfo) {
	m := fr.s.m
	ranged := len(fr.r.Header["Range"]) > 0
	meta, eligible, encodable, err := fr.fileVersion(f, st, ranged)
	if err != nil {
		fr.internalError(err)
		return
	}
	var offersBuf [8]offer
	siblings := map[string]*sibling{}
	defer closeSiblings(siblings)
	offers := fr.fileOffers(offersBuf[:0], meta, encodable, siblings)
	o, fallback, dictPattern, dictVaries := fr.chooseOffer(offers, encodable, ranged)
	fr.fileHeader(f, meta, eligible && !ranged, dictPattern, dictVaries)

	ff := fr.fileFacts(meta, eligible, ranged)
	ff.siblings = len(siblings) > 0
	ff.precoded = o != nil && o.dict == nil && siblings[o.coding] != nil
	// A file that may not be encoded and has no siblings has nothing on
	// offer: whether the client accepts a coding is then whether it
	// accepts one of the Middleware's, as for a response.
	ff.offered = o != nil || !encodable && !ff.siblings && negotiate(fr.r.Header["Accept-Encoding"], m.offers) >= 0
	v, why, _ := m.decide(&ff)
	switch {
	case v != sendEncoded || o == nil:
		// o is nil only with a plain verdict: a file with nothing on
		// offer is one unfit to encode, and decide says why.
		fr.ev.Skipped = why
		fr.servePlain(f, meta)
	case ff.precoded:
		fr.serveSibling(siblings[o.coding], meta)
	default:
		// For a delta, the sibling the client would get without it.
		var alt *sibling
		if o.dict != nil && fallback != nil {
			alt = siblings[fallback.coding]
		}
		fr.serveEncoding(f, meta, o, alt, fallback, &ff)
	}
}

// internalError logs err and answers 500.
func (fr *fileRequest) internalError(err error) {
	fr.s.logf("squeeze: FileServer: %s: %v", fr.name, err)
	fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
}

// fileVersion returns what is known of version st of the file, open as f,
// and sets it as the request's: whether its type is eligible, and whether
// it may be encoded (eligible, long enough, within what the store keeps,
// and hashed). The file is hashed only when it may be encoded (within
// maxEncode, which bounds the hash too), or when this request may send a
// sibling or keep it as a dictionary: a file that is none of these, such
// as a video, goes out as http.FileServer sends it, without an ETag and
// without being read beyond what the request asks for. A range of a file
// that may be encoded is hashed, so that its ETag serves If-Range.
func (fr *fileRequest) fileVersion(f fs.File, st fs.FileInfo, ranged bool) (meta *fileMeta, eligible, encodable bool, err error) {
	s, m := fr.s, fr.s.m
	if meta, err = fr.metaOf(fr.name, f, st, false); err != nil {
		return nil, false, false, err
	}
	eligible = matchTypes(m.types, meta.ctype)
	encodable = eligible && meta.size >= int64(m.minSize) && meta.size <= s.maxEncode
	if meta.etag == "" && (encodable || !ranged && (fr.isDictionary(eligible, meta.size) || fr.hasSibling())) {
		if meta, err = fr.metaOf(fr.name, f, st, true); err != nil {
			return nil, false, false, err
		}
	}
	fr.meta = meta
	fr.ev.In = meta.size
	return meta, eligible, encodable && meta.etag != "", nil
}

// fileOffers appends to offers the codings on offer for version meta of
// the file: none when it is not hashed, else all of the Middleware's when
// it can be encoded, else those with a good sibling, which it opens into
// siblings, by coding.
func (fr *fileRequest) fileOffers(offers []offer, meta *fileMeta, encodable bool, siblings map[string]*sibling) []offer {
	if meta.etag == "" {
		return offers
	}
	for _, o := range fr.s.m.offers {
		if _, dup := siblings[o.coding]; dup {
			offers = append(offers, o)
		} else if sb := fr.s.goodSibling(fr.fsys, fr.name, meta, o.coding); sb != nil {
			siblings[o.coding] = sb
			offers = append(offers, o)
		} else if encodable {
			offers = append(offers, o)
		}
	}
	return offers
}

// chooseOffer returns the offer the client gets, nil for none, and with a
// delta, fallback, the offer negotiated without it; and the dictionary
// pattern the path matches (its index plus one, or 0) and whether
// dictionaries make the response vary.
func (fr *fileRequest) chooseOffer(offers []offer, encodable, ranged bool) (o, fallback *offer, dictPattern int, dictVaries bool) {
	if !ranged {
		if i := negotiate(fr.r.Header["Accept-Encoding"], offers); i >= 0 {
			o = &offers[i]
		}
	}
	// public is what the header set in front of the file server and the
	// request say of sharing the response (publicResponse): a file that
	// goes out in one that is not public becomes no dictionary, is no
	// delta against a remembered one, and none of its encodings is
	// written to the fleet's store.
	h := fr.w.Header()
	fr.public = publicResponse(fr.r.Header, h)
	if d := fr.s.m.dicts; d != nil {
		fr.primeDictionary(d)
		var delta *offer
		delta, dictPattern, dictVaries = d.begin(fr.r, fr.upath, ranged)
		if delta != nil && encodable && deltaAllowed(fr.r.Header, h, delta.dict) {
			fallback, o = o, delta
		}
	}
	return o, fallback, dictPattern, dictVaries
}

// fileHeader writes the header fields every representation of the file
// has: Vary, Content-Type, and those of dictionaries (dictionaryHeaders),
// keeping the file, when it is one, as a dictionary.
func (fr *fileRequest) fileHeader(f fs.File, meta *fileMeta, eligible bool, dictPattern int, dictVaries bool) {
	h := fr.w.Header()
	h["Vary"] = []string{"Accept-Encoding"}
	h["Content-Type"] = []string{meta.ctype}
	d := fr.s.m.dicts
	if d == nil {
		return
	}
	useAs := ""
	if dictPattern > 0 && eligible && fr.public && d.registrable(h, dictionaryCacheControl, fr.r, &d.routes[dictPattern-1]) {
		useAs = d.useAs[dictPattern-1]
		if fr.r.Method == http.MethodGet && meta.etag != "" {
			fr.rememberFileDictionary(f, d.patterns[dictPattern-1])
		}
	}
	dictionaryHeaders(h, dictVaries, useAs, dictionaryCacheControl, d.pageLinks(true, meta.ctype))
}

// serveEncoding sends the file encoded as o offers, from the store or
// encoded now; or alt, the sibling the client would get without the
// delta o, when there is no room to make the delta or it is no smaller;
// or, with no such sibling, the file encoded as fallback offers (the coding
// the client would get without the delta), when there is no room to make
// the delta: a delta's encoder can hold many times a plain one's; or else
// the plain file, when there is no room to encode or the coding does not
// make it smaller, for the reason decide gives with what ff then knows.
func (fr *fileRequest) serveEncoding(f fs.File, meta *fileMeta, o *offer, alt *sibling, fallback *offer, ff *facts) {
	data, err := fr.encodedRep(f, o)
	switch {
	case errors.Is(err, errNoRoom) && alt != nil:
		fr.serveSibling(alt, meta)
	case errors.Is(err, errNoRoom) && fallback != nil:
		if err := rewind(f); err != nil {
			fr.internalError(err)
			return
		}
		fr.serveEncoding(f, meta, fallback, nil, nil, ff)
	case errors.Is(err, errNoRoom):
		ff.noRoom = true
		fr.servePlainInstead(f, meta, ff)
	case err != nil:
		fr.internalError(err)
	case alt.noLarger(data):
		// A delta is made at the Middleware's level, a sibling at the
		// best: against a dictionary that shares little with the file,
		// the sibling is the smaller.
		fr.serveSibling(alt, meta)
	case data == nil:
		ff.noGain = true
		fr.ev.Cached = false
		fr.servePlainInstead(f, meta, ff)
	default:
		fr.ev.Dictionary = o.dict != nil
		fr.serveBytes(data, o.coding, meta)
	}
}

// servePlainInstead serves the plain file f after an encoding was chosen,
// for the reason decide gives with what ff now knows.
func (fr *fileRequest) servePlainInstead(f fs.File, meta *fileMeta, ff *facts) {
	if err := rewind(f); err != nil {
		fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	_, fr.ev.Skipped, _ = fr.s.m.decide(ff)
	fr.servePlain(f, meta)
}

// fileFacts returns what decide is to know of the file, version meta, of
// an eligible type or not, for this request, ranged or not: the facts of
// the 200 that would send it whole. The caller adds what the file has on
// offer and what the client accepts.
func (fr *fileRequest) fileFacts(meta *fileMeta, eligible, ranged bool) facts {
	return facts{
		responseFields: responseFields{contentType: meta.ctype, typed: true, eligible: eligible, declared: meta.size},
		status:         http.StatusOK,
		event:          atFile,
		ranged:         ranged,
		head:           fr.r.Method == http.MethodHead,
		storeLimit:     fr.s.maxEncode,
	}
}

// sentFacts returns the facts of the response as it went out, status, header
// and body, and of its request.
func (fr *fileRequest) sentFacts() facts {
	m := fr.s.m
	f := facts{responseFields: readFields(fr.w.Header()), status: fr.w.status, buffered: int(fr.w.n), event: atEnd}
	f.eligible = f.typed && matchTypes(m.types, f.contentType)
	f.ranged = len(fr.r.Header["Range"]) > 0
	f.head = fr.r.Method == http.MethodHead
	f.offered = negotiate(fr.r.Header["Accept-Encoding"], m.offers) >= 0
	return f
}

// servePlain serves the plain bytes of f through http.ServeContent, which
// answers Range and the preconditions.
func (fr *fileRequest) servePlain(f fs.File, meta *fileMeta) {
	h := fr.w.Header()
	if meta.etag != "" {
		h["Etag"] = []string{meta.etag}
		fr.conditionalTags(meta, "")
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	http.ServeContent(fr.w, fr.r, fr.name, meta.modtime, rs)
}

// serveBytes sends data, the file encoded with coding.
func (fr *fileRequest) serveBytes(data []byte, coding string, meta *fileMeta) {
	fr.serveEncoded(bytes.NewReader(data), int64(len(data)), coding, meta)
}

// serveEncoded sends the n bytes of body, the file encoded with coding,
// with the headers of an encoded response.
func (fr *fileRequest) serveEncoded(body io.ReadSeeker, n int64, coding string, meta *fileMeta) {
	h := fr.w.Header()
	h["Content-Encoding"] = []string{coding}
	h["Content-Length"] = []string{fmt.Sprint(n)}
	h["Etag"] = []string{codedTag(meta.etag, coding)}
	fr.w.encoded = true
	fr.ev.Coding = coding
	fr.conditionalTags(meta, coding)
	// Range is never answered here, so http.ServeContent sends the whole
	// body or a 304 or 412; it keeps the Content-Length set above.
	http.ServeContent(fr.w, fr.r, fr.name, meta.modtime, body)
}

// conditionalTags rewrites If-Match for http.ServeContent: it compares
// strongly with this representation's tag, but a state-changing
// precondition holds when the client names any representation of the
// same bytes, in any coding. If-None-Match stays: it asks about this
// representation, as the Middleware reads it.
func (fr *fileRequest) conditionalTags(meta *fileMeta, coding string) {
	im := fr.r.Header["If-Match"]
	if len(im) == 0 || meta.etag == "" {
		return
	}
	want := meta.etag[1 : len(meta.etag)-1]
	for _, line := range im {
		for line != "" {
			var elem string
			elem, line = nextElement(line)
			opaque, weak, ok := entityTag(elem)
			if !ok || weak {
				continue
			}
			if opaque == want || strings.HasPrefix(opaque, want+"-") {
				r2 := fr.r.Clone(fr.r.Context())
				tag := meta.etag
				if coding != "" {
					tag = codedTag(tag, coding)
				}
				r2.Header["If-Match"] = []string{tag}
				fr.r = r2
				return
			}
		}
	}
}

// report sends the request's ResponseInfo to the observer. A response with any
// status but 200 is not the file (a 304 or 206 of it, or the file server's
// own answer): its reason is the verdict on what went out, as the
// Middleware's Handler would give it.
func (fr *fileRequest) report() {
	e := fr.ev
	e.Out = fr.w.n
	if fr.w.status != http.StatusOK && fr.w.status != 0 {
		e.Coding, e.Dictionary, e.Cached = "", false, false
		f := fr.sentFacts()
		_, e.Skipped, _ = fr.s.m.decide(&f)
	}
	if e.Coding == "" {
		e.In = e.Out
	}
	if e.Coding != "" {
		e.Skipped = reasonNone
	}
	fr.s.m.observe(e)
}

// fileError answers with an error status as http.Error does, first
// dropping what describes the file the request expected: the caching
// fields a handler in front may have set for it (as http.FileServer's
// errors drop them, so that a 404 for a version not yet deployed is not
// kept for a year) and the Use-As-Dictionary and freshness squeeze adds.
func fileError(w http.ResponseWriter, text string, code int) {
	h := w.Header()
	for _, k := range []string{"Cache-Control", "Content-Encoding", "Etag", "Last-Modified", "Use-As-Dictionary"} {
		delete(h, k)
	}
	http.Error(w, text, code)
}
