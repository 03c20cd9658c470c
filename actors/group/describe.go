// describe.go holds the read-only views of a group: DescribeGroups and
// ListGroups entries (Kafka's GroupMetadata.summary and overview).

package group

import "github.com/actorlog/actorlog/messages"

// Describe returns the group as DescribeGroups reports it: state, protocol,
// generation, leader and members; each member's metadata (for the chosen
// protocol) and assignment only while Stable, as Kafka.
func (g *Group) Describe() *messages.DescribedGroup {
	d := &messages.DescribedGroup{
		GroupId:      g.id,
		GroupState:   g.state.String(),
		ProtocolType: g.protocolType,
		GenerationId: g.generation,
		Leader:       g.leader,
	}
	if g.state == Stable {
		d.ProtocolData = g.protocolName
	}
	for _, m := range g.order {
		dm := &messages.DescribedGroupMember{
			MemberId:        m.id,
			GroupInstanceId: m.instanceID,
			ClientId:        m.clientID,
			ClientHost:      m.clientHost,
		}
		if g.state == Stable {
			dm.MemberMetadata = m.metadata(g.protocolName)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// Listed returns the group as ListGroups reports it.
func (g *Group) Listed() *messages.ListedGroup {
	return &messages.ListedGroup{GroupId: g.id, ProtocolType: g.protocolType, GroupState: g.state.String()}
}
