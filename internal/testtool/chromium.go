//go:build unix

package testtool

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// DumpDOM loads url in the headless Chromium at path (found with Require),
// with its profile in userDataDir, and returns the DOM once the page's
// scripts have run: after 20 s of virtual time, which does not pass while
// a request is in flight, so a page may wait on a server as long as ctx
// allows. No browser process outlives the call.
func DumpDOM(ctx context.Context, path, userDataDir, url string) (string, error) {
	cmd := exec.CommandContext(ctx, path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", // containers often give /dev/shm only 64 MB
		"--user-data-dir="+userDataDir, "--virtual-time-budget=20000", "--dump-dom", url)
	// Chromium starts helper processes; a process group lets one signal
	// end them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever of the group is still alive; ESRCH when none is.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		return "", fmt.Errorf("chromium: %w\nstderr:\n%s", err, stderr.Bytes())
	}
	return stdout.String(), nil
}
