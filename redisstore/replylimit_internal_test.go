package redisstore

import (
	"errors"
	"strings"
	"testing"
)

// scan feeds stream to a scanner of max, in pieces of at most step bytes
// (all of it when step is 0).
func scan(max int64, stream string, step int) error {
	s := replyScanner{max: max}
	if step == 0 {
		step = len(stream)
	}
	for i := 0; i < len(stream); i += step {
		if err := s.feed([]byte(stream[i:min(i+step, len(stream))])); err != nil {
			return err
		}
	}
	return nil
}

func TestReplyScannerFollowsRESP(t *testing.T) {
	const max = 1000
	for _, tc := range []struct {
		name, stream string
		want         error  // nil: accepted
		text         string // in the error's message, when given
	}{
		{"simple lines", "+OK\r\n-ERR no\r\n:42\r\n,3.14\r\n(12345678901234567890123\r\n#t\r\n_\r\n", nil, ""},
		{"bulk strings", "$5\r\nhello\r\n$0\r\n\r\n$-1\r\n=8\r\ntxt:abcd\r\n!3\r\nerr\r\n", nil, ""},
		{"CRLF in a payload", "$4\r\n\r\n\r\n\r\n", nil, ""},
		{"aggregates", "*2\r\n$1\r\na\r\n:1\r\n*0\r\n*-1\r\n~1\r\n+x\r\n>2\r\n+a\r\n+b\r\n", nil, ""},
		{"a map, as HELLO 3 answers", "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n", nil, ""},
		{"an attribute before its reply", "|1\r\n+key\r\n+val\r\n$2\r\nok\r\n", nil, ""},
		{"an attribute inside an array", "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n", nil, ""},
		{"an empty attribute", "|0\r\n:1\r\n", nil, ""},
		{"nested", "*1\r\n*1\r\n*1\r\n*2\r\n:1\r\n%1\r\n+a\r\n*1\r\n+b\r\n", nil, ""},
		{"replies each within the limit", strings.Repeat("$900\r\n"+strings.Repeat("x", 900)+"\r\n", 5), nil, ""},
		{"a bulk string over the limit", "$1001\r\n", ErrReplyTooLarge, ""},
		{"a length of many digits", "$99999999999999999999999\r\n", ErrReplyTooLarge, ""},
		{"elements over the limit", "*32\r\n", ErrReplyTooLarge, ""},
		{"a map's pairs over the limit", "%16\r\n", ErrReplyTooLarge, ""},
		{"elements adding up", "*2\r\n$600\r\n" + strings.Repeat("x", 600) + "\r\n$600\r\n", ErrReplyTooLarge, ""},
		{"a simple line over the limit", "+" + strings.Repeat("x", 1000), ErrReplyTooLarge, ""},
		{"too deep", strings.Repeat("*1\r\n", 40), ErrReplyTooLarge, ""},
		{"an unknown type", "?1\r\n", ErrMalformedReply, ""},
		{"a streamed string", "$?\r\n", ErrMalformedReply, ""},
		{"a letter in a length", "$1x\r\n", ErrMalformedReply, ""},
		{"no length", "*\r\n", ErrMalformedReply, ""},
		{"CR without LF", "+OK\rX", ErrMalformedReply, ""},
		{"RESP2's nulls in an array", "*3\r\n$-1\r\n*-1\r\n_\r\n", nil, ""},
		{"a bulk string of -5", "$-5\r\n", ErrMalformedReply, "negative other than -1"},
		{"an array of -2", "*-2\r\n", ErrMalformedReply, "negative other than -1"},
		{"a bulk string of -0", "$-0\r\n", ErrMalformedReply, "negative other than -1"},
		{"a bulk string of -10", "$-10\r\n", ErrMalformedReply, "negative other than -1"},
		{"a null of leading zeros", "$-01\r\n", ErrMalformedReply, "negative other than -1"},
		{"a negative length in an array", "*2\r\n:1\r\n$-3\r\n", ErrMalformedReply, "negative other than -1"},
		{"a null map", "%-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a null set", "~-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a null push", ">-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a null attribute", "|-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a null verbatim string", "=-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a null blob error", "!-1\r\n", ErrMalformedReply, "only $-1 and *-1"},
		{"a length of 20 digits", "$" + strings.Repeat("0", 19) + "5\r\nhello\r\n", nil, ""},
		{"a length of 21 digits", "$" + strings.Repeat("0", 20) + "5\r\nhello\r\n", ErrMalformedReply, "more than 20 digits"},
		{"a count of 30 digits", "*" + strings.Repeat("0", 30) + "\r\n", ErrMalformedReply, "more than 20 digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{0, 1, 2, 3, 7} {
				err := scan(max, tc.stream, step)
				if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Fatalf("in pieces of %d bytes: %v, want %v", step, err, tc.want)
				}
				if err != nil && !strings.Contains(err.Error(), tc.text) {
					t.Fatalf("in pieces of %d bytes: %q, want it to say %q", step, err, tc.text)
				}
			}
		})
	}
}

// A reply's budget is its own: replies one after another, each within the
// limit, are all accepted however many they are.
func TestReplyScannerBudgetIsPerReply(t *testing.T) {
	reply := "*2\r\n$400\r\n" + strings.Repeat("x", 400) + "\r\n|1\r\n+a\r\n+b\r\n:1\r\n"
	if err := scan(600, strings.Repeat(reply, 1000), 5); err != nil {
		t.Fatal(err)
	}
}

// FuzzReplyScanner feeds any stream whole and split in two: the scanner
// never panics, and where the stream is split does not change whether it
// is refused.
func FuzzReplyScanner(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "$5\r\nhello\r\n", "*2\r\n:1\r\n$-1\r\n", "%1\r\n+a\r\n~1\r\n_\r\n",
		"|1\r\n+k\r\n+v\r\n=5\r\ntxt:x\r\n", "$2000000000\r\n", ">1\r\n!1\r\nx\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n",
		"*2\r\n$-1\r\n*-1\r\n", "$-5\r\n", "*-2\r\n", "%-1\r\n", "=-1\r\n", "$-01\r\n",
		"$" + strings.Repeat("0", 20) + "5\r\nhello\r\n",
	} {
		f.Add([]byte(s), uint16(3))
	}
	f.Fuzz(func(t *testing.T, stream []byte, at uint16) {
		whole := replyScanner{max: 4096}
		errWhole := whole.feed(stream)
		split := replyScanner{max: 4096}
		i := int(at) % (len(stream) + 1)
		errSplit := split.feed(stream[:i])
		if errSplit == nil {
			errSplit = split.feed(stream[i:])
		}
		if (errWhole == nil) != (errSplit == nil) {
			t.Fatalf("whole: %v; split at %d: %v", errWhole, i, errSplit)
		}
		if errWhole == nil && (whole.spent != split.spent || len(whole.stack) != len(split.stack) || whole.state != split.state) {
			t.Fatalf("whole and split at %d end in different states", i)
		}
		if whole.spent > whole.max || len(whole.stack) > replyMaxDepth {
			t.Fatalf("the scanner holds %d of %d declared bytes, %d levels", whole.spent, whole.max, len(whole.stack))
		}
	})
}
