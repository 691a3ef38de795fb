package redisstore

import (
	"context"
	"fmt"
	"net"
)

// This file holds the guard against a Redis that declares more than it
// should: go-redis allocates, for each reply, what the reply's headers
// declare (a bulk string's length, an aggregate's count) before it reads a
// byte of it, so a hostile or impersonated server, or one corrupted on the
// way, can make a client allocate gigabytes with a few bytes. LimitReplies
// wraps the connections of a client so that a reply declaring more than a
// limit fails before go-redis reads its header.

// ErrReplyTooLarge is returned, wrapped, by a command whose reply declares
// more than the limit of [LimitReplies], or nests deeper than
// go-redis's replies do: the connection is dropped before the reply is
// read, and the command fails. squeeze counts it as a failure of kind
// "too_large" (its SharedErrorKind).
var ErrReplyTooLarge error = &kindError{msg: "redisstore: the server's reply declares more than the limit", kind: "too_large"}

// ErrMalformedReply is returned, wrapped, by a command whose reply is not
// RESP2 or RESP3 as go-redis reads it, or declares a length or count that
// is negative, other than RESP2's nulls $-1 and *-1, or longer than 20
// digits: the connection is dropped before go-redis reads the reply.
// squeeze counts it as a failure of kind "bad_value" (its
// SharedErrorKind).
var ErrMalformedReply error = &kindError{msg: "redisstore: the server's reply is not well-formed RESP", kind: "bad_value"}

// ReplySlack is what a reply may declare beyond the limit given to
// [LimitReplies]: the framing of a value and the small replies around it.
const ReplySlack = 64 << 10

// Bounds of a reply besides the bytes it declares.
const (
	// replyElementCost is what each element an aggregate reply declares
	// counts against the limit: go-redis holds each in an interface (16
	// bytes) of a slice, or an entry of a map (about twice that).
	replyElementCost = 32
	// replyMaxDepth is how deep aggregates may nest: go-redis reads them
	// recursively, and its own replies nest a few levels at most.
	replyMaxDepth = 32
	// replyMaxDigits bounds the number of a length header.
	replyMaxDigits = 20
	// replyMaxLimit caps the limit of LimitReplies (256 TiB, past any
	// value a Store reads), so that what the scan of a reply adds and
	// multiplies (a header's number, times 10 a digit at a time, times
	// 2*replyElementCost for a map, plus 2 for a CRLF) fits an int64.
	replyMaxLimit = 1 << 48
)

// Dialer is the type of the Dialer field of go-redis's options
// (redis.Options, redis.ClusterOptions, redis.FailoverOptions,
// redis.RingOptions).
type Dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

// LimitReplies returns a dialer that dials with dial (a net.Dialer when
// nil) and limits every reply read on the connection to what a Store
// needs: a reply may declare at most limit bytes plus [ReplySlack], its
// aggregates' elements counted at 32 bytes each, and nest at most 32
// levels. A reply declaring more fails its command with [ErrReplyTooLarge]
// before go-redis allocates it, and the connection is dropped. Give it the
// value limit of squeeze's SharedMaxValue (0 means its default, 4 MiB), and
// put it in the options of a client of the Store's own:
//
//	opt := &redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true}
//	opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 0)
//	client := redis.NewClient(opt)
//
// redis.NewDialer(opt) dials as go-redis does without a Dialer, over TLS
// when opt.TLSConfig is set; so the limit applies to what TLS decrypts. The
// scan of the replies costs a pass over the bytes read, whatever they are.
// A limit below 0 panics; one above 256 TiB counts as 256 TiB.
func LimitReplies(dial Dialer, limit int) Dialer {
	if limit < 0 {
		panic(fmt.Sprintf("redisstore.LimitReplies: negative limit %d", limit))
	}
	if limit == 0 {
		limit = defaultMaxValue
	}
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	max := min(int64(limit), replyMaxLimit) + ReplySlack
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &limitConn{Conn: c, scan: replyScanner{max: max}}, nil
	}
}

// limitConn is a connection whose replies a replyScanner follows.
type limitConn struct {
	net.Conn
	scan replyScanner
	err  error // the scanner's, returned by every later Read
}

// Read reads from the connection and scans what it read before passing it
// on: a reply declaring too much fails the Read before its header reaches
// go-redis, and the Reads after it.
func (c *limitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if serr := c.scan.feed(p[:n]); serr != nil {
			c.err = serr
			return 0, serr
		}
	}
	return n, err
}

// replyScanner follows a stream of RESP2 and RESP3 replies, byte by byte
// for headers and a skip for payloads, so that its cost is linear in what
// it reads, whatever the split of the stream into reads.
type replyScanner struct {
	max   int64 // what one reply may declare, at most replyMaxLimit+ReplySlack
	spent int64 // what the current reply declared so far

	state    uint8 // scanType, scanLine, scanLF, scanPayload
	typ      byte  // the type of the line being read
	neg      bool  // the line's number is negative
	digits   int   // digits of the line's number
	num      int64 // the line's number
	skip     int64 // payload bytes, CRLF included, still to read
	attrDone bool  // the aggregate just closed was an attribute
	stack    []aggregate
}

// aggregate is an open aggregate reply: left elements still to read.
type aggregate struct {
	left int64
	attr bool // an attribute, which precedes the element it annotates
}

const (
	scanType    = iota // at the type byte of a reply or element
	scanLine           // in a header or simple line, before its CR
	scanLF             // after the CR, at the LF
	scanPayload        // in a bulk payload and its CRLF
)

// feed scans b, the next bytes of the stream.
func (s *replyScanner) feed(b []byte) error {
	for i := 0; i < len(b); {
		switch s.state {
		case scanType:
			if err := s.begin(b[i]); err != nil {
				return err
			}
			i++
		case scanLine:
			c := b[i]
			i++
			if c == '\r' {
				s.state = scanLF
				continue
			}
			if err := s.lineByte(c); err != nil {
				return err
			}
		case scanLF:
			if b[i] != '\n' {
				return fmt.Errorf("%w: CR without LF", ErrMalformedReply)
			}
			i++
			if err := s.endLine(); err != nil {
				return err
			}
		case scanPayload:
			n := min(s.skip, int64(len(b)-i))
			i += int(n)
			s.skip -= n
			if s.skip == 0 {
				s.state = scanType
				s.element()
			}
		}
	}
	return nil
}

// begin starts a reply or an element of type c.
func (s *replyScanner) begin(c byte) error {
	switch c {
	case '+', '-', ':', ',', '(', '#', '_', '$', '=', '!', '*', '%', '~', '>', '|':
	default:
		return fmt.Errorf("%w: unknown type %q", ErrMalformedReply, c)
	}
	s.typ, s.neg, s.digits, s.num = c, false, 0, 0
	s.state = scanLine
	return s.spend(1)
}

// counted reports whether the line of type t holds a count or length.
func counted(t byte) bool {
	switch t {
	case '$', '=', '!', '*', '%', '~', '>', '|':
		return true
	}
	return false
}

// lineByte takes one byte of a line.
func (s *replyScanner) lineByte(c byte) error {
	if !counted(s.typ) {
		// A simple line: go-redis holds it whole, however long.
		return s.spend(1)
	}
	switch {
	case c == '-' && s.digits == 0 && !s.neg:
		if s.typ != '$' && s.typ != '*' {
			return fmt.Errorf("%w: a negative %q header: only $-1 and *-1, RESP2's nulls, are negative", ErrMalformedReply, s.typ)
		}
		s.neg = true
	case c >= '0' && c <= '9':
		if s.neg && (s.digits > 0 || c != '1') {
			return fmt.Errorf("%w: a %q header negative other than -1, RESP2's null", ErrMalformedReply, s.typ)
		}
		if s.digits == replyMaxDigits {
			return fmt.Errorf("%w: a number of more than %d digits in the header of a %q reply", ErrMalformedReply, replyMaxDigits, s.typ)
		}
		s.digits++
		s.num = s.num*10 + int64(c-'0')
		if s.num > s.max { // also keeps num from overflowing
			return s.tooLarge(s.num)
		}
	case c == '?':
		return fmt.Errorf("%w: a streamed reply, which go-redis does not read", ErrMalformedReply)
	default:
		return fmt.Errorf("%w: %q in the header of a %q reply", ErrMalformedReply, c, s.typ)
	}
	return nil
}

// endLine ends a line and starts what it announces.
func (s *replyScanner) endLine() error {
	s.state = scanType
	if !counted(s.typ) {
		s.element()
		return nil
	}
	if s.digits == 0 {
		return fmt.Errorf("%w: a %q header without a number", ErrMalformedReply, s.typ)
	}
	if s.neg { // $-1 or *-1, a RESP2 null, as lineByte let through
		s.element()
		return nil
	}
	n := s.num
	switch s.typ {
	case '$', '=', '!':
		if err := s.spend(n); err != nil {
			return err
		}
		s.skip, s.state = n+2, scanPayload
		return nil
	case '%', '|':
		n *= 2 // key and value
	}
	if err := s.spend(n * replyElementCost); err != nil {
		return err
	}
	if n == 0 {
		s.attrDone = s.typ == '|'
		s.element()
		return nil
	}
	if len(s.stack) >= replyMaxDepth {
		return fmt.Errorf("%w: aggregates nested deeper than %d", ErrReplyTooLarge, replyMaxDepth)
	}
	s.stack = append(s.stack, aggregate{left: n, attr: s.typ == '|'})
	return nil
}

// element records an element read whole, closing the aggregates it
// completes; when none is left open, the reply is whole.
func (s *replyScanner) element() {
	if s.attrDone {
		// An attribute is not an element: the one it annotates follows.
		s.attrDone = false
		return
	}
	for {
		if len(s.stack) == 0 {
			s.spent = 0 // a reply read whole
			return
		}
		top := &s.stack[len(s.stack)-1]
		top.left--
		if top.left > 0 {
			return
		}
		attr := top.attr
		s.stack = s.stack[:len(s.stack)-1]
		if attr {
			return // likewise, once it is closed
		}
	}
}

// spend counts n more bytes declared by the current reply.
func (s *replyScanner) spend(n int64) error {
	if n > s.max-s.spent {
		return s.tooLarge(s.spent + n)
	}
	s.spent += n
	return nil
}

func (s *replyScanner) tooLarge(n int64) error {
	return fmt.Errorf("%w: %d bytes or more, over the limit of %d (LimitReplies' limit plus ReplySlack)", ErrReplyTooLarge, n, s.max)
}

// defaultMaxValue is the default of squeeze's SharedMaxValue.
const defaultMaxValue = 4 << 20
