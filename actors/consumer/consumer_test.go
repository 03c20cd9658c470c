// consumer_test.go: actor tests of the consumer's controls, in a group
// (helpers in group_test.go, fakes in fake_test.go): manual commits of
// positions and of given offsets, Pause and Resume, Seek, and partitions
// read outside group management that commit to the group's offsets.

package consumer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/internal/poll"
)

func TestManualCommit(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 2)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 5)
	a := startMember(t, fc, crd, "a", func(c *Config) { c.DisableAutoCommit = true })
	waitHandled(t, values("t", 2, 0, 5), a)
	poll.Never(t, 300*time.Millisecond, func() error {
		if got := crd.committed(testGroup, TopicPartition{"t", 0}); got != -1 {
			return fmt.Errorf("committed %d without auto-commit", got)
		}
		return nil
	})
	offs, err := CommitSync(fc.sys.Root, a.pid, nil, 5*time.Second)
	if err != nil || len(offs) != 2 || offs[0].Offset != 5 || offs[1].Offset != 5 {
		t.Fatalf("commit of the positions: %+v, %v", offs, err)
	}
	offs, err = CommitSync(fc.sys.Root, a.pid, []client.CommitOffset{{Topic: "t", Partition: 1, Offset: 2, LeaderEpoch: -1}}, 5*time.Second)
	if err != nil || len(offs) != 1 || crd.committed(testGroup, TopicPartition{"t", 1}) != 2 {
		t.Fatalf("commit of given offsets: %+v, %v", offs, err)
	}
	// Nothing moved since: nothing to commit.
	if offs, err := CommitSync(fc.sys.Root, a.pid, nil, 5*time.Second); err != nil || len(offs) != 1 || offs[0].Partition != 1 {
		t.Fatalf("commit again: %+v, %v (want t-1 only: its commit was moved back)", offs, err)
	}
	a.close(t) // no auto-commit: close commits nothing
	if got := crd.committed(testGroup, TopicPartition{"t", 0}); got != 5 {
		t.Fatalf("t-0 committed %d", got)
	}
}

func TestPauseResume(t *testing.T) {
	fc, _, a := oneMember(t, 2, nil, nil)
	// No wait needed: the Pause is in a's mailbox before any fetch answer
	// with the records produced next.
	fc.sys.Root.Send(a.pid, &Pause{Partitions: []TopicPartition{{"t", 0}}})
	fc.produceAll("t", 0, 5)
	onlyT1 := map[string]bool{}
	for v := range values("t", 2, 0, 5) {
		if strings.HasPrefix(v, "t/1/") {
			onlyT1[v] = true
		}
	}
	waitHandled(t, onlyT1, a)
	poll.Never(t, 300*time.Millisecond, func() error { // several fetch rounds
		a.mu.Lock()
		defer a.mu.Unlock()
		for v := range a.handled {
			if strings.HasPrefix(v, "t/0/") {
				return fmt.Errorf("record %s of the paused partition handled", v)
			}
		}
		return nil
	})
	fc.sys.Root.Send(a.pid, &Resume{Partitions: []TopicPartition{{"t", 0}}})
	want := values("t", 2, 0, 5)
	waitHandled(t, want, a)
	checkExactlyOnce(t, want, a)
	a.close(t)
}

func TestSeek(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 1)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 5)
	a := startMember(t, fc, crd, "a", nil)
	waitHandled(t, values("t", 1, 0, 5), a)
	fc.sys.Root.Send(a.pid, &Seek{Partition: TopicPartition{"t", 0}, Offset: 3})
	poll.Until(t, 5*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.handled["t/0/3"] != 2 || a.handled["t/0/4"] != 2 || a.handled["t/0/2"] != 1 {
			return fmt.Errorf("handled %v, want offsets 3 and 4 again", a.handled)
		}
		return nil
	})
	a.close(t)
}

func TestManualAssignmentWithGroupCommits(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 2)
	crd := fc.startCoordinator(nil)
	fc.produceAll("t", 0, 6)
	crd.setCommitted(testGroup, TopicPartition{"t", 1}, 4)
	a := startMember(t, fc, crd, "a", func(c *Config) { c.Topics, c.Topic, c.Partitions = nil, "t", []int32{1} })
	waitHandled(t, map[string]bool{"t/1/4": true, "t/1/5": true}, a)
	a.close(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.handled) != 2 {
		t.Fatalf("handled %v, want t-1 from its committed offset 4", a.handled)
	}
	if got := crd.committed(testGroup, TopicPartition{"t", 1}); got != 6 {
		t.Fatalf("committed %d, want 6", got)
	}
}
