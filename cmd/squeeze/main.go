// Command squeeze precompresses static files for [squeeze.Middleware.FileServer].
//
// Usage:
//
//	squeeze precompress [-codings br,zstd,gzip] [-min 1024] DIR...
//
// precompress walks each DIR and writes, next to every file whose type the
// middleware compresses by default (HTML, CSS, JavaScript, JSON, SVG, ...)
// and which is at least -min bytes, a sibling per coding at the best level:
// name.br (brotli quality 11), name.zst (zstd level 19) and name.gz (gzip
// level 9), each only where it is smaller than the file. A sibling newer
// than its file that decodes to it is up to date and left alone; a stale
// one that would no longer be smaller is removed. Directories and files
// whose names start with "." are skipped. A file is judged by its name and
// first 512 bytes before anything else is read, and is streamed through the
// hash and the encoders into a temporary file, so that one file costs the
// encoders' memory whatever its size. It prints what it did, and the
// bytes saved and the time taken at the end; on a terminal it shows its
// progress on one line instead.
//
// It is made for go generate, so that an embed.FS ships the siblings:
//
//	//go:generate go run github.com/squeezehttp/squeeze/cmd/squeeze precompress static
//
// Exit status: 0 when every file was handled, 1 when some could not be
// read or written (each is reported), 2 for a usage error.
package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stdout)))
}

// say writes to w. Output that cannot be written (a closed pipe) is no
// reason to stop writing siblings: the exit status reports the work.
func say(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// extensions are the siblings' file extensions, by coding.
var extensions = map[string]string{squeeze.Brotli: ".br", squeeze.Zstd: ".zst", squeeze.Gzip: ".gz"}

const usage = `usage: squeeze precompress [-codings br,zstd,gzip] [-min bytes] DIR...

precompress writes .br, .zst and .gz siblings at the best levels next to
every compressible file in each DIR where they are smaller.
`

// run is the command with its arguments, output and whether stdout is a
// terminal; it returns the exit status.
func run(args []string, stdout, stderr io.Writer, tty bool) int {
	if len(args) == 0 || args[0] != "precompress" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "help") {
			say(stdout, "%s", usage)
			return exitOK
		}
		say(stderr, "%s", usage)
		if len(args) > 0 {
			say(stderr, "squeeze: unknown command %q\n", args[0])
		}
		return exitUsage
	}
	fl := flag.NewFlagSet("squeeze precompress", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { say(stderr, "%s", usage); fl.PrintDefaults() }
	codingList := fl.String("codings", "br,zstd,gzip", "the `codings` to write siblings in, comma-separated")
	minSize := fl.Int64("min", 1024, "the smallest file, in `bytes`, to precompress")
	if err := fl.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	var codings []string
	for _, c := range strings.Split(*codingList, ",") {
		c = strings.TrimSpace(c)
		canon, ok := writers.Canonical(c)
		if _, has := extensions[canon]; !ok || !has {
			say(stderr, "squeeze precompress: -codings: %q is not one of br, zstd, gzip\n", c)
			return exitUsage
		}
		if !slices.Contains(codings, canon) {
			codings = append(codings, canon)
		}
	}
	if fl.NArg() == 0 {
		say(stderr, "squeeze precompress: no DIR given\n")
		fl.Usage()
		return exitUsage
	}
	p := &precompressor{codings: codings, minSize: *minSize, out: stdout, errs: stderr, tty: tty, start: time.Now()}
	for _, dir := range fl.Args() {
		st, err := os.Stat(dir)
		if err != nil {
			say(stderr, "squeeze precompress: %v\n", err)
			return exitFail
		}
		if !st.IsDir() {
			say(stderr, "squeeze precompress: %s is not a directory\n", dir)
			return exitUsage
		}
	}
	return p.run(fl.Args())
}

// precompressor is one run of precompress.
type precompressor struct {
	codings []string
	minSize int64
	out     io.Writer
	errs    io.Writer
	tty     bool
	start   time.Time

	mu      sync.Mutex
	done    int
	total   int
	failed  int
	stats   map[string]*codingStats
	skipped int // siblings up to date
}

// codingStats sums what one coding did.
type codingStats struct {
	files       int   // siblings written
	plain, wire int64 // bytes of the files and of their siblings
	elapsed     time.Duration
	upToDate    int
	notSmaller  int
}

func (p *precompressor) run(dirs []string) int {
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(name string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			base := e.Name()
			if e.IsDir() {
				if name != dir && strings.HasPrefix(base, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() || strings.HasPrefix(base, ".") || isSibling(base) {
				return nil
			}
			files = append(files, name)
			return nil
		})
		if err != nil {
			say(p.errs, "squeeze precompress: %v\n", err)
			return exitFail
		}
	}
	p.total = len(files)
	p.stats = map[string]*codingStats{}
	for _, c := range p.codings {
		p.stats[c] = &codingStats{}
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for name := range work {
				p.file(name)
			}
		})
	}
	for _, name := range files {
		work <- name
	}
	close(work)
	wg.Wait()
	p.summary()
	if p.failed > 0 {
		return exitFail
	}
	return exitOK
}

// isSibling reports whether a file name is that of a sibling.
func isSibling(name string) bool {
	for _, ext := range extensions {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// eligible reports whether the file name starting with head is of a type
// the middleware compresses by default.
func eligible(name string, head []byte) bool {
	ct := mime.TypeByExtension(filepath.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(head)
	}
	return defaults.Compresses(ct)
}

var defaults = squeeze.MustNew()

// file precompresses one file. It decides from the file's name and first
// 512 bytes whether to, and streams the file through the hash and each
// encoder rather than reading it whole: what one file costs in memory is
// the encoders' state, whatever its size.
func (p *precompressor) file(name string) {
	var lines []string
	defer func() { p.progress(name, lines) }()
	f, err := os.Open(name)
	if err != nil {
		p.fail(err)
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		p.fail(err)
		return
	}
	if st.Size() < p.minSize {
		return
	}
	var head [512]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		p.fail(err)
		return
	}
	if !eligible(name, head[:n]) {
		return
	}
	h := sha256.New()
	h.Write(head[:n])
	rest, err := io.Copy(h, f)
	if err != nil {
		p.fail(fmt.Errorf("%s: %w", name, err))
		return
	}
	var sum [32]byte
	h.Sum(sum[:0])
	size := int64(n) + rest
	for _, coding := range p.codings {
		line, err := p.sibling(name, f, st, size, sum, coding)
		if err != nil {
			p.fail(err)
			continue
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
}

// sibling writes, keeps or removes the sibling of name, open as f, of size
// bytes hashing to sum, for coding, and returns a line saying what it did,
// or "" when nothing changed.
func (p *precompressor) sibling(name string, f *os.File, st fs.FileInfo, size int64, sum [32]byte, coding string) (string, error) {
	cs := p.stats[coding]
	sib := name + extensions[coding]
	if sst, err := os.Stat(sib); err == nil && sst.ModTime().After(st.ModTime()) && decodesTo(sib, coding, sum, size) {
		p.mu.Lock()
		cs.upToDate++
		p.skipped++
		p.mu.Unlock()
		return "", nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	t0 := time.Now()
	tmp, wire, err := encodeToTemp(coding, f, sib, size)
	elapsed := time.Since(t0)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", name, coding, err)
	}
	if tmp == "" {
		p.mu.Lock()
		cs.notSmaller++
		p.mu.Unlock()
		if err := os.Remove(sib); err == nil {
			return fmt.Sprintf("%s: removed, as %s is no longer smaller", sib, coding), nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", nil
	}
	if err := os.Rename(tmp, sib); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	p.mu.Lock()
	cs.files++
	cs.plain += size
	cs.wire += wire
	cs.elapsed += elapsed
	p.mu.Unlock()
	return fmt.Sprintf("%s: %d -> %d bytes (%.1f%%) in %v", sib, size, wire, 100*float64(wire)/float64(size), elapsed.Round(time.Millisecond)), nil
}

// encodeToTemp encodes src, of size bytes, with coding at squeeze's best
// level into a temporary file next to sib, and returns its name and
// length, or "" when the encoding would not be smaller than size: then it
// stops writing as soon as it is not, and removes the temporary file. The
// caller renames the file over sib, so that no reader sees half a sibling.
func encodeToTemp(coding string, src io.Reader, sib string, size int64) (name string, n int64, err error) {
	enc, err := writers.NewEncoder(coding, squeeze.BestLevel(coding))
	if err != nil {
		return "", 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(sib), "."+filepath.Base(sib)+".*")
	if err != nil {
		return "", 0, err
	}
	defer func() {
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil || name == "" {
			_ = os.Remove(tmp.Name())
			name = ""
		}
	}()
	out := &smallerWriter{w: tmp, max: size - 1}
	enc.Reset(out)
	_, err = io.Copy(enc, src)
	if err == nil {
		err = enc.Close()
	}
	if errors.Is(err, errNotSmaller) {
		return "", out.n, nil
	}
	if err != nil {
		return "", 0, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", 0, err
	}
	return tmp.Name(), out.n, nil
}

// errNotSmaller stops an encoding that is no longer smaller than its file.
var errNotSmaller = errors.New("not smaller")

// smallerWriter writes to w up to max bytes, and fails beyond.
type smallerWriter struct {
	w      io.Writer
	n, max int64
}

func (s *smallerWriter) Write(p []byte) (int, error) {
	if s.n+int64(len(p)) > s.max {
		return 0, errNotSmaller
	}
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

// decodesTo reports whether the sibling decodes to size bytes hashing to
// sum.
func decodesTo(sib, coding string, sum [32]byte, size int64) bool {
	f, err := os.Open(sib)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	dec, err := writers.NewDecoder(coding)
	if err != nil || dec.Reset(f) != nil {
		return false
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(dec, size+1))
	return err == nil && n == size && [32]byte(h.Sum(nil)) == sum
}

func (p *precompressor) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed++
	if p.tty {
		say(p.out, "\r\033[K")
	}
	say(p.errs, "squeeze precompress: %v\n", err)
}

// progress reports a file done: its lines, and on a terminal a status line
// rewritten in place.
func (p *precompressor) progress(name string, lines []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.tty {
		say(p.out, "\r\033[K[%d/%d] %s", p.done, p.total, name)
		return
	}
	for _, l := range lines {
		say(p.out, "%s\n", l)
	}
}

// summary prints the totals per coding, the bytes saved and the time.
func (p *precompressor) summary() {
	if p.tty {
		say(p.out, "\r\033[K")
	}
	var saved int64
	for _, c := range p.codings {
		cs := p.stats[c]
		if cs.files == 0 {
			say(p.out, "%-4s no sibling written (%d up to date, %d not smaller)\n", c, cs.upToDate, cs.notSmaller)
			continue
		}
		saved += cs.plain - cs.wire
		say(p.out, "%-4s %d written: %d -> %d bytes (%.1f%%) in %v; %d up to date, %d not smaller\n",
			c, cs.files, cs.plain, cs.wire, 100*float64(cs.wire)/float64(cs.plain), cs.elapsed.Round(time.Millisecond), cs.upToDate, cs.notSmaller)
	}
	say(p.out, "%d files, %d bytes saved, %d siblings up to date, %d errors, in %v\n",
		p.total, saved, p.skipped, p.failed, time.Since(p.start).Round(time.Millisecond))
}
