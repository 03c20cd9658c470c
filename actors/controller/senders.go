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
// The read runs off the actor; the requests that need it wait for it
// (hostsRead) while the actor goes on with other messages.

package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

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
	reading bool             // a read is under way
	waiting []pendingCheck   // requests waiting for that read
}

// pendingCheck is a request whose sender check waits for a read of the
// host registrations.
type pendingCheck struct {
	req  request
	rule senderRule
}

// hostsRead is posted by a read of the host registrations.
type hostsRead struct {
	hosts []*messages.HostInfo
	err   error
	at    time.Time
}

// senderRule is who may send an internal request.
type senderRule struct {
	kind   string
	fields logrus.Fields
	why    string
	ok     func(hosts map[int32]string) bool
}

// senderRuleFor returns the sender rule of an internal request; false
// for the other requests, which anyone may send.
func (c *Controller) senderRuleFor(ctx actor.Context, req request) (senderRule, bool) {
	sender, self := req.sender, ctx.Self().Address
	switch m := req.msg.(type) {
	case *messages.ControlledShutdownRequest:
		return senderRule{kind: cluster.RefusedControlledShutdown, fields: logrus.Fields{"host": m.HostId},
			why: fmt.Sprintf("a controlled shutdown of host %d is accepted only from that host's registered address", m.HostId),
			ok:  func(h map[int32]string) bool { return cluster.SenderIsHost(sender, self, c.cfg.HostID, h, m.HostId) }}, true
	case *messages.AlterPartitionRequest:
		return senderRule{kind: cluster.RefusedAlterPartition, fields: logrus.Fields{"leader": m.LeaderId, "topic": m.Topic, "partition": m.Partition},
			why: fmt.Sprintf("an ISR change proposed by leader %d is accepted only from that host's registered address", m.LeaderId),
			ok:  func(h map[int32]string) bool { return cluster.SenderIsHost(sender, self, c.cfg.HostID, h, m.LeaderId) }}, true
	case *messages.CreateOffsetsTopicRequest:
		return senderRule{kind: cluster.RefusedCreateOffsetsTopic,
			why: "the offsets topic is created only at a registered host's request",
			ok:  func(h map[int32]string) bool { return cluster.SenderIsAnyHost(sender, self, h) }}, true
	}
	return senderRule{}, false
}

// senderStep is what the sender check does with a request next.
type senderStep int

const (
	stepServe  senderStep = iota // admitted: serve it
	stepWait                     // wait for the read under way
	stepRead                     // start a read and wait for it
	stepDecide                   // no read allowed yet: the last copy decides
)

// nextSenderStep decides the sender check of a request, without I/O:
// internal says whether it is an internal request; local, whether its
// sender passes without a registry (this host, locally); cachedOK,
// whether the cached registry admits it; sinceRead and sinceTry, the time
// since the last successful read and the last attempt; reading, whether a
// read is under way.
func nextSenderStep(internal, local, cachedOK bool, sinceRead, sinceTry time.Duration, reading bool) senderStep {
	switch {
	case !internal || local || (sinceRead < hostCacheTTL && cachedOK):
		return stepServe
	case reading:
		return stepWait
	case sinceTry >= hostCacheMinRefresh:
		return stepRead
	}
	return stepDecide
}

// authorizeInternal checks the sender of a request (see the file
// comment) and hands the request to the current role, or refuses it
// (nextSenderStep decides how).
func (c *Controller) authorizeInternal(ctx actor.Context, req request) {
	rule, internal := c.senderRuleFor(ctx, req)
	now, h := time.Now(), &c.hosts
	local, cachedOK := internal && rule.ok(nil), internal && rule.ok(h.addrs)
	switch nextSenderStep(internal, local, cachedOK, now.Sub(h.readAt), now.Sub(h.triedAt), h.reading) {
	case stepServe:
		c.role.serve(ctx, req)
	case stepWait:
		h.waiting = append(h.waiting, pendingCheck{req, rule})
	case stepRead:
		h.reading, h.triedAt = true, now
		h.waiting = append(h.waiting, pendingCheck{req, rule})
		c.readHosts(ctx)
	case stepDecide:
		c.checked(ctx, req, rule)
	}
}

// readHosts reads the host registrations off the actor and posts
// hostsRead.
func (c *Controller) readHosts(ctx actor.Context) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		rctx, cancel := context.WithTimeout(c.jobs, min(c.cfg.RequestTimeout, hostReadTimeout))
		defer cancel()
		hosts, err := c.cfg.Store.ListHosts(rctx)
		root.Send(self, hostsRead{hosts: hosts, err: err, at: time.Now()})
	}()
}

// onHostsRead updates the cache (a failed read keeps the last good copy)
// and decides the requests that waited for it.
func (c *Controller) onHostsRead(ctx actor.Context, m hostsRead) {
	h := &c.hosts
	h.reading = false
	if m.err != nil {
		c.logger.WithError(m.err).Debug("cannot read the host registrations for a sender check")
	} else {
		h.addrs, h.readAt = cluster.HostAddresses(m.hosts), m.at
	}
	waiting := h.waiting
	h.waiting = nil
	for _, w := range waiting {
		c.checked(ctx, w.req, w.rule)
	}
}

// checked serves req if the cached registry admits its sender, and
// refuses it otherwise.
func (c *Controller) checked(ctx actor.Context, req request, rule senderRule) {
	if rule.ok(c.hosts.addrs) {
		c.role.serve(ctx, req)
		return
	}
	cluster.RefuseInternal(c.logger, rule.kind, req.sender, rule.fields)
	c.respond(ctx, req, messages.ErrorReply(req.msg, req.corr, messages.ErrorCode_ERROR_CODE_CLUSTER_AUTHORIZATION_FAILED, rule.why))
}
