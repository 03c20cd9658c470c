// kafkametadata_test.go: KafkaMetadataRequest — the broker's cache as the
// host's Kafka listener reads it: synced once the store was read, every
// live host with its Kafka address, the topics asked for with their ids,
// copies the receiver may change.

package broker_test

import (
	"fmt"
	"testing"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

func TestKafkaMetadataFromTheCache(t *testing.T) {
	m := clustertest.NewMemStore(t)
	port := listenHost(t)
	if _, err := m.RegisterHost(&messages.HostInfo{HostId: 1, AdvertisedAddress: clustertest.HostAddress(port), KafkaAddress: "127.0.0.1:9092"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.ExpireHost(1) })
	h := startHost1(t, m, clustertest.HostAddress(port))
	created := clustertest.CreateTopic(t, h.sys, h.brk, &messages.CreateTopicRequest{Name: "events", Partitions: 2, ReplicationFactor: 1})

	var md *broker.KafkaMetadata
	clustertest.WaitFor(t, timeout, func() error {
		var err error
		md, err = request[*broker.KafkaMetadata](t, h.sys, h.brk, &broker.KafkaMetadataRequest{AllTopics: true})
		if err != nil {
			return err
		}
		if !md.Synced || len(md.Topics) != 1 || md.Topics[0].GetName() != "events" {
			return fmt.Errorf("answer %+v: want synced, with topic events", md)
		}
		return nil
	})
	if len(md.Hosts) != 1 || md.Hosts[0].GetKafkaAddress() != "127.0.0.1:9092" {
		t.Fatalf("hosts %v: want host 1 with its Kafka address", md.Hosts)
	}
	if id := md.Topics[0].GetTopicId(); id == "" || id != created.GetTopicId() {
		t.Fatalf("topic id %q, want %q", id, created.GetTopicId())
	}
	// A copy: changing it changes nothing in the broker.
	md.Topics[0].Partitions[0].Leader = 99
	md.Hosts[0].KafkaAddress = "changed:1"

	named, err := request[*broker.KafkaMetadata](t, h.sys, h.brk, &broker.KafkaMetadataRequest{Topics: []string{"nope", "events", "events"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(named.Topics) != 1 || named.Topics[0].GetPartitions()[0].GetLeader() == 99 || named.Hosts[0].GetKafkaAddress() != "127.0.0.1:9092" {
		t.Fatalf("named answer %+v: want events alone, unchanged", named)
	}
	none, err := request[*broker.KafkaMetadata](t, h.sys, h.brk, &broker.KafkaMetadataRequest{})
	if err != nil || len(none.Topics) != 0 || len(none.Hosts) != 1 {
		t.Fatalf("hosts-only answer %+v, %v", none, err)
	}
	// Both replicas serve before the test ends: their directories are
	// made off the broker's goroutine, and would race the removal of the
	// data directory.
	for _, p := range created.GetPartitions() {
		clustertest.WaitFor(t, timeout, func() error { return produceOne(t, h.sys, "events", p.GetPartition()) })
	}
}
