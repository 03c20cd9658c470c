// logdirs.go: DescribeLogDirs — how many bytes of log each partition
// replica running here holds on disk (Kafka's DescribeLogDirs, one log dir
// per host), for the web console's topic sizes.
//
// The broker lists the replicas it runs (on its goroutine) and a goroutine
// sums their directories' segment files (*.log) through Config.LogFS,
// touching no broker state. At most maxLogDirWalks walks run at once in a
// process; a request beyond that is answered at once with error_message
// set, so a flood of requests cannot pile up directory scans. A file that
// disappears during the walk (a segment deleted by retention or
// compaction) is skipped; a directory that cannot be listed gives its
// partition size_bytes -1 and the error.

package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/messages"
)

const (
	// maxLogDirWalks bounds the directory walks running at once.
	maxLogDirWalks = 2
	// maxLogDirTopics bounds the topics a DescribeLogDirsRequest names.
	maxLogDirTopics = 1000
	// segmentSuffix names the segment files counted (storage's ".log").
	segmentSuffix = ".log"
)

// logDirWalks holds a token per running walk.
var logDirWalks = make(chan struct{}, maxLogDirWalks)

// logDir is one replica's directory to measure.
type logDir struct {
	key tp
	dir string
}

// describeLogDirs answers req with the sizes of the replicas running here
// (those being stopped excluded).
func (b *Broker) describeLogDirs(ctx actor.Context, req *messages.DescribeLogDirsRequest) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	resp := &messages.DescribeLogDirsResponse{CorrelationId: req.CorrelationId, HostId: b.cfg.HostID}
	if len(req.Topics) > maxLogDirTopics {
		resp.ErrorMessage = fmt.Sprintf("%d topics named, at most %d allowed", len(req.Topics), maxLogDirTopics)
		ctx.Respond(resp)
		return
	}
	want := map[string]bool{}
	for _, t := range req.Topics {
		want[t] = true
	}
	var dirs []logDir
	for key := range b.replicas {
		if b.stopping[key] || (len(want) > 0 && !want[key.topic]) {
			continue
		}
		dir, err := b.partitionDir(key)
		if err != nil {
			continue // never spawned: confinedDir refuses it before a spawn too
		}
		dirs = append(dirs, logDir{key: key, dir: dir})
	}
	select {
	case logDirWalks <- struct{}{}:
	default:
		resp.ErrorMessage = "busy: other log dir walks are running, try again"
		ctx.Respond(resp)
		return
	}
	root, fsys := ctx.ActorSystem().Root, b.cfg.LogFS
	go func() {
		defer func() { <-logDirWalks }()
		resp.Partitions = measureLogDirs(dirs, func(dir string) ([]fs.DirEntry, error) { return fsys.ReadDir(dir) })
		root.Send(sender, resp)
	}()
}

// measureLogDirs sums each directory's segment files, sorted by topic and
// partition.
func measureLogDirs(dirs []logDir, readDir func(string) ([]fs.DirEntry, error)) []*messages.LogDirPartition {
	out := make([]*messages.LogDirPartition, 0, len(dirs))
	for _, d := range dirs {
		p := &messages.LogDirPartition{Topic: d.key.topic, Partition: d.key.partition}
		size, err := segmentBytes(d.dir, readDir)
		if err != nil {
			p.SizeBytes, p.ErrorMessage = -1, err.Error()
		} else {
			p.SizeBytes = size
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *messages.LogDirPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// segmentBytes sums the sizes of dir's segment files.
func segmentBytes(dir string, readDir func(string) ([]fs.DirEntry, error)) (int64, error) {
	entries, err := readDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", filepath.Base(dir), err)
	}
	var n int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), segmentSuffix) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return 0, fmt.Errorf("stat %s/%s: %w", filepath.Base(dir), e.Name(), err)
		}
		n += info.Size()
	}
	return n, nil
}
