// Package testtool holds what squeeze's tests use as independent
// references: the external programs (gzip, zstd, brotli, curl, chromium),
// found with Require, and one reference decoder per content coding, in Go
// (NewReader, Decode) and on the command line (DecodeCLI), the loopback
// servers of both HTTP versions the tests run handlers behind (StartServer,
// Protocols) and the requests they send them (Fetch, Do, OpenStream), a
// redis-server of a test's own (StartRedis) and a fake, hostile one
// (HostileRedis).
// It must not import the packages it serves to check.
//
// Outside CI a missing program skips the test that needs it. Under CI=true
// it fails the test instead, so a machine without the reference tools can
// never report a green run that checked nothing.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of the program name, or stops the test: with
// t.Fatalf when the environment variable CI is "true", with t.Skipf otherwise.
func Require(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true but was not found: %v (.ci/run installs it)", name, err)
	}
	t.Skipf("%s not installed: %v", name, err)
	return ""
}
