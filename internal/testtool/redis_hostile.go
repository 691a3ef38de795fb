package testtool

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// HostileRedis starts a server on loopback that speaks just enough RESP
// for go-redis to connect (it refuses HELLO and every other command with
// an error, which go-redis tolerates) and answers each EVALSHA or EVAL, a
// redisstore Store's read, with reply and nothing more: a header that
// declares what it never sends stands for a hostile or broken store. With
// split, it writes the reply a byte at a time, a millisecond apart. reads,
// when not nil, counts the reads answered. It returns the server's
// host:port; the server and its connections end with the test.
func HostileRedis(t testing.TB, reply string, split bool, reads *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				go func() { <-t.Context().Done(); _ = c.Close() }()
				rd := bufio.NewReader(c)
				for {
					args, err := readCommand(rd)
					if err != nil {
						return
					}
					answer := "-ERR unknown command\r\n"
					if cmd := strings.ToUpper(args[0]); cmd == "EVALSHA" || cmd == "EVAL" {
						if reads != nil {
							reads.Add(1)
						}
						answer = reply
					}
					if !split || answer != reply {
						if _, err := io.WriteString(c, answer); err != nil {
							return
						}
						continue
					}
					for i := range len(answer) {
						if _, err := io.WriteString(c, answer[i:i+1]); err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// readCommand reads one command as a client sends it: an array of 1 to 64
// bulk strings of at most 1 MiB each.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 || n > 64 {
		return nil, fmt.Errorf("command of %q arguments", line)
	}
	args := make([]string, n)
	for i := range args {
		line, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("argument header %q", line)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}
