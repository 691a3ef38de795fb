package squeeze

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/writers"
)

// siblingExts maps the codings a precompressed sibling may have to the
// extension it has, in the order siblings are looked for.
var siblingExts = [...]struct{ coding, ext string }{
	{Brotli, ".br"},
	{Zstd, ".zst"},
	{Gzip, ".gz"},
}

// FileServer returns a handler that serves the files of fsys, as
// [http.FileServer] does, with the Middleware's codings, content types and
// dictionaries. It is a complete handler: do not wrap it in
// [Middleware.Handler] (if it is wrapped, nothing is encoded twice, since
// its encoded responses carry their Content-Encoding). Mount it with
// [http.StripPrefix] as one mounts http.FileServer.
//
// Only GET and HEAD are answered (405 otherwise). For each file it picks a
// representation by the same negotiation as [Middleware.Handler]:
//
//   - A sibling named after the file with ".br", ".zst" or ".gz" (such as
//     the command squeeze precompress writes) is sent byte for byte when the
//     client accepts its coding and the Middleware offers it. A sibling is
//     decoded once and compared with the file (by SHA-256); one that does
//     not decode to it is never served, and is logged once. A sibling whose
//     file is missing is served all the same, and decoded for clients that
//     accept none of the codings; decoded, it is served whole to a request
//     for several ranges, so that no request decodes it more than once.
//   - Otherwise a file of a type [WithContentTypes] allows, at least
//     [WithMinSize] long and no longer than its store keeps in one entry,
//     is encoded on first use at the Middleware's level and kept (up to
//     [DefaultFileStoreSize] bytes, least recently used first, with files
//     up to a quarter of it; with [WithCache], in the Cache, with files up
//     to an eighth of it less an entry's bookkeeping); a better encoding
//     at the coding's best level replaces it in the background. A longer
//     file is sent from its siblings or unencoded: no request encodes, and
//     no upgrade re-encodes, what the store cannot keep. Concurrent
//     requests for one representation share one encoding. What an
//     encoding holds as it runs, an upgrade's encoder included, is counted
//     in the store's budget; when it has no room, the file goes out
//     unencoded ([ReasonNoRoom]).
//   - With [WithDictionaryMatch], every file whose URL path matches a
//     pattern is a dictionary for the others on that pattern: a client
//     naming one in Available-Dictionary gets the file as a dcz or dcb
//     delta, computed once and kept. Such a file goes out with
//     Cache-Control: [DictionaryCacheControl] unless the handler in front
//     of the file server set a Cache-Control: a browser keeps a dictionary
//     only while it is fresh.
//
// A file that may be encoded, has a sibling or is a dictionary is hashed
// once per version (concurrent requests sharing one read), and its
// responses carry a strong ETag made from the SHA-256 of the plain
// bytes, suffixed per coding as the Middleware suffixes ("abc" and
// "abc-br"). Any other file (a video, an archive, a script too long to
// encode) is served as [http.FileServer] serves it, without an ETag and
// without being read beyond what the request asks for. Every response
// carries Content-Length, Vary: Accept-Encoding (and
// Available-Dictionary where a dictionary pattern applies), Last-Modified
// when fsys knows the modification time, and a Content-Type from the
// extension, else sniffed, as [http.ServeContent] does. Conditional
// requests get 304 or 412 and HEAD the header of the GET, through
// http.ServeContent. Range requests are answered from the plain bytes
// (206, multipart ranges, 416), never encoded.
//
// A directory is served as its index.html, else 404: there are no
// listings; a directory's path without the final slash is redirected to
// it. A path with an element starting with a dot (/.env, /.git/config)
// gets 404 unless [WithFileServerDotfiles] allows it. Paths with ".."
// elements get 400; a NUL, a backslash or an encoded
// slash (%2F) gets 404. An [os.DirFS] tree is opened as an [os.Root], so
// no symbolic link leads out of it. Only fsys that is itself an os.DirFS
// is recognised: one wrapped, fs.Sub(os.DirFS(dir), "static") among them,
// follows symbolic links wherever they lead. Pass os.DirFS of the
// subdirectory, or for other file systems that follow links
// (*os.Root).FS.
//
// The file server hashes a file once per version, and tells versions
// apart by size, modification time and, on Unix systems, device, inode and
// change time. Where fsys tells nothing more than size and modification time
// (embed.FS, fstest.MapFS, Windows), a file replaced by one of the same size
// and modification time keeps the old hash: its ETag and stored encodings.
//
// Encoding at the best level runs on at most one goroutine per file
// server, started for one representation and ending with it; a request
// that finds it busy does not wait or queue, and a later request for the
// same representation tries again. An idle file server runs nothing, so
// it needs no Close.
func (m *Middleware) FileServer(fsys fs.FS) http.Handler {
	if m.buffers == nil {
		m = defaultMiddleware()
	}
	return newFileServer(m, fsys)
}

// fileServer is the handler FileServer returns.
type fileServer struct {
	m    *Middleware
	fsys fs.FS
	// dir is set for an os.DirFS, which is opened as an os.Root on first
	// use; rootFS is then that root's file system.
	dir    string
	rootMu sync.Mutex
	rootFS fs.FS

	reps repStore
	// maxDecoded is the largest file decoded whole; maxEncode the largest
	// encoded on the fly: no more than the store keeps in one entry, so
	// that nothing encodes, at any level, what cannot be kept.
	maxDecoded, maxEncode int64
	// hashing and encoding join the requests that hash one version of a
	// file, or encode one representation, at the same time.
	hashing, encoding singleflight.Group
	logf              func(format string, args ...any)

	mu       sync.Mutex
	metas    map[string]*fileMeta      // by name in fsys
	orphans  map[string]*orphanMeta    // by sibling name, for missing files
	logged   map[string]bool           // messages logged, by key
	verdicts map[siblingKey]*siblingOK // by sibling and file version
	indexes  map[string]*dictIndex     // by pattern and cleaned URL prefix

	// bestToken holds a token while a best-level encoding runs (startBest);
	// bestRuns counts them, so that tests can wait for them.
	bestToken chan struct{}
	bestRuns  sync.WaitGroup
	// fleet holds off the upgrades another replica has claimed
	// (fileserver_upgrade_delta.go).
	fleet fleetBackoff
}

func newFileServer(m *Middleware, fsys fs.FS) *fileServer {
	s := &fileServer{
		m:          m,
		fsys:       fsys,
		maxDecoded: DefaultFileStoreSize / 4,
		logf:       log.Printf,
		metas:      map[string]*fileMeta{},
		orphans:    map[string]*orphanMeta{},
		logged:     map[string]bool{},
		verdicts:   map[siblingKey]*siblingOK{},
		indexes:    map[string]*dictIndex{},
		bestToken:  make(chan struct{}, 1),
	}
	s.reps = s.storeFor(m)
	s.maxEncode = min(s.maxDecoded, s.reps.maxEntry())
	if reflect.TypeOf(fsys) == reflect.TypeOf(os.DirFS(".")) {
		s.dir = reflect.ValueOf(fsys).String()
	}
	return s
}

// storeFor returns where the file server keeps what it encodes: the
// Middleware's [Cache] when it has one (cache.go), else a bounded store of
// the file server's own.
func (s *fileServer) storeFor(m *Middleware) repStore {
	if m.cache != nil {
		return fileReps{m.cache.cacheCore}
	}
	return newLRUStore(DefaultFileStoreSize)
}

// files returns the file system to read: fsys, or for an os.DirFS the
// os.Root it names, opened on first use, which no symbolic link leads out
// of. The root's descriptor stays open for the life of the process.
func (s *fileServer) files() (fs.FS, error) {
	if s.dir == "" {
		return s.fsys, nil
	}
	s.rootMu.Lock()
	defer s.rootMu.Unlock()
	if s.rootFS == nil {
		root, err := os.OpenRoot(s.dir)
		if err != nil {
			return nil, err
		}
		s.rootFS = root.FS()
	}
	return s.rootFS, nil
}

// fileID is what the operating system tells of a file beyond its size
// and modification time (idOf, in fileserver_stat_*.go): its device, its
// inode and the time its inode last changed. Copying with cp -p, rsync -a
// or a build that pins timestamps keeps the size and sets the old
// modification time, but the change time cannot be set (writing, renaming
// into place and setting the modification time all set it to the present),
// and renaming into place gives a new inode. It is zero where the file
// system tells nothing more (embed.FS, fstest.MapFS, Windows): there, a
// file replaced by one of the same size and modification time is not seen
// to change.
type fileID struct {
	dev, ino uint64
	ctime    int64 // in nanoseconds since 1970
}

// fileMeta is what the file server knows of one version of a file.
type fileMeta struct {
	modtime time.Time
	size    int64
	id      fileID // zero for what an orphan decodes to: orphanMeta keeps the sibling's
	hash    [32]byte
	etag    string // strong, from the hash
	ctype   string
}

// siblingKey names one sibling of one version of a file.
type siblingKey struct {
	name    string // the sibling's name in fsys
	modtime time.Time
	size    int64
	id      fileID
	plain   [32]byte
}

// siblingOK is the verdict on a sibling, reached once, from the handle of
// the request that reached it.
type siblingOK struct {
	once sync.Once
	ok   bool
	// raw is the SHA-256 of the size bytes that were decoded and found to
	// be the file: a response sends a sibling only when the bytes it sent
	// hash to it (hashedSection.complete).
	raw  [32]byte
	size int64
}

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
	ev    Event
	// public is set when the response may be shared beyond its client
	// (publicResponse), as serveFile finds it.
	public bool
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Should the Middleware's Handler wrap the file server after all, the
	// file server reports this response, and the Handler must not.
	s.m.skipReport(w)
	fr := &fileRequest{s: s, r: r, w: &fileWriter{ResponseWriter: w}}
	if s.m.observe != nil {
		fr.ev.Kind = ResponseEvent
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
	if !s.m.dotfiles && hasDotSegment(name) {
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

// WithFileServerDotfiles sets whether the Middleware's [Middleware.FileServer]
// serves files and directories whose names start with a dot. By default it
// does not: a path with any segment starting with a dot (/.env,
// /.git/config, /.well-known/security.txt) gets 404, as if the file were
// missing, and such files are never dictionaries, since a tree meant to be
// served often holds a .env or a .git directory by mistake, and squeeze
// precompress skips them too. Allow them only for a tree whose every
// dotfile is public; to serve /.well-known alone, mount a FileServer of a
// Middleware with this option on that path only.
func WithFileServerDotfiles(allow bool) Option {
	return func(c *config) error {
		c.dotfiles = allow
		return nil
	}
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

// metaOf returns what is known of version st of the file name, open as f,
// and leaves f at its start. A version is known by its modification time,
// size and fileID: where the file system tells no fileID, a file replaced
// by one of the same size and modification time keeps the hash of the old
// one. Without hash, it reads only the first 512 bytes, for the type, and
// the meta it returns may have no hash (etag ""); with hash, it reads the
// whole file once per version, concurrent requests for one version sharing
// one read, and the meta has its SHA-256 and ETag.
func (fr *fileRequest) metaOf(name string, f fs.File, st fs.FileInfo, hash bool) (*fileMeta, error) {
	s := fr.s
	id := idOf(st)
	s.mu.Lock()
	known := s.metas[name]
	s.mu.Unlock()
	if known != nil && known.modtime.Equal(st.ModTime()) && known.size == st.Size() && known.id == id && (known.etag != "" || !hash) {
		return known, nil
	}
	if !hash {
		var head [512]byte
		n, err := io.ReadFull(f, head[:])
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		if err := rewind(f); err != nil {
			return nil, err
		}
		known = &fileMeta{modtime: st.ModTime(), size: st.Size(), id: id, ctype: typeOf(name, head[:n])}
		s.mu.Lock()
		if old := s.metas[name]; old == nil || old.etag == "" || !old.modtime.Equal(known.modtime) || old.size != known.size || old.id != id {
			s.metas[name] = known // never in place of the hash of this version
		}
		s.mu.Unlock()
		return known, nil
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%v", name, st.ModTime().UnixNano(), st.Size(), id)
	v, err, _ := s.hashing.Do(key, func() (any, error) {
		h := sha256.New()
		var head [512]byte
		n, err := io.ReadFull(f, head[:])
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		h.Write(head[:n])
		rest, err := io.Copy(h, f)
		if err != nil {
			return nil, err
		}
		if err := rewind(f); err != nil {
			return nil, err
		}
		meta := &fileMeta{modtime: st.ModTime(), size: int64(n) + rest, id: id}
		h.Sum(meta.hash[:0])
		meta.etag = `"` + hex.EncodeToString(meta.hash[:16]) + `"`
		meta.ctype = typeOf(name, head[:n])
		s.mu.Lock()
		s.metas[name] = meta
		s.mu.Unlock()
		return meta, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*fileMeta), nil
}

// typeOf returns the content type of a file named name starting with head:
// from the extension, else sniffed, as http.ServeContent does.
func typeOf(name string, head []byte) string {
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		return ct
	}
	return http.DetectContentType(head)
}

// rewind seeks f back to its start.
func rewind(f fs.File) error {
	sk, ok := f.(io.Seeker)
	if !ok {
		return errors.New("squeeze: FileServer: file does not seek")
	}
	_, err := sk.Seek(0, io.SeekStart)
	return err
}

// serveFile serves the regular file f, open on fr.name, with info st.
func (fr *fileRequest) serveFile(f fs.File, st fs.FileInfo) {
	internalError := func(err error) {
		fr.s.logf("squeeze: FileServer: %s: %v", fr.name, err)
		fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
	}
	meta, err := fr.metaOf(fr.name, f, st, false)
	if err != nil {
		internalError(err)
		return
	}
	s, m := fr.s, fr.s.m
	eligible := matchTypes(m.types, meta.ctype)
	encodable := eligible && meta.size >= int64(m.minSize) && meta.size <= s.maxEncode
	ranged := len(fr.r.Header["Range"]) > 0
	// The file is hashed only when it may be encoded (within maxEncode,
	// which bounds the hash too), or when this request may send a sibling
	// or keep it as a dictionary: a file that is none of these, such as a
	// video, goes out as http.FileServer sends it, without an ETag and
	// without being read beyond what the request asks for. A range of a
	// file that may be encoded is hashed, so that its ETag serves If-Range.
	if meta.etag == "" && (encodable || !ranged && (fr.isDictionary(eligible, meta.size) || fr.hasSibling())) {
		if meta, err = fr.metaOf(fr.name, f, st, true); err != nil {
			internalError(err)
			return
		}
	}
	fr.meta = meta
	fr.ev.In = meta.size
	hashed := meta.etag != ""
	encodable = encodable && hashed

	// The codings on offer for this file: all of the Middleware's when it
	// can be encoded, else those with a good sibling.
	var offersBuf [8]offer
	offers := offersBuf[:0]
	siblings := map[string]*sibling{}
	defer closeSiblings(siblings)
	for _, o := range m.offers {
		if !hashed {
			break
		}
		if _, dup := siblings[o.coding]; dup {
			offers = append(offers, o)
		} else if sb := s.goodSibling(fr.fsys, fr.name, meta, o.coding); sb != nil {
			siblings[o.coding] = sb
			offers = append(offers, o)
		} else if encodable {
			offers = append(offers, o)
		}
	}
	// fallback is the offer negotiated without the dictionary when a
	// delta replaces it.
	var o, fallback *offer
	if !ranged {
		if i := negotiate(fr.r.Header["Accept-Encoding"], offers); i >= 0 {
			o = &offers[i]
		}
	}
	h := fr.w.Header()
	// public is what the header set in front of the file server and the
	// request say of sharing the response (publicResponse): a file that
	// goes out in one that is not public becomes no dictionary, is no
	// delta against a remembered one, and none of its encodings is
	// written to the fleet's store.
	fr.public = publicResponse(fr.r.Header, h)
	dictPattern, dictVaries := 0, false
	if d := m.dicts; d != nil {
		fr.primeDictionary(d)
		var delta *offer
		delta, dictPattern, dictVaries = d.begin(fr.r, fr.upath, ranged)
		if delta != nil && encodable && deltaAllowed(fr.r.Header, h, delta.dict) {
			fallback, o = o, delta
		}
	}

	h["Vary"] = []string{"Accept-Encoding"}
	if dictVaries {
		h["Vary"] = []string{dictVary}
	}
	h["Content-Type"] = []string{meta.ctype}
	if dictPattern > 0 && eligible && fr.public {
		h["Use-As-Dictionary"] = []string{m.dicts.useAs[dictPattern-1]}
		if !hasField(h, "Cache-Control") {
			// A browser keeps a dictionary only while it is fresh.
			h["Cache-Control"] = []string{DictionaryCacheControl}
		}
		if fr.r.Method == http.MethodGet && hashed {
			fr.rememberFileDictionary(f, m.dicts.patterns[dictPattern-1])
		}
	}
	if d := m.dicts; d != nil && len(d.links) > 0 && matchTypes(htmlTypes, meta.ctype) {
		h["Link"] = d.links
	}

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
		data, err := fr.encodedRep(f, o)
		if errors.Is(err, errNoRoom) {
			if o.dict != nil && fallback != nil && siblings[fallback.coding] != nil {
				fr.serveSibling(siblings[fallback.coding], meta)
				return
			}
			if err := rewind(f); err != nil {
				fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
				return
			}
			ff.noRoom = true
			_, fr.ev.Skipped, _ = m.decide(&ff)
			fr.servePlain(f, meta)
			return
		}
		if err != nil {
			fr.s.logf("squeeze: FileServer: %s: %v", fr.name, err)
			fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
			return
		}
		if o.dict != nil && fallback != nil && siblings[fallback.coding].noLarger(data) {
			// A delta is made at the Middleware's level, a sibling at
			// the best: against a dictionary that shares little with
			// the file, the sibling is the smaller.
			fr.serveSibling(siblings[fallback.coding], meta)
			return
		}
		if data == nil {
			if err := rewind(f); err != nil {
				fileError(fr.w, "500 internal server error", http.StatusInternalServerError)
				return
			}
			ff.noGain = true
			_, fr.ev.Skipped, _ = m.decide(&ff)
			fr.ev.Cached = false
			fr.servePlain(f, meta)
			return
		}
		fr.ev.Dictionary = o.dict != nil
		fr.serveBytes(data, o.coding, meta)
	}
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

// noLarger reports whether sb, when there is one, is no larger than the
// encoding data (nil: the plain file, which the sibling is smaller than).
func (sb *sibling) noLarger(data []byte) bool {
	if sb == nil {
		return false
	}
	return data == nil || sb.size <= int64(len(data))
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

// isDictionary reports whether the file, of an eligible type or not and
// of size bytes, is one the Middleware's dictionary store keeps for this
// request's path: such a file is hashed to be remembered by a GET, and so
// for a HEAD too, which gets the GET's header.
func (fr *fileRequest) isDictionary(eligible bool, size int64) bool {
	d := fr.s.m.dicts
	return d != nil && eligible && size > 0 && size <= d.maxBody && d.matchIndex(fr.upath) >= 0
}

// hasSibling reports whether the file has a sibling for a coding on offer,
// by its name alone: whether it is good is for goodSibling to say, once the
// file is hashed.
func (fr *fileRequest) hasSibling() bool {
	for _, o := range fr.s.m.offers {
		if ext := siblingExt(o.coding); ext != "" {
			if st, err := fs.Stat(fr.fsys, fr.name+ext); err == nil && st.Mode().IsRegular() {
				return true
			}
		}
	}
	return false
}

// hasField reports whether h has the field name under any case: net/http
// sends a key as it was written.
func hasField(h http.Header, name string) bool {
	if _, ok := h[name]; ok {
		return true
	}
	for k := range h {
		if equalFold(k, name) {
			return true
		}
	}
	return false
}

// DictionaryCacheControl is the Cache-Control a [Middleware.FileServer]
// sends with a file it marks Use-As-Dictionary, when the handler in front
// of it has set none: a browser keeps a dictionary only while the response
// it came in is fresh (RFC 9842), so a file served without
// freshness is never used for a delta. A day, as for [WithDictionary]'s
// dictionaries; the client revalidates with the ETag after that. Set a
// Cache-Control in front of the file server to choose another (a year and
// immutable for names that carry a version).
const DictionaryCacheControl = "max-age=86400"

// serveSibling sends sb, a sibling that decodes to version meta of the
// file, byte for byte from the handle it was verified on. The last byte
// goes out only once the bytes before it and it hash to those verified
// (fileWriter.verify): a sibling rewritten in place while it is sent cuts
// the response short.
func (fr *fileRequest) serveSibling(sb *sibling, meta *fileMeta) {
	body := newHashedSection(sb.rs, sb.size)
	fr.ev.Cached = true
	fr.w.verify = func() bool { return body.complete(sb.raw) }
	fr.serveEncoded(body, sb.size, sb.coding, meta)
	fr.endVerified(sb.name)
}

// endVerified ends a response whose body was checked as it went out
// (fileWriter.verify): one whose check failed, or that went out shorter
// than its Content-Length, is aborted, so that the client sees an error
// rather than a complete body; a failed check is logged. A client that
// left is not.
func (fr *fileRequest) endVerified(name string) {
	w := fr.w
	if w.verify == nil {
		return
	}
	if w.cut {
		fr.s.logf("squeeze: FileServer: %s changed while it was sent; the response was cut short", name)
		panic(http.ErrAbortHandler)
	}
	if w.left > 0 && fr.r.Method != http.MethodHead {
		panic(http.ErrAbortHandler)
	}
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

// encodedRep returns the file f, of version fr.meta, encoded as o offers, from
// the store or encoded now, or nil when the coding does not make it
// smaller. Concurrent requests for one representation share one encoding.
// A representation kept not yet at its best level is encoded again at it
// in the background (encodeBest) when no such encoding runs; one the store
// did not keep is not.
func (fr *fileRequest) encodedRep(f fs.File, o *offer) ([]byte, error) {
	s := fr.s
	k := repKey{plain: fr.meta.hash, coding: o.coding}
	if o.dict != nil {
		k.dict = o.dict.hash
	}
	if r, ok := s.reps.load(k); ok {
		fr.ev.Cached = true
		if !r.best {
			s.startBest(fr.fsys, fr.name, fr.meta, k, r.data, o.dict, fr.public)
		}
		return r.data, nil
	}
	v, err, _ := s.encoding.Do(string(k.plain[:])+k.coding+"\x00"+string(k.dict[:]), func() (any, error) {
		// What the encoding holds is counted against the store's budget
		// first (fileEncoding).
		e := newFileEncoding(s.reps, fileEncoderMemory(o), fr.meta.size-1)
		if e == nil {
			return nil, errNoRoom
		}
		var t0 time.Time
		if s.m.observe != nil {
			t0 = time.Now()
		}
		enc, err := o.encoders.Get(io.Discard)
		if err != nil {
			e.release()
			return nil, err
		}
		data, err := e.encode(enc, f, fr.meta.hash)
		o.encoders.Put(enc)
		if !t0.IsZero() {
			fr.ev.Elapsed = time.Since(t0)
		}
		if err != nil {
			e.release()
			return nil, err
		}
		// A coding whose best level is the one it used stays; deltas and
		// the others are encoded at the best level.
		best := o.dict == nil && BestLevel(o.coding) == o.encoders.Level()
		if e.store(k, rep{data: data, best: best || data == nil}) && !best && data != nil {
			s.startBest(fr.fsys, fr.name, fr.meta, k, data, o.dict, fr.public)
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// errNoRoom is encodedRep's answer when its store's budget has no room for
// the encoding's work.
var errNoRoom = errors.New("squeeze: FileServer: no room in the store's budget to encode")

// encodeChunk is the buffer a file goes through to its encoder.
const encodeChunk = 32 << 10

// fileEncoding is one encoding of a file by the file server, with what it
// holds of its store's budget: its encoder's memory and the buffer the
// file goes through, reserved before it starts, and its encoding, claimed
// a chunk at a time as it grows, as a [Cache]'s fill claims room as its
// copy grows. The chunks are never copied as they grow, so nothing is
// left behind for the collector that the budget does not count; the
// entry's exact copy is claimed too. When the budget has no room, the
// encoding stops and the file goes out as it is.
type fileEncoding struct {
	reps repStore
	// held is what the encoding holds of the budget.
	held int64
	// out is the encoding so far, in chunks of fillChunk bytes; n its
	// length.
	out [][]byte
	n   int64
	// limit is the longest encoding of use: one shorter than the file, or
	// than the representation it is to replace.
	limit  int64
	noRoom bool
}

// newFileEncoding reserves what an encoding with an encoder holding
// encoder bytes holds before it writes, or returns nil when the store has
// no room for it.
func newFileEncoding(reps repStore, encoder, limit int64) *fileEncoding {
	held := encoder + encodeChunk
	if !reps.reserve(held) {
		return nil
	}
	return &fileEncoding{reps: reps, held: held, limit: limit}
}

// Write appends p to the encoding, claiming a chunk of the budget at a
// time: errNoGain past the limit, errNoRoom when the budget has no room.
func (e *fileEncoding) Write(p []byte) (int, error) {
	if e.n+int64(len(p)) > e.limit {
		return 0, errNoGain
	}
	written := len(p)
	for len(p) > 0 {
		last := len(e.out) - 1
		if last < 0 || len(e.out[last]) == cap(e.out[last]) {
			if !e.reps.reserve(fillChunk) {
				e.noRoom = true
				return written - len(p), errNoRoom
			}
			e.held += fillChunk
			e.out = append(e.out, make([]byte, 0, fillChunk))
			last++
		}
		c := e.out[last]
		k := min(len(p), cap(c)-len(c))
		e.out[last] = append(c, p[:k]...)
		p = p[k:]
		e.n += int64(k)
	}
	return written, nil
}

// encode encodes what f yields with enc, streaming it through a buffer of
// encodeChunk bytes, and returns the encoding, or nil when it would not be
// shorter than the limit. The file must hash to hash: one that changed
// while it was read is an error. errNoRoom: the budget had no room for the
// encoding as it grew.
func (e *fileEncoding) encode(enc writers.Encoder, f io.Reader, hash [32]byte) ([]byte, error) {
	enc.Reset(e)
	defer enc.Reset(io.Discard)
	h := sha256.New()
	buf := make([]byte, encodeChunk)
	gain := true
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if gain {
				if _, werr := enc.Write(buf[:n]); werr != nil {
					gain = false // past the limit, or out of budget
				}
			}
		}
		if e.noRoom {
			return nil, errNoRoom
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if [32]byte(h.Sum(nil)) != hash {
		return nil, errors.New("file changed while read")
	}
	if gain && enc.Close() != nil {
		gain = false
	}
	switch {
	case e.noRoom:
		return nil, errNoRoom
	case !gain:
		e.out = nil
		return nil, nil
	}
	// The entry keeps an exact copy, claimed too.
	if !e.reps.reserve(e.n) {
		return nil, errNoRoom
	}
	e.held += e.n
	data := make([]byte, 0, e.n)
	for _, c := range e.out {
		data = append(data, c...)
	}
	e.out = nil
	return data, nil
}

// store keeps r under k in the store, the entry's weight taking over what
// the encoding held, and reports whether it did.
func (e *fileEncoding) store(k repKey, r rep) bool {
	held := e.held
	e.held = 0
	return e.reps.store(k, r, held)
}

// release gives back what the encoding held, keeping nothing.
func (e *fileEncoding) release() {
	e.reps.release(e.held)
	e.held, e.out = 0, nil
}

// fileEncoderMemory bounds what the encoder of o holds: a dictionary
// coding's is its codec's, with the dictionary's tables.
func fileEncoderMemory(o *offer) int64 {
	coding := o.coding
	switch coding {
	case DCZ:
		coding = Zstd
	case DCB:
		coding = Brotli
	}
	n := encoderMemory(coding, o.encoders.Level())
	if o.dict != nil {
		n += int64(len(o.dict.data))
	}
	return n
}

// BestLevel returns the level squeeze's precompression uses for coding:
// the highest the codec has ([writers.Levels]), except zstd at 19, as the
// zstd command line's highest level without --ultra (klauspost/compress
// runs 10 to 22 alike). It reads coding as [WithEncodings] and [WithLevel]
// do: case-insensitively, "x-gzip" meaning gzip. For a coding it does not
// know ("identity", "dcz", a typo) it returns -1, a level that no coding
// takes, so that passing it on to [WithLevel] or [writers.NewEncoder] is
// an error rather than a valid level of another coding.
func BestLevel(coding string) int {
	canonical, ok := writers.Canonical(coding)
	if !ok {
		return -1
	}
	if canonical == Zstd {
		return 19
	}
	r, _ := writers.Levels(canonical)
	return r.Max
}

// startBest encodes version meta of the file name at the best level of
// k.coding (against d for a delta) on a goroutine of its own, unless one
// is running already: then it does nothing, and a later request tries
// again. The goroutine ends with the encoding. old is the representation
// stored now, which the new encoding replaces only if it is smaller: passed
// in rather than looked up again, so a store that counts its look-ups (a
// Cache) counts only the requests'. public says the request that started
// it got a public response: only then is the encoding written to the
// fleet's store (bestEncoding).
func (s *fileServer) startBest(fsys fs.FS, name string, meta *fileMeta, k repKey, old []byte, d *dictionary, public bool) {
	select {
	case s.bestToken <- struct{}{}:
	default:
		return
	}
	s.bestRuns.Add(1)
	go func() {
		defer func() {
			<-s.bestToken
			s.bestRuns.Done()
		}()
		// The encoder is made for this encoding and dropped with it, not
		// kept for later, and what the work holds is counted against the
		// store's budget, as for encodedRep: a best-level encoder holds
		// tens of megabytes (with a delta's dictionary tables), the file is
		// read whole (a fleet's store is keyed and checked by its hash), and
		// the encoding is at most limit bytes.
		level := BestLevel(k.coding)
		if d != nil {
			level = upgradeLevel(k.coding)
		}
		limit := meta.size - 1
		if old != nil {
			limit = int64(len(old)) - 1 // an encoding no smaller is of no use
		}
		// The best level, or the first fallback level (as the Cache's
		// upgrades have) that the budget has room for.
		var e *fileEncoding
		for _, l := range upgradeLevels(k.coding, level) {
			if e = newFileEncoding(s.reps, upgradeEncoderMemory(k.coding, l, d)+meta.size+max(limit, 0), limit); e != nil {
				level = l
				break
			}
		}
		if e == nil {
			return // a later request tries again
		}
		plain, err := fs.ReadFile(fsys, name)
		if err != nil || sha256.Sum256(plain) != meta.hash {
			e.release()
			return // changed or gone: the next request sees the new version
		}
		data, wait, err := s.bestEncoding(k, plain, old, d, level, public)
		if err != nil || wait {
			e.release()
			return
		}
		if old != nil && (data == nil || len(data) >= len(old)) {
			data = old // the faster level did better: keep it
		}
		e.store(k, rep{data: data, best: true})
	}()
}

// sibling is a precompressed sibling of a file, open for one request: it
// is verified and sent from this handle, and never opened by its name
// again, so that a sibling renamed into place meanwhile is neither sent
// under the verdict on the one it replaced nor judged in its place.
type sibling struct {
	name, coding string
	f            fs.File
	rs           io.ReadSeeker
	st           fs.FileInfo
	size         int64 // as the handle's stat tells it: what is sent
	// raw is the SHA-256 of the size bytes found to decode to the file,
	// once goodSibling or decodedMeta has judged it.
	raw [32]byte
}

// openSibling opens the regular file name, a sibling in coding, or
// returns nil.
func openSibling(fsys fs.FS, name, coding string) *sibling {
	f, err := fsys.Open(name)
	if err != nil {
		return nil
	}
	st, err := f.Stat()
	rs, ok := f.(io.ReadSeeker)
	if err != nil || !ok || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil
	}
	return &sibling{name: name, coding: coding, f: f, rs: rs, st: st, size: st.Size()}
}

func (sb *sibling) close() { _ = sb.f.Close() }

// closeSiblings closes the siblings a request opened.
func closeSiblings(sibs map[string]*sibling) {
	for _, sb := range sibs {
		sb.close()
	}
}

// goodSibling returns the sibling of name for coding, open, if there is one
// that decodes to version meta of the file, else nil. The caller closes it.
func (s *fileServer) goodSibling(fsys fs.FS, name string, meta *fileMeta, coding string) *sibling {
	ext := siblingExt(coding)
	if ext == "" {
		return nil
	}
	sb := openSibling(fsys, name+ext, coding)
	if sb == nil {
		return nil
	}
	if !s.judgeSibling(sb, name, meta) {
		sb.close()
		return nil
	}
	return sb
}

// judgeSibling reports whether sb, open, decodes to version meta of the
// file name, and sets sb.raw. The verdict is reached once per version of
// the sibling, as its handle's stat tells it (size, modification time and
// fileID), by decoding it from the handle of the request that reaches it.
// A sibling rewritten in place within the resolution of its change time
// keeps its stat, so the verdict holds the hash of the bytes it was
// reached on, and a response sends them only when they are what it sent
// (serveSibling).
func (s *fileServer) judgeSibling(sb *sibling, name string, meta *fileMeta) bool {
	k := siblingKey{name: sb.name, modtime: sb.st.ModTime(), size: sb.size, id: idOf(sb.st), plain: meta.hash}
	s.mu.Lock()
	v := s.verdicts[k]
	if v == nil {
		v = &siblingOK{}
		s.verdicts[k] = v
	}
	s.mu.Unlock()
	v.once.Do(func() {
		sum, n, raw, err := sb.decodedHash(meta.size + 1)
		v.ok = err == nil && n == meta.size && sum == meta.hash
		v.raw, v.size = raw, sb.size
		if !v.ok {
			why := "decodes to other bytes than " + name
			if err != nil {
				why = "does not decode (" + err.Error() + ")"
			}
			s.logf("squeeze: FileServer: %s %s; serving %s without it", sb.name, why, name)
		}
	})
	if !v.ok || v.size != sb.size {
		return false
	}
	sb.raw = v.raw
	return true
}

// siblingExt returns the extension of coding's siblings, or "".
func siblingExt(coding string) string {
	for _, se := range siblingExts {
		if se.coding == coding {
			return se.ext
		}
	}
	return ""
}

// decodedHash decodes the sibling from its start and returns the SHA-256
// and length of what it decodes to, reading at most limit bytes of it, and
// the SHA-256 of all its bytes. It leaves the handle at the sibling's end.
func (sb *sibling) decodedHash(limit int64) (sum [32]byte, n int64, raw [32]byte, err error) {
	sec := newHashedSection(sb.rs, sb.size)
	if _, err := sec.Seek(0, io.SeekStart); err != nil {
		return sum, 0, raw, err
	}
	dec, err := writers.NewDecoder(sb.coding)
	if err != nil {
		return sum, 0, raw, err
	}
	if err := dec.Reset(sec); err != nil {
		return sum, 0, raw, err
	}
	h := sha256.New()
	n, err = io.Copy(h, io.LimitReader(dec, limit))
	if err == nil {
		err = sec.drain()
	}
	if err != nil {
		return sum, n, raw, err
	}
	h.Sum(sum[:0])
	return sum, n, sec.sum(), nil
}

// hashedSection reads the first size bytes of a file open as rs and hashes
// what it reads, so that what a response sends of it, or decodes from it,
// can be checked to be the bytes that were verified (complete). It seeks
// to its start only, and to its end to tell its size, as
// http.ServeContent does: a sibling is never sent in ranges, and a
// decoded one is decoded from its start.
type hashedSection struct {
	rs        io.ReadSeeker
	size, pos int64
	h         hash.Hash
}

func newHashedSection(rs io.ReadSeeker, size int64) *hashedSection {
	return &hashedSection{rs: rs, size: size, h: sha256.New()}
}

func (s *hashedSection) Read(p []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	if int64(len(p)) > s.size-s.pos {
		p = p[:s.size-s.pos]
	}
	n, err := s.rs.Read(p)
	s.h.Write(p[:n])
	s.pos += int64(n)
	if err == io.EOF && s.pos < s.size {
		err = io.ErrUnexpectedEOF // shortened since its stat
	}
	return n, err
}

// Seek goes back to the start, which starts the hash over, or reports the
// size, after which nothing is read until the next seek to the start.
func (s *hashedSection) Seek(offset int64, whence int) (int64, error) {
	switch {
	case whence == io.SeekStart && offset == 0, whence == io.SeekCurrent && offset == -s.pos:
		if _, err := s.rs.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		s.pos = 0
		s.h.Reset()
		return 0, nil
	case whence == io.SeekEnd && offset == 0:
		s.pos = s.size
		s.h.Reset() // what is read next is not the file from its start
		s.h.Write([]byte("squeeze: not from the start"))
		return s.size, nil
	case whence == io.SeekCurrent && offset == 0:
		return s.pos, nil
	}
	return 0, errors.New("squeeze: FileServer: a sibling is read from its start")
}

// drain reads the rest of the section, hashing it.
func (s *hashedSection) drain() error {
	_, err := io.Copy(io.Discard, s)
	return err
}

// sum returns the SHA-256 of what was read since the start.
func (s *hashedSection) sum() (sum [32]byte) {
	s.h.Sum(sum[:0])
	return sum
}

// complete reports whether the section, read from its start to its end,
// reading the rest now, hashes to raw: then whatever was sent or decoded
// from it came from bytes that hash to raw.
func (s *hashedSection) complete(raw [32]byte) bool {
	return s.drain() == nil && s.pos == s.size && s.sum() == raw
}

// serveOrphan serves a file that is missing but has siblings: the first
// sibling that decodes is the reference for the others, and is decoded
// for clients that accept none of them.
func (fr *fileRequest) serveOrphan() {
	s, m := fr.s, fr.s.m
	// Each sibling is opened once, and judged, sent or decoded from that
	// handle (see sibling).
	sibs := map[string]*sibling{}
	defer closeSiblings(sibs)
	for _, se := range siblingExts {
		if sb := openSibling(fr.fsys, fr.name+se.ext, se.coding); sb != nil {
			sibs[se.coding] = sb
		}
	}
	// The reference: the metadata of what the first decodable sibling
	// decodes to, kept like a file's under the sibling's name.
	var meta *fileMeta
	var ref *sibling
	for _, se := range siblingExts {
		sb := sibs[se.coding]
		if sb == nil {
			continue
		}
		mt, err := s.decodedMeta(sb)
		if err == nil {
			meta, ref = mt, sb
			break
		}
		s.logOnce(sb.name, "squeeze: FileServer: %s does not decode: %v; not served", sb.name, err)
	}
	if meta == nil {
		fr.fail(fs.ErrNotExist)
		return
	}
	fr.meta = meta
	fr.ev.In = meta.size
	var offersBuf [8]offer
	offers := offersBuf[:0]
	good := map[string]*sibling{}
	for _, o := range m.offers {
		sb := sibs[o.coding]
		if sb == nil || sb != ref && !s.judgeSibling(sb, fr.name, meta) {
			continue
		}
		good[o.coding] = sb
		offers = append(offers, o)
	}
	h := fr.w.Header()
	h["Vary"] = []string{"Accept-Encoding"}
	h["Content-Type"] = []string{meta.ctype}
	ranged := len(fr.r.Header["Range"]) > 0
	i := -1
	if !ranged {
		i = negotiate(fr.r.Header["Accept-Encoding"], offers)
	}
	// Every representation of an orphan is a sibling.
	ff := fr.fileFacts(meta, matchTypes(m.types, meta.ctype), ranged)
	ff.siblings, ff.precoded, ff.offered = true, i >= 0, i >= 0
	v, why, _ := m.decide(&ff)
	if v == sendEncoded && i >= 0 {
		fr.serveSibling(good[offers[i].coding], meta)
		return
	}
	fr.ev.Skipped = why
	h["Etag"] = []string{meta.etag}
	fr.conditionalTags(meta, "")
	if severalRanges(fr.r.Header.Get("Range")) {
		// The decoded bytes are reached only by decoding from the start,
		// so ranges out of order (bytes=N-N,0-0,N-N,...) would decode the
		// sibling once per range. One range costs at most one decode, and
		// so does the whole file: several get the whole file, 200, which
		// RFC 9110 section 14.2 allows (a server may ignore Range). A
		// request thus decodes the sibling at most once.
		r2 := fr.r.Clone(fr.r.Context())
		delete(r2.Header, "Range")
		fr.r = r2
	}
	rs := &decodingReader{sb: ref, size: meta.size}
	fr.w.verify = rs.complete
	http.ServeContent(fr.w, fr.r, fr.name, meta.modtime, rs)
	fr.endVerified(ref.name)
}

// severalRanges reports whether the Range header value v names more than
// one range, counting its elements as http.ServeContent parses them: empty
// ones are skipped.
func severalRanges(v string) bool {
	_, set, ok := strings.Cut(v, "=")
	if !ok {
		return false
	}
	n := 0
	for _, e := range strings.Split(set, ",") {
		if strings.Trim(e, " \t\r\n") != "" {
			n++
		}
	}
	return n > 1
}

// orphanMeta is what a sibling of a missing file decodes to.
type orphanMeta struct {
	modtime time.Time
	size    int64 // the sibling's
	id      fileID
	raw     [32]byte // the SHA-256 of the sibling's bytes that decode to it
	decoded *fileMeta
}

// decodedMeta returns the metadata of what sb, a sibling of a missing file,
// decodes to, decoding it from its handle once per version of it (as its
// handle's stat tells it), and sets sb.raw: what is sent or decoded from sb
// is checked against it, since a sibling rewritten in place may keep its
// stat.
func (s *fileServer) decodedMeta(sb *sibling) (*fileMeta, error) {
	st, id := sb.st, idOf(sb.st)
	s.mu.Lock()
	o := s.orphans[sb.name]
	s.mu.Unlock()
	if o != nil && o.modtime.Equal(st.ModTime()) && o.size == sb.size && o.id == id {
		sb.raw = o.raw
		return o.decoded, nil
	}
	rs := &decodingReader{sb: sb, size: -1}
	var head [512]byte
	h := sha256.New()
	n, err := io.ReadFull(rs, head[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	h.Write(head[:n])
	rest, err := io.Copy(h, io.LimitReader(rs, s.maxDecoded))
	if err != nil {
		return nil, err
	}
	if rest == s.maxDecoded {
		return nil, fmt.Errorf("decodes to more than %d bytes", s.maxDecoded)
	}
	if err := rs.sec.drain(); err != nil {
		return nil, err
	}
	// A sibling rewritten while it was read may decode all the same (br
	// has no checksum) to bytes no version had: when its modification time
	// or size shows the change, it is not kept. (Not its change time,
	// which a rename over the file sets too, leaving its bytes alone.)
	if now, err := sb.f.Stat(); err != nil || !now.ModTime().Equal(st.ModTime()) || now.Size() != sb.size {
		return nil, errors.New("changed while read")
	}
	plainName := strings.TrimSuffix(sb.name, path.Ext(sb.name))
	d := &fileMeta{modtime: st.ModTime(), size: int64(n) + rest, ctype: typeOf(plainName, head[:n])}
	h.Sum(d.hash[:0])
	d.etag = `"` + hex.EncodeToString(d.hash[:16]) + `"`
	sb.raw = rs.sec.sum()
	s.mu.Lock()
	s.orphans[sb.name] = &orphanMeta{modtime: st.ModTime(), size: sb.size, id: id, raw: sb.raw, decoded: d}
	s.mu.Unlock()
	return d, nil
}

// logOnce logs a message once per key.
func (s *fileServer) logOnce(key, format string, args ...any) {
	s.mu.Lock()
	done := s.logged[key]
	s.logged[key] = true
	s.mu.Unlock()
	if !done {
		s.logf(format, args...)
	}
}

// decodingReader reads the decoded bytes of sb, a sibling of a missing
// file, from its handle, and seeks by decoding again, for
// http.ServeContent to answer ranges of a file that exists only encoded.
// size is the decoded size, or -1 when unknown. A seek backward decodes
// from the start again: serveOrphan gives it one range at most, which
// http.ServeContent reaches by seeking to the end (no decoding), back to
// the start and forward to the range, one decode. What it decodes comes
// from the sibling's bytes as they are read (sec), which complete checks
// against those that were verified.
type decodingReader struct {
	sb        *sibling
	size, pos int64

	sec *hashedSection
	dec writers.Decoder
}

// open starts decoding from the start of the sibling.
func (d *decodingReader) open() error {
	if d.sec == nil {
		d.sec = newHashedSection(d.sb.rs, d.sb.size)
	}
	if _, err := d.sec.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if d.dec == nil {
		dec, err := writers.NewDecoder(d.sb.coding)
		if err != nil {
			return err
		}
		d.dec = dec
	}
	if err := d.dec.Reset(d.sec); err != nil {
		return err
	}
	d.pos = 0
	return nil
}

func (d *decodingReader) Read(p []byte) (int, error) {
	if d.sec == nil {
		if err := d.open(); err != nil {
			return 0, err
		}
	}
	n, err := d.dec.Read(p)
	d.pos += int64(n)
	return n, err
}

func (d *decodingReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += d.pos
	case io.SeekEnd:
		if d.size < 0 {
			return 0, errors.New("squeeze: decoded size unknown")
		}
		offset += d.size
	}
	if offset < 0 {
		return 0, errors.New("squeeze: negative position")
	}
	if whence == io.SeekEnd && offset == d.size {
		// http.ServeContent asks for the size; the next read starts over.
		d.sec = nil
		d.pos = offset
		return offset, nil
	}
	if d.sec == nil || offset < d.pos {
		if err := d.open(); err != nil {
			return 0, err
		}
	}
	if _, err := io.CopyN(io.Discard, d, offset-d.pos); err != nil {
		return 0, err
	}
	return offset, nil
}

// complete reports whether what was decoded came from the bytes of the
// sibling that were verified, reading the rest of them.
func (d *decodingReader) complete() bool {
	return d.sec != nil && d.sec.complete(d.sb.raw)
}

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

// report sends the request's Event to the observer. A response with any
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
		e.Skipped = ReasonNone
	}
	fr.s.m.observe(e)
}

// dictIndex lists the files of fsys on one dictionary pattern, by hash.
type dictIndex struct {
	built  time.Time
	byHash map[[32]byte]string
}

// reindexAfter is how long an index stands before a request naming an
// unknown dictionary may walk the tree again, or before it may be dropped
// for an index of another pattern or prefix.
const reindexAfter = time.Second

// maxDictIndexes is how many indexes a file server keeps: one per
// dictionary pattern and URL prefix it is mounted at, after path.Clean
// (so "/", "//" and "/./" are one prefix). A router that hands the file
// server many prefixes could otherwise make it walk the tree and keep an
// index for each. A new index replaces one that has stood reindexAfter;
// while all are younger, no tree is walked and the request goes without a
// primed dictionary. Every walk leaves an index that stands reindexAfter,
// so there are at most maxDictIndexes walks per reindexAfter.
const maxDictIndexes = 32

// primeDictionary makes sure the dictionary store holds the file the
// request names in Available-Dictionary, when that is a file of fsys on
// the same pattern as the requested one: after a restart the store is
// empty, but a returning client still holds the previous version.
func (fr *fileRequest) primeDictionary(d *dictStore) {
	hash, ok := cdt.ParseAvailableDictionary(fr.r.Header["Available-Dictionary"])
	if !ok || len(d.codings) == 0 {
		return
	}
	p := d.matchIndex(fr.upath)
	if p < 0 || d.lookup(hash) != nil {
		return
	}
	esc := (&url.URL{Path: fr.name}).EscapedPath()
	if !strings.HasSuffix(fr.upath, esc) {
		return
	}
	prefix, pattern := cleanPrefix(fr.upath[:len(fr.upath)-len(esc)]), d.patterns[p]
	key := pattern + "\x00" + prefix
	s := fr.s
	s.mu.Lock()
	ix := s.indexes[key]
	name, found := "", false
	if ix != nil {
		name, found = ix.byHash[hash]
	}
	walk := !found && s.reserveIndex(key, ix)
	s.mu.Unlock()
	if walk {
		ix = fr.indexDictionaries(prefix, pattern, d.maxBody)
		s.mu.Lock()
		if s.indexes[key] != nil { // else dropped while the walk ran long
			s.indexes[key] = ix
		}
		s.mu.Unlock()
		name, found = ix.byHash[hash]
	}
	if !found {
		return
	}
	data, err := fs.ReadFile(fr.fsys, name)
	if err == nil && sha256.Sum256(data) == hash {
		d.remember(data, pattern, true, byHash)
	}
}

// cleanPrefix returns the URL prefix p, the part of a request's path before
// the file's name, cleaned as path.Clean cleans: "//", "/./" and "/" are
// one prefix. A prefix ending with a slash keeps it; an empty one stays
// empty.
func cleanPrefix(p string) string {
	if p == "" {
		return ""
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(c, "/") {
		c += "/"
	}
	return c
}

// reserveIndex decides, with s.mu held, whether a request that found no
// dictionary in ix, the index under key (nil if none), walks the tree to
// build it again, and if so stamps key's place with the present time, so
// that requests meanwhile do not walk too. It does when ix has stood
// reindexAfter, or when there is none and there is room: fewer than
// maxDictIndexes, or one of them has stood reindexAfter, which it drops
// (the oldest).
func (s *fileServer) reserveIndex(key string, ix *dictIndex) bool {
	now := time.Now()
	if ix != nil {
		if now.Sub(ix.built) <= reindexAfter {
			return false
		}
		s.indexes[key] = &dictIndex{built: now, byHash: ix.byHash}
		return true
	}
	if len(s.indexes) >= maxDictIndexes {
		oldest := ""
		for k, o := range s.indexes {
			if now.Sub(o.built) > reindexAfter && (oldest == "" || o.built.Before(s.indexes[oldest].built)) {
				oldest = k
			}
		}
		if oldest == "" {
			return false
		}
		delete(s.indexes, oldest)
	}
	s.indexes[key] = &dictIndex{built: now}
	return true
}

// indexDictionaries walks fsys for the files whose URL path, prefix and
// their name, matches pattern, and hashes each (once per version).
func (fr *fileRequest) indexDictionaries(prefix, pattern string, maxBody int64) *dictIndex {
	ix := &dictIndex{built: time.Now(), byHash: map[[32]byte]string{}}
	_ = fs.WalkDir(fr.fsys, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !fr.s.m.dotfiles && name != "." && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || siblingCoding(name) != "" {
			return nil
		}
		if !cdt.MatchPath(pattern, prefix+(&url.URL{Path: name}).EscapedPath()) {
			return nil
		}
		f, err := fr.fsys.Open(name)
		if err != nil {
			return nil
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() || st.Size() > maxBody {
			return nil
		}
		if m, err := fr.metaOf(name, f, st, true); err == nil {
			ix.byHash[m.hash] = name
		}
		return nil
	})
	return ix
}

// siblingCoding returns the coding of a sibling's extension, or "".
func siblingCoding(name string) string {
	for _, se := range siblingExts {
		if strings.HasSuffix(name, se.ext) {
			return se.coding
		}
	}
	return ""
}

// rememberFileDictionary stores the plain bytes of f, version fr.meta, as a
// dictionary on pattern, unless the store holds them already (then they
// only count as sent again). The response is public.
func (fr *fileRequest) rememberFileDictionary(f fs.File, pattern string) {
	d := fr.s.m.dicts
	if fr.meta.size == 0 || fr.meta.size > d.maxBody {
		return
	}
	if held := d.lookup(fr.meta.hash); held != nil {
		d.seen(held, fromFile)
		return
	}
	data, err := io.ReadAll(f)
	if rewind(f) != nil || err != nil || sha256.Sum256(data) != fr.meta.hash {
		return
	}
	d.remember(data, pattern, true, fromFile)
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
