package testtool

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is a redis-server of a test's own, on a loopback port, with
// persistence off: what a test writes is gone when it stops.
type Redis struct {
	t    testing.TB
	path string
	port int
	cmd  *exec.Cmd
	logs *bytes.Buffer
	// exited is closed when cmd has exited.
	exited chan struct{}
}

// StartRedis starts a redis-server (found with Require, so that under
// CI=true a missing one fails the test) on a free loopback port, waits until
// it answers PING and stops it when the test ends. extra are more
// command-line arguments, such as "--maxmemory", "1mb".
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	r := &Redis{t: t, path: Require(t, "redis-server")}
	var err error
	for range 5 { // another process may take the free port first
		r.port, err = freePort()
		if err != nil {
			t.Fatalf("StartRedis: %v", err)
		}
		if err = r.start(extra); err == nil {
			t.Cleanup(r.Stop)
			return r
		}
	}
	t.Fatalf("StartRedis: %v", err)
	return nil
}

// Addr returns the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Stop kills the server at once, as a crash would, and waits for it to
// exit; stopping a stopped server does nothing.
func (r *Redis) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
	r.cmd = nil
}

// Restart starts the stopped server again on the same port, empty, and
// waits until it answers.
func (r *Redis) Restart(extra ...string) {
	r.t.Helper()
	r.Stop()
	var err error
	for range 50 { // the port may take a moment to be free again
		if err = r.start(extra); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("Redis.Restart: %v", err)
}

// Do sends one command over a connection of its own and returns the first
// line of the reply, such as "+OK" or ":1", for the tests' own commands
// (DEBUG SLEEP, CLIENT PAUSE, FLUSHALL) without a client library.
func (r *Redis) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func (r *Redis) start(extra []string) error {
	args := append([]string{
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--enable-debug-command", "local",
		"--daemonize", "no",
	}, extra...)
	r.logs = new(bytes.Buffer)
	cmd := exec.Command(r.path, args...)
	cmd.Stdout = r.logs
	cmd.Stderr = r.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited: %s", r.port, r.logs)
		default:
		}
		if reply, err := r.Do("PING"); err == nil && reply == "+PONG" {
			r.cmd, r.exited = cmd, exited
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on port %d did not answer PING within 10s: %s", r.port, r.logs)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
