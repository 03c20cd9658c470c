// dirs_test.go: the broker's partition directories (on a MemStore) go
// through the logs' file system (Config.LogFS): a fault there is reported
// in Health and retried until the directory can be prepared, and an
// operation that hangs there does not hold up the broker's answers (it
// runs on the directory worker, not the actor).

package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// dirFaultFS fails (fail set) or holds up (until release is closed) the
// creation of the directories named dir.
type dirFaultFS struct {
	storage.OSFS
	dir     string
	fail    *atomic.Bool
	release chan struct{}
}

func (f dirFaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if filepath.Base(dir) == f.dir {
		if f.release != nil {
			<-f.release
		}
		if f.fail != nil && f.fail.Load() {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.EIO}
		}
	}
	return f.OSFS.MkdirAll(dir, perm)
}

func TestDirectoryFaultIsReportedAndRetried(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17161)
	health, fail := broker.NewHealth(), &atomic.Bool{}
	fail.Store(true)
	h := startHost1(t, s, "127.0.0.1:17161", func(c *broker.Config) {
		c.Health, c.LogFS = health, dirFaultFS{dir: "events-0", fail: fail}
		c.ReplicaRestartBackoff, c.ReplicaRestartBackoffMax = 50*time.Millisecond, 200*time.Millisecond
	})
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 1})
	poll.Until(t, 10*time.Second, func() error {
		if !running(h.sys, "events", 1) {
			return errors.New("the healthy partition's replica is not running")
		}
		got := strings.Join(problems(health), "\n")
		if want := "partition events-0: replica not running: cannot prepare partition directory"; !strings.Contains(got, want) || !strings.Contains(got, "input/output error") {
			return fmt.Errorf("health reports %q, want a line %q with the file system's error", got, want)
		}
		return nil
	})
	if running(h.sys, "events", 0) {
		t.Fatal("a replica whose directory could not be prepared runs")
	}

	fail.Store(false)
	poll.Until(t, 10*time.Second, func() error {
		if err := produceOne(t, h.sys, "events", 0); err != nil {
			return fmt.Errorf("produce to events-0: %w", err)
		}
		if p := problems(health); len(p) != 0 {
			return fmt.Errorf("health still reports %v", p)
		}
		return nil
	})
}

func TestHungDirectoryOperationHoldsNothingUp(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17162)
	release := make(chan struct{})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	h := startHost1(t, s, "127.0.0.1:17162", func(c *broker.Config) {
		c.LogFS = dirFaultFS{dir: "slow-0", release: release}
	})
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "slow", Partitions: 1, ReplicationFactor: 1})
	// The broker answers while slow-0's directory is being created ...
	poll.Until(t, 10*time.Second, func() error {
		md, err := request[*messages.MetadataResponse](t, h.sys, h.brk, &messages.MetadataRequest{Topics: []string{"slow"}})
		if err != nil {
			return err
		}
		if md.Topics[0].ErrorCode != 0 {
			return md.Topics[0].ErrorCode.Err("metadata of slow")
		}
		return nil
	})
	poll.Never(t, 200*time.Millisecond, func() error {
		if running(h.sys, "slow", 0) {
			return errors.New("slow-0's replica runs before its directory was created")
		}
		return nil
	})
	// ... and the replica runs once it is there.
	close(release)
	released = true
	poll.Until(t, 10*time.Second, func() error { return produceOne(t, h.sys, "slow", 0) })
}
