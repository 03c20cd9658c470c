// remoteauth.go: what the remote guard does with the principal of a
// connection (remotetls.go): host-only requests from anyone but a host are
// dropped when the remote runs with TLS, and every envelope let through
// carries the principal in its header.
//
// Host-only requests are the internal requests of DESIGN §10 (cluster/
// senders.go checks them again in the actors, by sender address):
// follower fetches and a follower's OffsetForLeaderEpoch (replica_id >= 0;
// a consumer sends -1), AlterPartition, ControlledShutdown and
// CreateOffsetsTopic. Those naming a host id (replica_id, leader_id,
// host_id) are, with WithHostNames, accepted only from that host's
// principal: a host certificate for host 2 cannot fetch as host 3 (an id
// not known to the lookup is left to the actors' checks). The id
// is read from the envelope's bytes with protowire, without decoding the
// message.

package client

import (
	"fmt"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// Reasons host-only envelopes are dropped (remoteguard.go's reasons).
const (
	reasonNotHost   = "host-only request from a non-host principal"
	reasonWrongHost = "host-only request for another host"
)

// hostOnlyType describes a host-only request type.
type hostOnlyType struct {
	// idField is the number of the int32 field naming the host the
	// request speaks for; 0: none.
	idField protowire.Number
	// replicaOnly: the request is host-only only when the id is >= 0
	// (a consumer's fetch has replica_id -1).
	replicaOnly bool
}

// hostOnlyTypes maps the full name of each host-only request type to its
// description, built from the messages' descriptors.
var hostOnlyTypes = func() map[string]hostOnlyType {
	entry := func(m proto.Message, idField string, replicaOnly bool) (string, hostOnlyType) {
		d := m.ProtoReflect().Descriptor()
		t := hostOnlyType{replicaOnly: replicaOnly}
		if idField != "" {
			fd := d.Fields().ByName(protoreflect.Name(idField))
			if fd == nil || fd.Kind() != protoreflect.Int32Kind {
				panic(fmt.Sprintf("client: %s has no int32 field %s", d.FullName(), idField))
			}
			t.idField = fd.Number()
		}
		return string(d.FullName()), t
	}
	m := map[string]hostOnlyType{}
	for _, e := range []struct {
		m           proto.Message
		idField     string
		replicaOnly bool
	}{
		{&messages.FetchRequest{}, "replica_id", true},
		{&messages.OffsetForLeaderEpochRequest{}, "replica_id", true},
		{&messages.AlterPartitionRequest{}, "leader_id", false},
		{&messages.ControlledShutdownRequest{}, "host_id", false},
		{&messages.CreateOffsetsTopicRequest{}, "", false},
	} {
		name, t := entry(e.m, e.idField, e.replicaOnly)
		m[name] = t
	}
	return m
}()

// int32Field returns the last value of the varint field num at the top
// level of the protobuf message b (0 when absent, as proto3 decodes it).
// ok is false when b does not parse.
func int32Field(b []byte, num protowire.Number) (v int32, ok bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, false
		}
		b = b[l:]
		if n == num && typ == protowire.VarintType {
			x, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return 0, false
			}
			v = int32(x)
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return 0, false
		}
		b = b[l:]
	}
	return v, true
}

// hostOnlyVerdict returns why an envelope of type t with payload data must
// not be delivered from principal p, or "". hostName maps a host id to its
// name (nil: ids are not checked). A payload that does not parse is judged
// as host-only naming another host. An id hostName does not know passes
// for any host principal: the actors check the sender against the host
// registrations again (cluster.SenderIsHost), and a host that has just
// registered may not be known here yet.
func hostOnlyVerdict(t hostOnlyType, data []byte, p tlsconf.Principal, hostName func(int32) (string, bool)) string {
	id, parsed := int32(0), true
	if t.idField != 0 {
		id, parsed = int32Field(data, t.idField)
	}
	if parsed && t.replicaOnly && id < 0 {
		return "" // a consumer's request
	}
	if !p.IsHost() {
		return reasonNotHost
	}
	if t.idField == 0 || hostName == nil {
		return ""
	}
	if !parsed {
		return reasonWrongHost
	}
	if name, ok := hostName(id); ok && name != p.Name {
		return reasonWrongHost
	}
	return "" // an id the lookup does not know (yet) is left to the actors
}

// authorizeBatch removes from b.Envelopes, in place, the host-only
// requests p may not send (enforce: the remote runs with TLS), and stamps
// header — {PrincipalHeader: p} — on every envelope kept: an envelope with
// no other header entries shares header (nobody modifies a received
// header: actors see it read-only), one with others gets the key set in
// its own map, overwriting the sender's. It returns the envelopes removed
// per reason. b must have passed screenBatch (its indexes are valid).
func authorizeBatch(b *remote.MessageBatch, p tlsconf.Principal, header *remote.MessageHeader, enforce bool, hostName func(int32) (string, bool)) map[string]int {
	var dropped map[string]int
	kept := b.Envelopes[:0]
	for _, e := range b.Envelopes {
		if enforce {
			if t, ok := hostOnlyTypes[b.TypeNames[e.TypeId]]; ok {
				if reason := hostOnlyVerdict(t, e.MessageData, p, hostName); reason != "" {
					if dropped == nil {
						dropped = make(map[string]int)
					}
					dropped[reason]++
					continue
				}
			}
		}
		stamp(e, header)
		kept = append(kept, e)
	}
	clear(b.Envelopes[len(kept):])
	b.Envelopes = kept
	return dropped
}

// stamp puts header's entries (the principal, and the peer's host when
// known) into e's header, overwriting the sender's.
func stamp(e *remote.MessageEnvelope, header *remote.MessageHeader) {
	h := e.GetMessageHeader().GetHeaderData()
	if len(h) == 0 || len(h) == 1 && hasKey(h, PrincipalHeader) {
		e.MessageHeader = header
		return
	}
	delete(h, PeerHostHeader) // only the guard's own word counts
	for k, v := range header.HeaderData {
		h[k] = v
	}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
