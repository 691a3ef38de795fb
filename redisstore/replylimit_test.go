package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// A server that declares a reply of gigabytes, in any of RESP's types
// that go-redis allocates for, makes a Get on a LimitReplies client fail
// with ErrReplyTooLarge before anything is allocated for it: eight at
// once leave the heap as it was, give or take what a few calls allocate.
func TestLimitRepliesRefusesDeclaredGiantsBeforeAllocating(t *testing.T) {
	const gets = 8
	for _, tc := range []struct{ name, reply string }{
		{"bulk string", "$2000000000\r\n"},
		{"verbatim string", "=2000000000\r\n"},
		{"blob error", "!2000000000\r\n"},
		{"array", "*2000000000\r\n"},
		{"set", "~2000000000\r\n"},
		{"map", "%1000000000\r\n"},
		{"push", ">2000000000\r\n"},
		{"attribute", "|1000000000\r\n"},
		{"header split across writes", "$2000000000\r\n"},
		{"arrays nested", strings.Repeat("*1\r\n", 100)},
		{"elements adding up", "*2\r\n$1000000\r\n" + strings.Repeat("x", 1000000) + "\r\n$4000000\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := testtool.HostileRedis(t, tc.reply, strings.HasPrefix(tc.name, "header split"), nil)
			opt := &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: gets}
			opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 4<<20)
			client := redis.NewClient(opt)
			t.Cleanup(func() { _ = client.Close() })
			store := redisstore.MustNew(client, redisstore.WithTimeout(5*time.Second))

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			errs := make([]error, gets)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					_, _, errs[i] = store.Get(context.Background(), "k"+strconv.Itoa(i), 4<<20)
				})
			}
			wg.Wait()
			runtime.ReadMemStats(&after)
			grew := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d Gets allocated %d KiB; the first error: %v", gets, grew>>10, errs[0])
			for _, err := range errs {
				if !errors.Is(err, redisstore.ErrReplyTooLarge) {
					t.Fatalf("Get's error %v, want ErrReplyTooLarge", err)
				}
			}
			if grew > 32<<20 {
				t.Errorf("%d Gets of a reply declaring gigabytes allocated %d MiB, want under 32 MiB", gets, grew>>20)
			}
		})
	}
}

// A Store whose client limits its replies reads and writes values up to
// the limit as any other, over RESP2 and RESP3 (whose handshake's map the
// limit must let through); a value over the limit plus ReplySlack, which
// a Get of the Store never asks for, fails a raw GET on that client.
func TestLimitRepliesLetsTheStoreWork(t *testing.T) {
	srv, raw := startRedis(t)
	const limit = 256 << 10
	big := bytes.Repeat([]byte("v"), limit+redisstore.ReplySlack+1)
	if err := raw.Set(t.Context(), "huge", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			opt := &redis.Options{Addr: srv.Addr(), Protocol: protocol, ContextTimeoutEnabled: true, MaxRetries: -1}
			opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), limit)
			client := redis.NewClient(opt)
			t.Cleanup(func() { _ = client.Close() })
			s := redisstore.MustNew(client, redisstore.WithTimeout(10*time.Second))
			ctx := t.Context()
			want := bytes.Repeat([]byte("w"), limit)
			if err := s.Set(ctx, "value", want, 0); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				got, ok, err := s.Get(ctx, "value", limit)
				if err != nil || !ok || !bytes.Equal(got, want) {
					t.Fatalf("Get: %d bytes, %v, %v; want the %d bytes set", len(got), ok, err, len(want))
				}
			}
			if _, ok, err := s.Get(ctx, "huge", limit); ok || err != nil {
				t.Fatalf("Get of a value over the limit: %v, %v; want not found", ok, err)
			}
			if err := client.Get(ctx, "huge").Err(); !errors.Is(err, redisstore.ErrReplyTooLarge) {
				t.Fatalf("a raw GET of %d bytes: %v, want ErrReplyTooLarge", len(big), err)
			}
			if err := client.Ping(ctx).Err(); err != nil {
				t.Fatalf("the client after a refused reply: %v", err)
			}
		})
	}
}

func TestLimitRepliesNegativeLimitPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("LimitReplies(nil, -1) did not panic")
		}
	}()
	redisstore.LimitReplies(nil, -1)
}

// A server that answers a Get with a negative length or count other than
// RESP2's nulls ($-1 and *-1), or with a null of a RESP3 type, which has
// none, makes the Get fail with ErrMalformedReply on a LimitReplies
// client: go-redis would read %-1 and its kind as a null, a key not found.
// RESP2's null itself is a key not found.
func TestLimitRepliesRefusesNegativeCountsButRESP2Nulls(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        error // nil: not found, without an error
	}{
		{"a null bulk string", "$-1\r\n", nil},
		{"a bulk string of -5", "$-5\r\n", redisstore.ErrMalformedReply},
		{"an array of -2", "*-2\r\n", redisstore.ErrMalformedReply},
		{"a null map", "%-1\r\n", redisstore.ErrMalformedReply},
		{"a null set", "~-1\r\n", redisstore.ErrMalformedReply},
		{"a null verbatim string", "=-1\r\n", redisstore.ErrMalformedReply},
		{"a null blob error", "!-1\r\n", redisstore.ErrMalformedReply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := testtool.HostileRedis(t, tc.reply, false, nil)
			opt := &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1}
			opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 0)
			client := redis.NewClient(opt)
			t.Cleanup(func() { _ = client.Close() })
			store := redisstore.MustNew(client, redisstore.WithTimeout(5*time.Second))
			v, ok, err := store.Get(t.Context(), "k", 4<<20)
			if tc.want == nil {
				if ok || err != nil {
					t.Fatalf("Get: %q, %v, %v; want not found", v, ok, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Get: %q, %v, %v; want %v", v, ok, err, tc.want)
			}
		})
	}
}

// LimitReplies of any limit, up to math.MaxInt, refuses a reply that
// declares more than it can count and lets a small one through: its
// counts stay within an int64 (a limit near math.MaxInt made the scan
// overflow: a map's count times the cost of an element turned negative
// and let a giant through, a bulk length plus its CRLF turned negative
// and the scan panicked, and math.MaxInt plus ReplySlack refused every
// reply).
func TestLimitRepliesOfAnyLimitCountsWithoutOverflow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		reply string
		want  error // nil: read whole
	}{
		{"a simple reply, the largest limit", math.MaxInt, "+OK\r\n", nil},
		{"a bulk string, the largest limit", math.MaxInt, "$5\r\nhello\r\n", nil},
		{"a bulk string of the largest length", math.MaxInt - redisstore.ReplySlack, "$9223372036854775806\r\nxy", redisstore.ErrReplyTooLarge},
		{"an array whose elements overflow", math.MaxInt - redisstore.ReplySlack, "*288230376151711744\r\n", redisstore.ErrReplyTooLarge},
		{"a map whose pairs overflow", math.MaxInt - redisstore.ReplySlack, "%4611686018427387903\r\n", redisstore.ErrReplyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
			dial := redisstore.LimitReplies(func(context.Context, string, string) (net.Conn, error) { return client, nil }, tc.limit)
			c, err := dial(t.Context(), "tcp", "redis:6379")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.WriteString(server, tc.reply) }()
			buf := make([]byte, len(tc.reply))
			n, err := io.ReadFull(c, buf)
			if tc.want == nil && (err != nil || string(buf) != tc.reply) {
				t.Fatalf("read %q, %v; want %q", buf[:n], err, tc.reply)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("read %q, %v; want %v", buf[:n], err, tc.want)
			}
		})
	}
}
