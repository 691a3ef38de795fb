//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package squeeze

import (
	"io/fs"
	"syscall"
)

// idOf returns the device, inode and change time of the file st describes
// when it comes from the operating system's file system (os.DirFS, an
// os.Root, fs.Sub of either), else the zero fileID.
func idOf(st fs.FileInfo) fileID {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok || s == nil {
		return fileID{}
	}
	return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino), ctime: ctimeOf(s)}
}
