package squeeze

import (
	"bytes"
	"hash/maphash"
	"io"
	"net/http"
	"strings"
)

// This file is the Cache on the response writer's side: what is cached
// (cacheable, readCacheFields), and a whole body's or a stream's lookup
// and store.
//
// A whole delta goes out only when it is smaller than the coding it
// replaces (sendWhole), and the Cache keeps what went out, so that the
// same request costs no encoding the next time. When that coding won, the
// Cache keeps two entries, each exactly what its key says:
//
//   - under the coding's own key (its coding and level, no dictionary),
//     its encoding of the body: the entry any request for that coding
//     finds, with a dictionary or without one;
//   - under the delta's key (its coding, level and dictionary), not the
//     delta, which no request is to get while that entry stands, but the
//     verdict that the delta lost, with its length: a later request with
//     the same dictionary finds it, looks the coding without the
//     dictionary up (cachedBeaten) and, found and smaller than that
//     length, sends it without encoding anything.
//
// The verdict carries the delta's length, not the coding that beat it, as
// clients name different codings: one whose coding is not in the Cache, or
// not smaller than the delta, encodes it (capped below that length) and
// stores it, or sends the delta it did not beat, uncached. Both entries
// keep the plain bytes for hits to compare, one shared copy that each
// one's weight counts; the Cache's rules for what is stored are those of
// any whole body (cacheable), and br under WithLengthHiding, which bypasses
// the Cache, leaves no verdict either.

// cacheFields is what a response's header says about storing it, read
// under any case of each field name: a handler that assigns to the map
// (h["cache-control"]) leaves the key as written, and net/http sends it.
type cacheFields struct {
	// never is set by Set-Cookie, Cache-Control no-store or private, and
	// Vary: *.
	never bool
	// shared is set by Cache-Control public, s-maxage or must-revalidate,
	// which let a shared cache reuse a response to a request with
	// Authorization (RFC 9111 §3.5).
	shared bool
	// public is set by Cache-Control public alone: what publicResponse
	// asks of a response to a request with credentials.
	public bool
	// varies is set by a Vary naming any field but Accept-Encoding,
	// Available-Dictionary and Sec-Fetch-Site, the ones squeeze's own
	// choice depends on.
	varies bool
	// site is set by a Vary naming Sec-Fetch-Site, which squeeze adds on
	// dictionary paths: a key by validator then holds the request's
	// Sec-Fetch-Site as sent, if it sent one, so that whoever named it,
	// responses to different values never meet.
	site bool
	// etag is the one ETag value, "" when there is none or more than one.
	etag  string
	etags int
}

// readCacheFields reads h for the cache, in one pass over its keys.
func readCacheFields(h http.Header) cacheFields {
	var cf cacheFields
	for k, v := range h {
		switch cacheFieldName(k) {
		case "Set-Cookie":
			cf.never = cf.never || len(v) > 0
		case "Cache-Control":
			for _, line := range v {
				for line != "" {
					var d string
					d, line = nextElement(line)
					if i := strings.IndexByte(d, '='); i >= 0 {
						d = d[:i] // private="Set-Cookie" is private too
					}
					switch d = trimOWS(d); {
					case equalFold(d, "no-store"), equalFold(d, "private"):
						cf.never = true
					case equalFold(d, "public"):
						cf.shared, cf.public = true, true
					case equalFold(d, "s-maxage"), equalFold(d, "must-revalidate"):
						cf.shared = true
					}
				}
			}
		case "Vary":
			star, other, site := varyNames(v)
			cf.never = cf.never || star
			cf.varies = cf.varies || other
			cf.site = cf.site || site
		case "Etag":
			cf.etags += len(v)
			if len(v) == 1 {
				cf.etag = trimOWS(v[0])
			}
		}
	}
	if cf.etags != 1 {
		cf.etag = ""
	}
	return cf
}

// cacheFieldName returns the canonical name of k when it is one of the
// fields readCacheFields looks at, under any case; any other key comes
// back as it is.
func cacheFieldName(k string) string {
	for _, name := range [...]string{"Set-Cookie", "Cache-Control", "Vary", "Etag"} {
		if len(k) == len(name) && (k == name || equalFold(k, name)) {
			return name
		}
	}
	return k
}

// varyNames reports whether the Vary field lines name "*", whether they
// name any field but Accept-Encoding, Available-Dictionary and
// Sec-Fetch-Site, and whether they name Sec-Fetch-Site.
func varyNames(lines []string) (star, other, site bool) {
	for _, line := range lines {
		for line != "" {
			var name string
			name, line = nextElement(line)
			switch name = trimOWS(name); {
			case name == "":
			case name == "*":
				star = true
			case equalFold(name, "Accept-Encoding"), equalFold(name, "Available-Dictionary"):
			case equalFold(name, "Sec-Fetch-Site"):
				site = true
			default:
				other = true
			}
		}
	}
	return star, other, site
}

// cacheable reads h and reports whether the response may be stored or
// served from the cache at all: not without a cache, nor for anything but
// a 200 to a request other than HEAD, a response with trailers, a stream
// decided at a flush, or one whose header says never (see cacheFields).
func (m *Middleware) cacheable(h http.Header, f *facts) (cacheFields, bool) {
	if m.cache == nil || f.status != http.StatusOK || f.head || f.trailers || f.event == atFlush || f.secret {
		return cacheFields{}, false
	}
	cf := readCacheFields(h)
	return cf, !cf.never
}

// cachedWhole looks up a body that ended within the buffer, by content
// whatever its ETag says: a handler's tag may name a version of data that
// it renders per user, language or tenant. It returns the stored encoding
// on a hit; on a miss that this response leads, store is set and k holds
// the key to give to storeWhole (or storeBeaten) once body is encoded. For
// a delta whose key holds the verdict that it lost to the coding without
// the dictionary (storeBeaten), it returns that verdict, lost, instead:
// the delta's length, which that coding must beat, and k to give to
// cachedBeaten. k is filled in place, not returned, which would copy the
// key twice on every response, with or without a cache. r is the request,
// o the response's offer.
func (m *Middleware) cachedWhole(r *http.Request, o *offer, h http.Header, f *facts, body []byte, k *cacheKey) (stored []byte, lost int, store bool) {
	if _, ok := m.cacheable(h, f); !ok || m.hiding.skipsCache(o.coding) {
		return nil, 0, false
	}
	*k = cacheKey{sum: maphash.Bytes(m.cache.seed, body), length: len(body), coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID()}
	return m.lookupWhole(r, o, h, body, k)
}

// lookupWhole is cachedWhole once the response is known to be cacheable in
// o's coding and k is o's key for body.
func (m *Middleware) lookupWhole(r *http.Request, o *offer, h http.Header, body []byte, k *cacheKey) (stored []byte, lost int, store bool) {
	e, leader := m.cache.lookup(r, k, body, upgradeLevel(k.coding), 0, upgradeSource{o.dict, m.shared, &m.life})
	switch {
	case e == nil:
		return nil, 0, leader
	case e.lost > 0:
		return nil, e.lost, false
	}
	if m.shared != nil && !e.public.Load() && publicResponse(r.Header, h) {
		e.public.Store(true) // its upgrade may be shared now
	}
	return e.body, 0, false
}

// storeWhole stores out, the encoding of body looked up as k, with a copy
// of body for later hits to compare, or only ends the flight when out is
// nil (no gain). Both are copied: they live in pooled buffers. It does
// nothing unless store is set. r and h are the request and the response's
// header, which say whether the entry may be shared (publicResponse).
func (m *Middleware) storeWhole(r *http.Request, h http.Header, k *cacheKey, store bool, body, out []byte) {
	if !store {
		return
	}
	var plain []byte
	if out != nil && int64(len(out)+len(body)) <= m.cache.entryMax {
		out, plain = bytes.Clone(out), bytes.Clone(body)
	} else {
		out = nil
	}
	m.cache.end(k, out, plain, k.level, out != nil && m.shared != nil && publicResponse(r.Header, h))
}

// storeBeaten ends the flight of k, a delta's key that lookup made this
// response lead, when fb's coding without the dictionary beat the delta,
// which was lost bytes long or more: it stores out, fb's encoding of body,
// under fb's key, and the verdict under k (see above). It does nothing
// unless store is set. r and h are as for storeWhole.
func (m *Middleware) storeBeaten(r *http.Request, h http.Header, k *cacheKey, store bool, body []byte, lost int, fb *offer, out []byte) {
	if !store {
		return
	}
	if m.hiding.skipsCache(fb.coding) || int64(len(out)+len(body)) > m.cache.entryMax {
		m.cache.end(k, nil, nil, 0, false)
		return
	}
	plain := bytes.Clone(body)
	kb := beatenKey(k, fb)
	e := newEntry(&kb, bytes.Clone(out), plain, kb.level)
	e.public.Store(m.shared != nil && publicResponse(r.Header, h))
	m.cache.add(&kb, e, 0) // beside any flight for kb: whichever stores first stands
	verdict := newEntry(k, nil, plain, k.level)
	verdict.lost = lost
	m.cache.endWith(k, verdict, 0)
}

// cachedBeaten looks up body in fb's coding without the dictionary, after
// cachedWhole found, under k, the verdict that the delta lost to that
// coding; it returns what lookupWhole does for fb's key, filled in kb. It
// counts a miss, and returns nothing, when fb's coding bypasses the Cache.
func (m *Middleware) cachedBeaten(r *http.Request, fb *offer, h http.Header, body []byte, k, kb *cacheKey) (stored []byte, store bool) {
	if m.hiding.skipsCache(fb.coding) {
		m.cache.misses.Add(1)
		return nil, false
	}
	*kb = beatenKey(k, fb)
	stored, _, store = m.lookupWhole(r, fb, h, body, kb) // no verdict without a dictionary
	return stored, store
}

// beatenKey returns the key of the body that k, a delta's key, finds, in
// fb's coding without the dictionary.
func beatenKey(k *cacheKey, fb *offer) cacheKey {
	return cacheKey{sum: k.sum, length: k.length, coding: fb.coding, level: fb.encoders.Level(), dictionary: fb.dictionaryID()}
}

// validatorKey returns the key of a streamed response by its strong ETag,
// when the Middleware trusts its handlers' tags ([CacheTrustedETags]) and
// the response may be shared with every request of its key: a GET whose
// Vary names nothing but the fields squeeze's own choice depends on (the
// offer's coding and dictionary are in the key), and, for a request with
// Authorization, a response that allows a shared cache to reuse it (RFC
// 9111 §3.5). The key holds the Host and the request-target as the client
// sent it: a handler mounted under http.StripPrefix sees a stripped, and
// decoded, URL.Path, which other mounts and other escapings share; and the
// request's Sec-Fetch-Site when Vary names it. A request without a
// RequestURI (built by hand, not by net/http's server)
// gets no key, as its original target is unknown.
func (m *Middleware) validatorKey(r *http.Request, o *offer, cf *cacheFields) (cacheKey, bool) {
	if !m.trustETags || r.Method != http.MethodGet || r.RequestURI == "" || !isStrongETag(cf.etag) ||
		cf.varies || (!cf.shared && hasAuthorization(r.Header)) {
		return cacheKey{}, false
	}
	k := requestKey(r, o, cf)
	k.etag = cf.etag
	return k, true
}

// hasAuthorization reports whether a request header has Authorization,
// under any case.
func hasAuthorization(h http.Header) bool {
	if len(h["Authorization"]) > 0 {
		return true
	}
	for k, v := range h {
		if len(v) > 0 && equalFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// cachedStream looks an encoded stream up by validator, only with
// [CacheTrustedETags]: nothing else can show, before the handler has
// written it, that a stored encoding holds the bytes it is about to write.
// r is the request, o the response's offer. It returns the stored encoding
// on a hit; on a miss of a response it may store, it returns a fill that
// tees the stream, on its way to dst, into the cache, and that follows the
// response as its hook. looked is set when the stream had a key by
// validator at all: one that had none may be found by content instead
// (streamByContent).
func (m *Middleware) cachedStream(r *http.Request, o *offer, h http.Header, f *facts, dst io.Writer) (stored []byte, fill *cacheFill, looked bool) {
	if !m.trustETags || m.hiding.skipsCache(o.coding) {
		return nil, nil, false
	}
	cf, ok := m.cacheable(h, f)
	if !ok {
		return nil, nil, false
	}
	k, ok := m.validatorKey(r, o, &cf)
	if !ok {
		return nil, nil, false
	}
	e, leader := m.cache.lookup(r, &k, nil, upgradeLevel(k.coding), m.cache.patience, upgradeSource{dict: o.dict, life: &m.life})
	if e != nil {
		return e.body, nil, true
	}
	if leader {
		return nil, &cacheFill{c: m.cache.cacheCore, key: k, dst: dst, level: k.level, leading: true}, true
	}
	return nil, nil, true
}

// streamByContent is the Cache's part in a stream that cachedStream did
// not answer, in a cacheable response to a GET (cacheable: the one
// decision of what is stored): it returns a fill that follows the stream
// (see cacheFill), or nil. The fill holds, as cand, the entry its
// request's key (requestKey) holds, whose plain bytes the writer compares
// the stream's with as they pass, holding them back, and sends in place of
// an encoding when they are the same to the last; with no entry there it
// leads, if no other response of the key does, a fill that keeps the
// stream and its plain bytes for the next response. A response carries
// only the encoding of the bytes its handler wrote either way: the key
// only finds a candidate, and the bytes decide, as for a body within the
// buffer. declared is the stream's declared length, -1 for none.
func (m *Middleware) streamByContent(r *http.Request, o *offer, h http.Header, f *facts, declared int64) *cacheFill {
	if m.cache == nil || m.hiding != nil || r.Method != http.MethodGet || r.RequestURI == "" {
		return nil
	}
	cf, ok := m.cacheable(h, f)
	if !ok {
		return nil
	}
	fill := &cacheFill{c: m.cache.cacheCore, key: requestKey(r, o, &cf), level: o.encoders.Level(), declared: declared, byContent: true}
	if e, ok := m.cache.store.GetIfPresent(fill.key); ok && e.plain != nil && e.lost == 0 {
		fill.cand = e
		return fill
	}
	m.cache.misses.Add(1)
	if !m.cache.lead(&fill.key) {
		return nil // another response of the key stores it
	}
	fill.leading = true
	return fill
}

// requestKey returns the key under which a stream found by content is
// kept: the offer's coding, level and dictionary, the request's Host and
// request-target as sent, and its Sec-Fetch-Site when the response varies
// on it, as validatorKey's, without an ETag.
func requestKey(r *http.Request, o *offer, cf *cacheFields) cacheKey {
	k := cacheKey{
		coding: o.coding, level: o.encoders.Level(), dictionary: o.dictionaryID(),
		host: r.Host, uri: r.RequestURI,
	}
	if lines := r.Header["Sec-Fetch-Site"]; cf.site && len(lines) > 0 {
		// Each line as sent, in order: equal keys only for requests
		// that sent the same field. A request without it keys as for a
		// response that does not vary on it, so that a Middleware with
		// dictionaries and one without, sharing a Cache, share entries.
		k.site = "\x00" + strings.Join(lines, "\x00")
	}
	return k
}

// streamHit counts the hit of a stream found by content, e under k, whose
// bytes the handler wrote to the last, and queues its upgrade as a hit by
// content would; o is the response's offer.
func (m *Middleware) streamHit(k *cacheKey, e *cacheEntry, o *offer) {
	m.cache.hits.Add(1)
	if best := upgradeLevel(k.coding); e.hits.Add(1) == upgradeAfter && e.level < best {
		m.cache.enqueue(newUpgradeJob(k, e, best, upgradeSource{dict: o.dict, life: &m.life}), &m.life)
	}
}
