// senders.go: the controller's internal requests come only from hosts
// (DESIGN §10; the sender rules are cluster/senders.go). Checked on
// arrival, before anything else — in particular before a standby forwards
// the request to the elected controller, so forwarding is no way around
// the check:
//
//   - ControlledShutdownRequest: only from the advertised address of the
//     host it names (host_id); the broker epoch is then checked against
//     that host's registration (shutdown.go);
//   - AlterPartitionRequest: only from the address of the host named as
//     leader_id;
//   - CreateOffsetsTopicRequest: only from the address of a registered host.
//
// A sender in this actor system is this host (Config.HostID): hosts send
// these requests to their own controller actor, which acts on them or, as
// a standby, forwards them from this host's address to the elected one.
// A refusal answers CLUSTER_AUTHORIZATION_FAILED and nothing else (no
// partition state, no epochs), is counted and logged (rate-limited) by
// cluster.RefuseInternal, and changes nothing.
//
// The registry is read from etcd (Store.ListHosts) and cached for
// hostCacheTTL; a sender the cache does not know triggers one re-read at
// most every hostCacheMinRefresh, so a flood of forged requests costs at
// most that many etcd reads. A local sender for this host needs no read.

package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// Host registry cache of the sender checks.
const (
	// hostCacheTTL is how long a read of the host registrations serves.
	hostCacheTTL = time.Second
	// hostCacheMinRefresh is the least time between two reads.
	hostCacheMinRefresh = 100 * time.Millisecond
	// hostReadTimeout bounds one read (at most Config.RequestTimeout).
	hostReadTimeout = 2 * time.Second
)

// hostCache is the controller's copy of the registered hosts' addresses.
// Owned by the actor.
type hostCache struct {
	addrs   map[int32]string // host id → advertised address; nil before the first read
	readAt  time.Time        // last successful read
	triedAt time.Time        // last attempt
}

// hostAddresses returns the registered hosts' addresses: the cached ones
// while younger than hostCacheTTL (or always, if refresh), re-read from
// etcd otherwise — but at most once per hostCacheMinRefresh. A failed
// read keeps the last good copy.
func (c *Controller) hostAddresses(refresh bool) map[int32]string {
	now := time.Now()
	h := &c.hosts
	if (refresh || now.Sub(h.readAt) >= hostCacheTTL) && now.Sub(h.triedAt) >= hostCacheMinRefresh {
		h.triedAt = now
		rctx, cancel := context.WithTimeout(context.Background(), min(c.cfg.RequestTimeout, hostReadTimeout))
		hosts, err := c.cfg.Store.ListHosts(rctx)
		cancel()
		if err != nil {
			c.logger.WithError(err).Debug("cannot read the host registrations for a sender check")
		} else {
			h.addrs, h.readAt = cluster.HostAddresses(hosts), now
		}
	}
	return h.addrs
}

// authorizeInternal checks the sender of an internal request (see the
// file comment). On a refusal it answers the request itself and returns
// false; other messages pass.
func (c *Controller) authorizeInternal(ctx actor.Context, msg proto.Message) bool {
	sender, self := ctx.Sender(), ctx.Self().Address
	var (
		kind   string
		corr   int64
		fields logrus.Fields
		why    string
		ok     func(hosts map[int32]string) bool
	)
	switch m := msg.(type) {
	case *messages.ControlledShutdownRequest:
		kind, corr, fields = cluster.RefusedControlledShutdown, m.CorrelationId, logrus.Fields{"host": m.HostId}
		why = fmt.Sprintf("a controlled shutdown of host %d is accepted only from that host's registered address", m.HostId)
		ok = func(h map[int32]string) bool { return cluster.SenderIsHost(sender, self, c.cfg.HostID, h, m.HostId) }
	case *messages.AlterPartitionRequest:
		kind, corr, fields = cluster.RefusedAlterPartition, m.CorrelationId, logrus.Fields{"leader": m.LeaderId, "topic": m.Topic, "partition": m.Partition}
		why = fmt.Sprintf("an ISR change proposed by leader %d is accepted only from that host's registered address", m.LeaderId)
		ok = func(h map[int32]string) bool { return cluster.SenderIsHost(sender, self, c.cfg.HostID, h, m.LeaderId) }
	case *messages.CreateOffsetsTopicRequest:
		kind, corr = cluster.RefusedCreateOffsetsTopic, m.CorrelationId
		why = "the offsets topic is created only at a registered host's request"
		ok = func(h map[int32]string) bool { return cluster.SenderIsAnyHost(sender, self, h) }
	default:
		return true
	}
	// A local sender for this host needs no registry; then the cache, then
	// a fresh read (a host that registered a moment ago).
	if ok(nil) || ok(c.hostAddresses(false)) || ok(c.hostAddresses(true)) {
		return true
	}
	cluster.RefuseInternal(c.logger, kind, sender, fields)
	ctx.Respond(messages.ErrorReply(msg, corr, messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED, why))
	return false
}
