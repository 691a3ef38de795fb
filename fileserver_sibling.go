package squeeze

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze/writers"
)

// This file holds the precompressed siblings of a file (app.js.br,
// app.js.zst, app.js.gz) and the siblings of a missing file (orphans): each
// opened once per request, judged against the plain bytes once per version,
// and sent or decoded from the handle it was judged on, its bytes checked
// against those judged as they go out.

// siblingExts maps the codings a precompressed sibling may have to the
// extension it has, in the order siblings are looked for.
var siblingExts = [...]struct{ coding, ext string }{
	{Brotli, ".br"},
	{Zstd, ".zst"},
	{Gzip, ".gz"},
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
	key  siblingKey // the version of the sibling (and of its file) judged
	once sync.Once
	ok   bool
	// raw is the SHA-256 of the sibling's bytes that were decoded and found to
	// be the file: a response sends a sibling only when the bytes it sent
	// hash to it (hashedSection.complete).
	raw [32]byte
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
	// One verdict per sibling name, for its latest version: a sibling
	// rewritten again and again replaces its verdict rather than adding
	// one, so the map is bounded by the tree, not by its history.
	v := s.verdicts[sb.name]
	if v == nil || v.key != k {
		v = &siblingOK{key: k}
		s.verdicts[sb.name] = v
	}
	s.mu.Unlock()
	v.once.Do(func() {
		sum, n, raw, err := sb.decodedHash(meta.size + 1)
		v.ok = err == nil && n == meta.size && sum == meta.hash
		v.raw = raw
		if !v.ok {
			why := "decodes to other bytes than " + name
			if err != nil {
				why = "does not decode (" + err.Error() + ")"
			}
			s.logf("squeeze: FileServer: %s %s; serving %s without it", sb.name, why, name)
		}
	})
	if !v.ok {
		return false
	}
	sb.raw = v.raw
	return true
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

// noLarger reports whether sb, when there is one, is no larger than the
// encoding data (nil: the plain file, which the sibling is smaller than).
func (sb *sibling) noLarger(data []byte) bool {
	if sb == nil {
		return false
	}
	return data == nil || sb.size <= int64(len(data))
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

// siblingCoding returns the coding of a sibling's extension, or "".
func siblingCoding(name string) string {
	for _, se := range siblingExts {
		if strings.HasSuffix(name, se.ext) {
			return se.coding
		}
	}
	return ""
}

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
	// Each sibling is opened once, and judged, sent or decoded from that
	// handle (see sibling).
	sibs := map[string]*sibling{}
	defer closeSiblings(sibs)
	for _, se := range siblingExts {
		if sb := openSibling(fr.fsys, fr.name+se.ext, se.coding); sb != nil {
			sibs[se.coding] = sb
		}
	}
	meta, ref := fr.s.orphanReference(sibs)
	if meta == nil {
		fr.fail(fs.ErrNotExist)
		return
	}
	fr.meta = meta
	fr.ev.In = meta.size
	var buf [len(siblingExts)]offer
	offers, good := fr.orphanOffers(buf[:0], sibs, ref, meta)
	h := fr.w.Header()
	h["Vary"] = []string{"Accept-Encoding"}
	h["Content-Type"] = []string{meta.ctype}
	ranged := len(fr.r.Header["Range"]) > 0
	i := -1
	if !ranged {
		i = negotiate(fr.r.Header["Accept-Encoding"], offers)
	}
	// Every representation of an orphan is a sibling.
	ff := fr.fileFacts(meta, matchTypes(fr.s.m.types, meta.ctype), ranged)
	ff.siblings, ff.precoded, ff.offered = true, i >= 0, i >= 0
	v, why, _ := fr.s.m.decide(&ff)
	if v == sendEncoded && i >= 0 {
		fr.serveSibling(good[offers[i].coding], meta)
		return
	}
	fr.ev.Skipped = why
	fr.serveDecoded(ref, meta)
}

// orphanReference returns the metadata of what the first decodable
// sibling of a missing file decodes to, kept like a file's under the
// sibling's name, and that sibling; nil when none decodes.
func (s *fileServer) orphanReference(sibs map[string]*sibling) (*fileMeta, *sibling) {
	for _, se := range siblingExts {
		sb := sibs[se.coding]
		if sb == nil {
			continue
		}
		meta, err := s.decodedMeta(sb)
		if err == nil {
			return meta, sb
		}
		s.logOnce(sb.name, "squeeze: FileServer: %s does not decode: %v; not served", sb.name, err)
	}
	return nil, nil
}

// orphanOffers appends to offers the Middleware's offers that a sibling
// of the orphan answers, ref and the siblings that decode to meta as ref
// does, and returns them with those siblings by coding.
func (fr *fileRequest) orphanOffers(offers []offer, sibs map[string]*sibling, ref *sibling, meta *fileMeta) ([]offer, map[string]*sibling) {
	good := map[string]*sibling{}
	for _, o := range fr.s.m.offers {
		sb := sibs[o.coding]
		if sb == nil || sb != ref && !fr.s.judgeSibling(sb, fr.name, meta) {
			continue
		}
		good[o.coding] = sb
		offers = append(offers, o)
	}
	return offers, good
}

// serveDecoded serves an orphan decoded from ref, its reference sibling,
// with http.ServeContent: conditionals and one range; what goes out is
// checked to come from the bytes ref was verified on.
func (fr *fileRequest) serveDecoded(ref *sibling, meta *fileMeta) {
	fr.w.Header()["Etag"] = []string{meta.etag}
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
