package squeeze

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/squeezehttp/squeeze/internal/cdt"
)

// This file holds the file server's side of dictionaries (RFC 9842): which
// files are dictionaries for a request's path, keeping the one a request
// fetches, and the index that finds, after a restart, the file a returning
// client names by hash in Available-Dictionary.

// isDictionary reports whether the file, of an eligible type or not and
// of size bytes, is one the Middleware's dictionary store keeps for this
// request's path: such a file is hashed to be remembered by a GET, and so
// for a HEAD too, which gets the GET's header.
func (fr *fileRequest) isDictionary(eligible bool, size int64) bool {
	d := fr.s.m.dicts
	return d != nil && eligible && size > 0 && size <= d.maxBody && d.matchIndex(fr.upath) >= 0
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
		d.remember(data, pattern, true, byHash, 0)
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
		if !fr.s.dotfiles && name != "." && strings.HasPrefix(e.Name(), ".") {
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
	d.remember(data, pattern, true, fromFile, 0)
}
