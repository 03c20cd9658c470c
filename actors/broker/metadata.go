// metadata.go: the broker's answers about the cluster. Metadata is
// answered from the cache the broker keeps of etcd (broker.go follows it);
// DescribeCluster reads the live hosts and the controller from etcd, and
// admin requests are forwarded to the controller, both on a goroutine that
// touches no broker state.
//
// Metadata: every registered host, and the requested topics (all when none
// is named) with their partitions. Error codes: UNKNOWN_TOPIC_OR_PARTITION
// (a valid name the cache does not hold), INVALID_TOPIC_EXCEPTION (an
// invalid name), LEADER_NOT_AVAILABLE per partition (no leader, or its
// host is not registered).
//
// KafkaMetadataRequest (local only): a copy of the cache as the host's
// Kafka listener needs it — topic ids and deletion marks, which Metadata
// does not carry, and every live host's registration with its Kafka
// address. No error codes: unknown names are simply absent.
//
// DescribeCluster: the live hosts, the registered names of the others
// (down), and the controller. Error code: REQUEST_TIMED_OUT (etcd did not
// answer within AdminTimeout).
//
// Admin requests (create/delete topic, create partitions, alter configs,
// elect leaders, reassign): the controller's answer, or NOT_CONTROLLER (no
// controller activation reachable) or REQUEST_TIMED_OUT (it did not answer).

package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// metadata answers a MetadataRequest from the cache.
func (b *Broker) metadata(req *messages.MetadataRequest) *messages.MetadataResponse {
	resp := &messages.MetadataResponse{CorrelationId: req.CorrelationId, ControllerId: -1}
	ids := make([]int32, 0, len(b.hosts))
	for id := range b.hosts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		resp.Hosts = append(resp.Hosts, b.hosts[id])
	}
	names := req.Topics
	if len(names) == 0 {
		for name := range b.topics {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	for _, name := range names {
		t, ok := b.topics[name]
		if !ok {
			code := messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
			if cluster.ValidateTopicName(name) != nil {
				code = messages.ErrorCode_ERROR_CODE_INVALID_TOPIC_EXCEPTION
			}
			resp.Topics = append(resp.Topics, &messages.TopicMetadataResponse{Name: name, ErrorCode: code})
			continue
		}
		tr := &messages.TopicMetadataResponse{Name: name, Configs: t.Configs, ReplicationFactor: t.ReplicationFactor}
		for _, p := range t.Partitions {
			pm := &messages.PartitionMetadata{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, Isr: p.Isr, ReplicaActorId: messages.ReplicaActorID(name, p.Partition),
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
			}
			if h, ok := b.hosts[p.Leader]; ok {
				pm.LeaderAddress = h.AdvertisedAddress
			} else {
				pm.ErrorCode = messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE
			}
			tr.Partitions = append(tr.Partitions, pm)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

// KafkaMetadataRequest asks the broker for a copy of its metadata cache,
// for the host's Kafka listener (host/kafka.go). It is a Go value, not a
// proto message: it is sent only by actors of this process and cannot
// arrive over the actor remote. Answered with *KafkaMetadata.
type KafkaMetadataRequest struct {
	// AllTopics asks for every topic; otherwise only those of Topics
	// (none: the hosts alone).
	AllTopics bool
	// Topics names the topics wanted when AllTopics is false.
	Topics []string
}

// KafkaMetadata answers KafkaMetadataRequest. Its messages are copies:
// the receiver owns them.
type KafkaMetadata struct {
	// Synced is false until the broker has read the metadata store once
	// (its cache is empty until then, which says nothing about the
	// cluster).
	Synced bool
	// Hosts are the live host registrations, by host id.
	Hosts []*messages.HostInfo
	// Topics are the topics asked for that the cache holds (those being
	// deleted included, with Deleting set), by name.
	Topics []*messages.TopicMetadata
}

// kafkaMetadata answers a KafkaMetadataRequest from the cache.
func (b *Broker) kafkaMetadata(req *KafkaMetadataRequest) *KafkaMetadata {
	resp := &KafkaMetadata{Synced: b.synced, Hosts: make([]*messages.HostInfo, 0, len(b.hosts))}
	for _, h := range b.hosts {
		resp.Hosts = append(resp.Hosts, proto.Clone(h).(*messages.HostInfo))
	}
	sort.Slice(resp.Hosts, func(i, j int) bool { return resp.Hosts[i].HostId < resp.Hosts[j].HostId })
	names := req.Topics
	if req.AllTopics {
		names = make([]string, 0, len(b.topics))
		for name := range b.topics {
			names = append(names, name)
		}
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if t, ok := b.topics[name]; ok && !seen[name] {
			seen[name] = true
			resp.Topics = append(resp.Topics, proto.Clone(t).(*messages.TopicMetadata))
		}
	}
	sort.Slice(resp.Topics, func(i, j int) bool { return resp.Topics[i].Name < resp.Topics[j].Name })
	return resp
}

// describeCluster reads the live hosts and the controller from etcd on a
// goroutine (it touches no broker state) and answers.
func (b *Broker) describeCluster(ctx actor.Context, req *messages.DescribeClusterRequest) {
	sender, root, store, timeout := ctx.Sender(), ctx.ActorSystem().Root, b.cfg.Store, b.cfg.AdminTimeout
	if sender == nil {
		return
	}
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		resp := &messages.DescribeClusterResponse{CorrelationId: req.CorrelationId, ControllerId: -1}
		hosts, err := store.ListHosts(rctx)
		var names map[int32]string
		if err == nil {
			names, err = store.HostNames(rctx)
		}
		if err == nil {
			resp.Hosts = hosts
			live := map[int32]bool{}
			for _, h := range hosts {
				live[h.HostId] = true
			}
			for id, name := range names {
				if !live[id] {
					resp.DownHosts = append(resp.DownHosts, &messages.HostInfo{HostId: id, Name: name})
				}
			}
			sort.Slice(resp.DownHosts, func(i, j int) bool { return resp.DownHosts[i].HostId < resp.DownHosts[j].HostId })
			var value string
			var fence cluster.Fence
			value, fence, err = store.Controller(rctx)
			switch {
			case errors.Is(err, cluster.ErrNoController):
				err = nil
			case err == nil:
				addr, _, _ := strings.Cut(value, "#")
				resp.ControllerAddress, resp.ControllerEpoch = addr, fence.Epoch
				for _, h := range hosts {
					if h.AdvertisedAddress == addr {
						resp.ControllerId = h.HostId
					}
				}
			}
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, err.Error()
		}
		root.Send(sender, resp)
	}()
}

// forwardAdmin passes an admin request to the controller (resolved through
// the protoactor cluster), which acts on it or forwards it to the elected
// controller. The lookup and the wait run on a goroutine that touches no
// broker state, so metadata requests are never held up behind them.
func (b *Broker) forwardAdmin(ctx actor.Context, msg proto.Message) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	corr := int64(0)
	if c, ok := msg.(interface{ GetCorrelationId() int64 }); ok {
		corr = c.GetCorrelationId()
	}
	root, resolve, timeout := ctx.ActorSystem().Root, b.cfg.Controller, b.cfg.AdminTimeout
	go func() {
		fail := func(code messages.ErrorCode, text string) {
			root.Send(sender, messages.ErrorReply(msg, corr, code, text))
		}
		var pid *actor.PID
		if resolve != nil {
			pid = resolve()
		}
		if pid == nil {
			fail(messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, "no controller activation reachable yet")
			return
		}
		res, err := root.RequestFuture(pid, msg, timeout).Result()
		if err != nil {
			fail(messages.ErrorCode_ERROR_CODE_REQUEST_TIMED_OUT, fmt.Sprintf("controller did not answer: %v", err))
			return
		}
		root.Send(sender, res)
	}()
}
