package squeeze

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"mime"
	"net/http"
	"os"
	"path"
	"reflect"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// FileServer returns a handler that serves the files of fsys, as
// [http.FileServer] does, with the Middleware's codings, content types and
// dictionaries. It is a complete handler: do not wrap it in
// [Middleware.Handler] (if it is wrapped, nothing is encoded twice, since
// its encoded responses carry their Content-Encoding). Mount it with
// [http.StripPrefix] as one mounts http.FileServer.
//
// Only GET and HEAD are answered (405 otherwise). For each file it
// negotiates as [Middleware.Handler] does and sends a checked
// precompressed sibling (".br", ".zst", ".gz"; one that does not decode to
// the file is never served), else an encoding made once and kept within a
// counted budget (64 MiB, or the [WithCache]'s), else the file unencoded
// ([ReasonNoRoom] when the budget had no room); with [WithDictionaryMatch],
// a dcz or dcb delta against a matching file the client names. A response
// the handler in front made private, or that answers credentials, is
// neither a dictionary nor a delta nor written to a [WithSharedStore].
// Responses carry a strong ETag from the plain bytes' SHA-256 (suffixed per
// coding), Content-Length and Vary; conditional, HEAD and Range requests
// are answered as [http.ServeContent] answers them, ranges never encoded.
//
// A directory is served as its index.html, else 404: there are no
// listings. A path with an element starting with a dot gets 404 unless
// [FileServerDotfiles] allows it; ".." gets 400; a NUL, a backslash or
// %2F gets 404. An [os.DirFS] tree is opened as an [os.Root], so no
// symbolic link leads out of it; a wrapped one (fs.Sub of it) follows
// links wherever they lead.
//
// Where fsys tells only size and modification time (embed.FS, Windows), a
// file replaced by one of the same size and time keeps its old hash. The
// details are in docs/reference.md ("Static files").
func (m *Middleware) FileServer(fsys fs.FS, opts ...FileServerOption) http.Handler {
	if m == nil || m.buffers == nil {
		m = defaultMiddleware()
	}
	s := newFileServer(m, fsys)
	for _, opt := range opts {
		if opt != nil {
			opt(s)
		}
	}
	return s
}

// FileServerOption tunes a [Middleware.FileServer].
type FileServerOption func(*fileServer)

// fileServer is the handler FileServer returns.
type fileServer struct {
	m    *Middleware
	fsys fs.FS
	// dotfiles is FileServerDotfiles (fileserver_request.go).
	dotfiles bool
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
	metas    map[string]*fileMeta   // by name in fsys
	orphans  map[string]*orphanMeta // by sibling name, for missing files
	logged   map[string]bool        // messages logged, by key
	verdicts map[string]*siblingOK  // by sibling name: the verdict on its latest version
	indexes  map[string]*dictIndex  // by pattern and cleaned URL prefix

	// bestToken holds a token while a best-level encoding runs (startBest);
	// bestRuns counts them, so that tests can wait for them.
	bestToken chan struct{}
	bestRuns  sync.WaitGroup
	// fleet holds off the upgrades another replica has claimed
	// (fileserver_upgrade.go).
	fleet fleetBackoff
}

func newFileServer(m *Middleware, fsys fs.FS) *fileServer {
	s := &fileServer{
		m:          m,
		fsys:       fsys,
		maxDecoded: defaultFileStoreSize / 4,
		logf:       log.Printf,
		metas:      map[string]*fileMeta{},
		orphans:    map[string]*orphanMeta{},
		logged:     map[string]bool{},
		verdicts:   map[string]*siblingOK{},
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
	return newLRUStore(defaultFileStoreSize)
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
