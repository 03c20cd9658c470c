// pacing_test.go: a topic of many partitions is started a few replicas at
// a time (Config.MaxOpeningReplicas), not all at once, and every replica
// still starts.

package broker_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// slowOpenFS makes creating a segment file take a while, and records how
// many were being created at once.
type slowOpenFS struct {
	storage.OSFS
	delay time.Duration
	mu    sync.Mutex
	now   int
	peak  int
	total int
}

func (f *slowOpenFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if flag&os.O_CREATE == 0 || !strings.HasSuffix(name, ".log") {
		return f.OSFS.OpenFile(name, flag, perm)
	}
	f.mu.Lock()
	f.now++
	f.total++
	f.peak = max(f.peak, f.now)
	f.mu.Unlock()
	time.Sleep(f.delay)
	file, err := f.OSFS.OpenFile(name, flag, perm)
	f.mu.Lock()
	f.now--
	f.mu.Unlock()
	return file, err
}

func (f *slowOpenFS) stats() (peak, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak, f.total
}

func TestReplicasOfALargeTopicStartAFewAtATime(t *testing.T) {
	const partitions, maxOpening = 48, 4
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17156)
	fsys := &slowOpenFS{delay: 20 * time.Millisecond}
	health := broker.NewHealth()
	h := startHost1(t, s, "127.0.0.1:17156", func(c *broker.Config) {
		c.LogFS, c.MaxOpeningReplicas, c.Health = fsys, maxOpening, health
	})
	clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "wide", Partitions: partitions, ReplicationFactor: 1})
	clustertest.WaitFor(t, 20*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			if !running(h.sys, "wide", p) {
				return fmt.Errorf("replica of wide-%d not running", p)
			}
		}
		if _, total := fsys.stats(); total < partitions {
			return fmt.Errorf("%d of %d logs created", total, partitions)
		}
		return nil
	})
	// Every log opened (the first produce would fail on one that had not).
	for p := int32(0); p < partitions; p++ {
		clustertest.WaitFor(t, 10*time.Second, func() error { return produceOne(t, h.sys, "wide", p) })
	}
	if p := problems(health); len(p) != 0 {
		t.Fatalf("health reports %v", p)
	}
	peak, total := fsys.stats()
	t.Logf("%d logs created, at most %d at once", total, peak)
	if peak > maxOpening {
		t.Fatalf("%d logs were being created at once; want at most MaxOpeningReplicas = %d", peak, maxOpening)
	}
	if peak < 2 {
		t.Fatalf("at most %d log was created at once: the starts were not concurrent at all", peak)
	}
}
