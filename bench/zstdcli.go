package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ZstdTrained is what `zstd --train` made.
type ZstdTrained struct {
	// Content is the dictionary's content, as zstd.InspectDictionary finds
	// it: what dcz and dcb use as a raw dictionary.
	Content []byte
	// Full is the length of the dictionary, entropy tables included.
	Full int
	// CPU is the process's user and system time; MaxRSS its peak resident
	// memory, as GNU time reports it (-1 without /usr/bin/time).
	CPU    time.Duration
	MaxRSS int64
}

// ZstdTrain runs `zstd --train` (the CLI's default trainer and parameter
// search) on docs, written each to a file of a temporary directory, for a
// dictionary of at most size bytes.
func ZstdTrain(docs [][]byte, size int) (ZstdTrained, error) {
	dir, err := os.MkdirTemp("", "squeeze-train-")
	if err != nil {
		return ZstdTrained{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := writeAll(dir, docs)
	if err != nil {
		return ZstdTrained{}, err
	}
	out, rss := filepath.Join(dir, "dict"), filepath.Join(dir, "rss")
	args := append([]string{"-q", "--train", "--maxdict=" + strconv.Itoa(size), "-o", out}, files...)
	// GNU time reports zstd's own peak memory: a child of the Go process
	// inherits its high-water mark through the exec.
	timed := false
	cmd := exec.Command("zstd", args...)
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		cmd, timed = exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rss, "zstd"}, args...)...), true
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return ZstdTrained{}, fmt.Errorf("zstd --train: %w: %s", err, stderr.String())
	}
	t := ZstdTrained{CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), MaxRSS: -1}
	if b, err := os.ReadFile(rss); timed && err == nil {
		if kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			t.MaxRSS = kb << 10
		}
	}
	full, err := os.ReadFile(out)
	if err != nil {
		return ZstdTrained{}, err
	}
	info, err := zstd.InspectDictionary(full)
	if err != nil {
		return ZstdTrained{}, err
	}
	t.Content, t.Full = info.Content(), len(full)
	return t, nil
}

// ZstdCLI returns the bytes of docs encoded by the zstd CLI at level, one
// frame per document, against raw as a raw dictionary (-D) unless it is
// nil.
func ZstdCLI(level int, raw []byte, docs [][]byte) (int64, error) {
	dir, err := os.MkdirTemp("", "squeeze-cli-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	args := []string{"-q", "-" + strconv.Itoa(level), "-c"}
	if raw != nil {
		f := filepath.Join(dir, "dict")
		if err := os.WriteFile(f, raw, 0o600); err != nil {
			return 0, err
		}
		args = append(args, "-D", f)
	}
	files, err := writeAll(dir, docs)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command("zstd", append(args, files...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("zstd -%d: %w: %s", level, err, stderr.String())
	}
	return int64(stdout.Len()), nil
}

// writeAll writes each of docs to a file of its own in dir.
func writeAll(dir string, docs [][]byte) ([]string, error) {
	var files []string
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("d%05d", i))
		if err := os.WriteFile(f, d, 0o600); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
