// producerid_test.go: InitProducerId through brokers (on a MemStore) that
// take their producer id blocks from one counter.

package broker_test

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/actors/broker"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
)

// Two brokers (two hosts' blocks) never hand out one producer id twice.
func TestInitProducerIDIsUniqueAcrossBrokers(t *testing.T) {
	s := clustertest.NewMemStore(t)
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	var brokers []*actor.PID
	for i := int32(1); i <= 2; i++ {
		brokers = append(brokers, sys.Root.Spawn(broker.Props(broker.Config{
			HostID: i, DataDir: t.TempDir(), Store: s, Logger: clustertest.Logger(t),
			Controller: func() *actor.PID { return nil },
		})))
	}
	seen := map[int64]bool{}
	for i := 0; i < 20; i++ {
		resp, err := request[*messages.InitProducerIdResponse](t, sys, brokers[i%2], &messages.InitProducerIdRequest{CorrelationId: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || resp.ProducerId < 0 || resp.ProducerEpoch != 0 || resp.CorrelationId != int64(i) {
			t.Fatalf("answer %v", resp)
		}
		if seen[resp.ProducerId] {
			t.Fatalf("producer id %d handed out twice", resp.ProducerId)
		}
		seen[resp.ProducerId] = true
	}
}
