// senders.go: internal requests come only from hosts (DESIGN §10). The
// internal requests — follower fetches and a follower's
// OffsetForLeaderEpoch (replica actors), AlterPartition, ControlledShutdown
// and CreateOffsetsTopic (the controller) — are authorized by who sent
// them, checked against the host registrations (HostInfo: host_id →
// advertised_address).
//
// Until TLS binds a sender to a certificate, a sender is known by the
// address of its PID. Over protoactor's remote, ctx.Sender() of a request
// is a PID on the sending process (for a RequestFuture, the future's), and
// its address is that process's advertised address: a host sends from the
// address it registered, a client from its own. A sender in the receiver's
// own actor system (an empty address, protoactor's "nonhost", or the
// receiver's address) is the local host.
//
// What this does not stop: the sender PID of a protoactor envelope is the
// sending process's own claim (the endpoint reader takes it from the
// batch). A peer that names a registered host's address as its sender
// passes the check — it never sees the answer, which goes to that host,
// but the request takes effect. Binding the claim to the connection
// (DESIGN §10: TLS, the principal stamped by the server) closes that.
//
// Refusals are counted per kind (InternalRefusals, for /metrics) and logged
// at warn with the sender's address, at most one line a second per kind
// across the process, so a flood cannot fill the disk.

package cluster

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/messages"
)

// protoactorLocalAddress is the address of PIDs in an actor system
// without remote (protoactor's localAddress); a registry Get treats it as
// local in any system.
const protoactorLocalAddress = "nonhost"

// HostAddresses maps each host of hosts to its advertised address,
// leaving out hosts with none. The result is a new map.
func HostAddresses(hosts []*messages.HostInfo) map[int32]string {
	addrs := make(map[int32]string, len(hosts))
	for _, h := range hosts {
		if h.GetAdvertisedAddress() != "" {
			addrs[h.GetHostId()] = h.GetAdvertisedAddress()
		}
	}
	return addrs
}

// senderAddress returns the address a sender speaks from, with a sender in
// the receiver's own actor system (empty address or "nonhost") given
// self, the receiver's address. ok is false for a nil sender (a request
// sent without one: no internal request is).
func senderAddress(sender *actor.PID, self string) (addr string, local, ok bool) {
	if sender == nil {
		return "", false, false
	}
	addr = sender.Address
	if addr == "" || addr == protoactorLocalAddress || addr == self {
		return self, true, true
	}
	return addr, false, true
}

// SenderIsHost reports whether sender speaks for host id: it is in the
// receiver's actor system and id is localID (the receiver's host), or its
// address is hosts[id], host id's registered address. self is the
// receiver's address (ctx.Self().Address). A nil sender never does. Pure;
// hosts may be nil (then only the local host is known).
func SenderIsHost(sender *actor.PID, self string, localID int32, hosts map[int32]string, id int32) bool {
	addr, local, ok := senderAddress(sender, self)
	if !ok {
		return false
	}
	if local && id == localID {
		return true
	}
	reg, known := hosts[id]
	return known && reg != "" && reg == addr
}

// SenderIsAnyHost reports whether sender is in the receiver's actor
// system or speaks from the registered address of any host in hosts. Pure.
func SenderIsAnyHost(sender *actor.PID, self string, hosts map[int32]string) bool {
	addr, local, ok := senderAddress(sender, self)
	if !ok {
		return false
	}
	if local {
		return true
	}
	for _, reg := range hosts {
		if reg != "" && reg == addr {
			return true
		}
	}
	return false
}

// Kinds of refused internal requests: the keys of InternalRefusals and of
// the rate limit of their log lines.
const (
	RefusedFollowerFetch        = "follower_fetch"
	RefusedOffsetForLeaderEpoch = "offset_for_leader_epoch"
	RefusedAlterPartition       = "alter_partition"
	RefusedControlledShutdown   = "controlled_shutdown"
	RefusedCreateOffsetsTopic   = "create_offsets_topic"
)

// refusalKinds is the fixed set of kinds; anything else counts as "other".
var refusalKinds = []string{RefusedFollowerFetch, RefusedOffsetForLeaderEpoch, RefusedAlterPartition,
	RefusedControlledShutdown, RefusedCreateOffsetsTopic, "other"}

// refusals counts refused internal requests per kind, process-wide.
var refusals = func() map[string]*atomic.Uint64 {
	m := make(map[string]*atomic.Uint64, len(refusalKinds))
	for _, k := range refusalKinds {
		m[k] = new(atomic.Uint64)
	}
	return m
}()

// refusalLog limits the refusals' warn lines to one a second per kind.
var refusalLog = &netlimit.LogLimiter{Every: time.Second}

// InternalRefusals returns how many internal requests were refused since
// the process started, per kind (the Refused* constants, and "other").
// Safe for concurrent use.
func InternalRefusals() map[string]uint64 {
	out := make(map[string]uint64, len(refusals))
	for k, c := range refusals {
		out[k] = c.Load()
	}
	return out
}

// RefuseInternal records that an internal request of kind (a Refused*
// constant) was refused because of its sender: it is counted, and logged
// on log at warn with the sender's address and fields, at most once a
// second per kind (the line says how many were not logged before it).
// Safe for concurrent use.
func RefuseInternal(log *logrus.Entry, kind string, sender *actor.PID, fields logrus.Fields) {
	c, ok := refusals[kind]
	if !ok {
		kind = "other"
		c = refusals[kind]
	}
	c.Add(1)
	allowed, suppressed := refusalLog.Allow(kind, time.Now())
	if !allowed {
		return
	}
	addr, id := "<none>", ""
	if sender != nil {
		addr, id = sender.Address, sender.Id
	}
	log.WithFields(fields).WithFields(logrus.Fields{"kind": kind, "sender_address": addr, "sender_id": id, "refused_since_last_line": suppressed}).
		Warn("internal request refused: not sent from the registered host it must come from")
}
