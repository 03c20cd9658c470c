// isr_test.go: the broker relays its leader replicas' ISR changes to the
// controller (on a MemStore): a follower that never fetches is proposed
// out of the ISR by its leader, and the change the controller commits
// shows in the metadata.

package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

func TestLeaderISRShrinkIsRelayedToTheController(t *testing.T) {
	s := clustertest.NewMemStore(t)
	clustertest.RegisterMem(t, s, 1, 17163)
	// Host 2 is registered but runs no broker: its followers never fetch.
	// Something listens on its port, so the controller's prober does not
	// take it for gone (and take it out of the ISR itself).
	clustertest.RegisterMem(t, s, 2, listenHost(t))
	h := startHost1(t, s, "127.0.0.1:17163", func(c *broker.Config) { c.ReplicaLagTimeMax = 300 * time.Millisecond })
	topic := clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 2})
	part := int32(-1)
	for _, p := range topic.Partitions {
		if p.Leader == 1 {
			part = p.Partition
		}
	}
	if part < 0 {
		t.Fatalf("no partition led by host 1: %v", topic.Partitions)
	}
	poll.Until(t, 10*time.Second, func() error {
		md, err := request[*messages.MetadataResponse](t, h.sys, h.brk, &messages.MetadataRequest{Topics: []string{"events"}})
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || int(part) >= len(md.Topics[0].Partitions) {
			return fmt.Errorf("metadata %v does not list partition %d of events yet", md.Topics, part)
		}
		pm := md.Topics[0].Partitions[part]
		if !slices.Equal(pm.Isr, []int32{1}) || pm.Leader != 1 {
			return fmt.Errorf("partition %d: leader %d, ISR %v; want host 1 alone in the ISR", part, pm.Leader, pm.Isr)
		}
		return nil
	})
}
