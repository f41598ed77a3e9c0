package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Timing of directory watches.
const (
	// debounce lets a burst of file events (an editor's rename, the kubelet's ..data swap) settle
	// into one snapshot.
	debounce = 100 * time.Millisecond
	// rescan is the backstop: a snapshot this often even without events.
	rescan = time.Minute
)

// WatchPaths watches policy files and directories and sends a snapshot of their policy files at
// start and after every change, until ctx is done. It watches each directory itself (for a file,
// the directory holding it), which sees files appear, change and disappear, editors that write
// through a rename, and the kubelet's update of a mounted ConfigMap (a new timestamped directory,
// then the ..data symlink swapped atomically).
func WatchPaths(ctx context.Context, paths []string, out chan<- Snapshot) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	for _, dir := range watchedDirs(paths) {
		if err := w.Add(dir); err != nil {
			return err
		}
	}
	logger := klog.FromContext(ctx).WithValues("paths", paths)
	send := func() {
		units, err := readUnits(paths)
		if err != nil {
			// a path missing for a moment must not stop every policy: wait for the next change
			logger.Error(err, "Reading policy paths; keeping the policies loaded before")
			return
		}
		snap := Snapshot{Source: "dir", Units: units}
		select {
		case out <- snap:
		case <-ctx.Done():
		}
	}
	send()
	var pending <-chan time.Time
	ticker := time.NewTicker(rescan)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			logger.V(4).Info("Policy path changed", "event", ev.String())
			pending = time.After(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			logger.Error(err, "Watching policy paths; the periodic rescan still applies")
		case <-pending:
			pending = nil
			send()
		case <-ticker.C:
			send()
		}
	}
}

// watchedDirs are the directories to watch for paths: each directory, recursively, and the
// directory of each file.
func watchedDirs(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			add(filepath.Dir(p))
			continue
		}
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if path != p && len(d.Name()) > 0 && d.Name()[0] == '.' {
					return filepath.SkipDir
				}
				add(path)
			}
			return nil
		})
	}
	return out
}

// readUnits reads the policy files of paths. A file that disappears between listing and reading
// is left out (it was removed); any other error fails the whole read, so that a transient problem
// is not taken for removed policies.
func readUnits(paths []string) ([]Unit, error) {
	files, err := Files(paths)
	if err != nil {
		return nil, err
	}
	units := make([]Unit, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		units = append(units, Unit{Name: f, Data: data})
	}
	return units, nil
}
