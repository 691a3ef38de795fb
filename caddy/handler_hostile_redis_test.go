package squeezecaddy_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
)

// giantRedis is a Redis that answers the store's reads (its Lua scripts)
// by declaring a reply of declared bytes, and then sends none of them; it
// refuses every other command, as a Redis without HELLO does. reads counts
// the reads.
func giantRedis(t *testing.T, declared int64, reads *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				go func() { <-t.Context().Done(); _ = c.Close() }()
				rd := bufio.NewReader(c)
				for {
					cmd, err := commandName(rd)
					if err != nil {
						return
					}
					answer := "-ERR unknown command\r\n"
					if cmd == "EVALSHA" || cmd == "EVAL" {
						reads.Add(1)
						answer = "$" + strconv.FormatInt(declared, 10) + "\r\n"
					}
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// commandName reads one command, a RESP array of bulk strings, and
// returns its first element in upper case.
func commandName(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*") {
		return "", fmt.Errorf("not a command: %q (%v)", line, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return "", err
	}
	var name string
	for i := range n {
		line, err := rd.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "$") {
			return "", fmt.Errorf("not a bulk string: %q (%v)", line, err)
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return "", err
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(rd, arg); err != nil {
			return "", err
		}
		if i == 0 {
			name = strings.ToUpper(string(arg[:size]))
		}
	}
	return name, nil
}

// A store redis whose server declares a reply of 256 MiB costs a request
// a fallback, not 256 MiB: the module's client reads through
// redisstore.LimitReplies, which fails the reply before go-redis allocates
// what it declares. The response is the route's body.
func TestHandlerStoreRedisRefusesDeclaredGiantReplies(t *testing.T) {
	const declared = 256 << 20
	var reads atomic.Int64
	h := provisioned(t, &squeezecaddy.Handler{
		Dictionaries: []string{"/js/*"},
		Redis:        &squeezecaddy.Redis{Address: giantRedis(t, declared, &reads)},
	})
	body := strings.Repeat("function squeeze() { return 1; }\n", 200)
	srv := httptest.NewServer(route(h, func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/javascript")
		_, err := io.WriteString(w, body)
		return err
	}))
	defer srv.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 4 {
		// Each names a dictionary no replica has seen: squeeze asks the
		// store for it.
		hash := sha256.Sum256([]byte{byte(i)})
		req, _ := http.NewRequest("GET", srv.URL+"/js/app.js", nil)
		req.Header.Set("Accept-Encoding", "dcz, gzip")
		req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(hash[:])+":")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("request %d: %d %q, want 200 in gzip", i, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
	}
	runtime.ReadMemStats(&after)
	if reads.Load() == 0 {
		t.Fatal("no request read from the store")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("4 requests against a Redis declaring %d MiB replies allocated %d MiB, want under 32", declared>>20, got>>20)
	}
}
