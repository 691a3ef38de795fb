package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Site is a corpus of one real site no one here wrote: its pages, where a
// Debian or npm package installs them, and whether the dictionary
// trainer's parameters were tuned on it (those that were not are held out
// of tuning entirely).
type Site struct {
	Name, ContentType string
	// Glob finds the pages.
	Glob string
	// Install says how to get the package when the pages are missing.
	Install string
	// Tuned is whether internal/train's parameters were chosen on it.
	Tuned bool
}

// Sites returns the sites cmd/trainer and cmd/learned measure: three
// Debian documentation packages of HTML and two npm packages of JSON,
// unpacked each into a directory of its own under npm (numbers/, dates/).
func Sites(npm string) []Site {
	return []Site{
		{"git-doc HTML", "text/html; charset=utf-8", "/usr/share/doc/git-doc/*.html", "apt-get install git-doc", true},
		{"CLDR numbers JSON", "application/json", filepath.Join(npm, "numbers/package/main/*/numbers.json"),
			"npm pack cldr-numbers-full@48.2.0, unpacked into " + filepath.Join(npm, "numbers"), true},
		{"Python library HTML", "text/html; charset=utf-8", "/usr/share/doc/python3-doc/html/library/*.html", "apt-get install python3-doc", false},
		{"SQLite HTML", "text/html; charset=utf-8", "/usr/share/doc/sqlite3/*.html", "apt-get install sqlite3-doc", false},
		{"CLDR dates JSON", "application/json", filepath.Join(npm, "dates/package/main/*/ca-gregorian.json"),
			"npm pack cldr-dates-full@48.2.0, unpacked into " + filepath.Join(npm, "dates"), false},
	}
}

// Load reads s's pages sorted by name and splits them alternately into a
// training half and a held-out half, each taking pages until it holds
// capBytes.
func (s Site) Load(capBytes int64) (train, held [][]byte, err error) {
	files, err := filepath.Glob(s.Glob)
	if err == nil && len(files) < 20 {
		err = fs.ErrNotExist
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the %s corpus is not at %s (%v): %s", s.Name, s.Glob, err, s.Install)
	}
	sort.Strings(files)
	var n [2]int64
	for i, f := range files {
		half := i % 2
		if n[half] >= capBytes {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		n[half] += int64(len(b))
		if half == 0 {
			train = append(train, b)
		} else {
			held = append(held, b)
		}
	}
	return train, held, nil
}
