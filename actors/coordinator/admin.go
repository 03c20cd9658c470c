// admin.go: the group admin handlers — DescribeGroups (v5), ListGroups
// (v4) and DeleteGroups (v2) — for the groups of this coordinator.
//
// DescribeGroups answers each group in request order: INVALID_GROUP_ID or
// NOT_COORDINATOR for a group not hosted here; "Dead" without an error for
// a group this coordinator does not know, as Kafka; otherwise the core's
// view (members' metadata and assignments only while Stable). A group with
// committed offsets and no members is Empty.
//
// ListGroups lists every group of this coordinator, optionally only those
// in the states named (Kafka's names, any case). A host's broker asks each
// of its coordinators and merges (actors/broker); clients ask every host.
//
// DeleteGroups deletes Empty groups with their committed offsets. Per
// group: INVALID_GROUP_ID, NOT_COORDINATOR, GROUP_ID_NOT_FOUND (unknown,
// or already being deleted), NON_EMPTY_GROUP (it has members). An Empty
// group is made Dead (joins and commits get COORDINATOR_NOT_AVAILABLE),
// and once its offset commits in flight are written, one batch with a
// tombstone per committed offset and a group metadata tombstone is written
// with acks=all; then its offsets and the group are dropped. The response
// comes when every group is done. A group whose tombstones were not
// written gets the failure's code (commitErrorFor) and is Empty again.
//
// While loading every request gets COORDINATOR_LOAD_IN_PROGRESS; once the
// coordinator is fenced, NOT_COORDINATOR.

package coordinator

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// lookupGroup returns group id's entry; a group with committed offsets but
// no entry (possible only with a custom Membership) gets an Empty one.
func (c *Coordinator) lookupGroup(id string) *groupEntry {
	e := c.groups.get(id)
	if e == nil && len(c.table.Partitions(id)) > 0 {
		e, _ = c.groups.create(id)
	}
	return e
}

func (c *Coordinator) onDescribeGroups(ctx actor.Context, req *messages.DescribeGroupsRequest) {
	resp := &messages.DescribeGroupsResponse{CorrelationId: req.CorrelationId}
	for _, id := range req.GroupIds {
		if code, msg := c.owns(id); code != 0 {
			resp.Groups = append(resp.Groups, &messages.DescribedGroup{GroupId: id, ErrorCode: code, ErrorMessage: msg})
			continue
		}
		e := c.lookupGroup(id)
		if e == nil {
			resp.Groups = append(resp.Groups, &messages.DescribedGroup{GroupId: id, GroupState: group.Dead.String()})
			continue
		}
		resp.Groups = append(resp.Groups, e.g.Describe())
	}
	c.respond(ctx, resp)
}

func (c *Coordinator) onListGroups(ctx actor.Context, req *messages.ListGroupsRequest) {
	var states []group.State
	for _, name := range req.StatesFilter {
		if s, ok := group.ParseState(name); ok {
			states = append(states, s)
		}
	}
	resp := &messages.ListGroupsResponse{CorrelationId: req.CorrelationId}
	for _, id := range c.groups.ids() {
		g := c.groups.get(id).g
		if len(req.StatesFilter) > 0 && !slices.Contains(states, g.State()) {
			continue
		}
		resp.Groups = append(resp.Groups, g.Listed())
	}
	c.respond(ctx, resp)
}

func (c *Coordinator) onDeleteGroups(ctx actor.Context, req *messages.DeleteGroupsRequest) {
	resp := &messages.DeleteGroupsResponse{CorrelationId: req.CorrelationId}
	sender := ctx.Sender()
	pending := 1 // the loop below
	done := func() {
		if pending--; pending == 0 && sender != nil {
			ctx.Send(sender, resp)
		}
	}
	for _, id := range req.GroupIds {
		r := &messages.DeleteGroupsResult{GroupId: id}
		resp.Results = append(resp.Results, r)
		if code, msg := c.owns(id); code != 0 {
			r.ErrorCode, r.ErrorMessage = code, msg
			continue
		}
		e := c.lookupGroup(id)
		if e == nil {
			r.ErrorCode, r.ErrorMessage = messages.ErrorCode_ERROR_CODE_GROUP_ID_NOT_FOUND, fmt.Sprintf("no group %q", id)
			continue
		}
		before := e.g.Snapshot()
		switch code := e.g.Delete(); code {
		case messages.ErrorCode_ERROR_CODE_UNSPECIFIED:
		case messages.ErrorCode_ERROR_CODE_NON_EMPTY_GROUP:
			r.ErrorCode, r.ErrorMessage = code, fmt.Sprintf("group %q is %v with %d members; only an empty group can be deleted", id, e.g.State(), len(e.g.Members()))
			continue
		default:
			r.ErrorCode, r.ErrorMessage = code, fmt.Sprintf("group %q is being deleted", id)
			continue
		}
		e.deleting = true
		pending++
		c.whenCommitsDone(e, func() { c.writeGroupDeletion(ctx, e, before, r, done) })
	}
	done()
}

// whenCommitsDone runs f once e's group has no offset commit in flight.
func (c *Coordinator) whenCommitsDone(e *groupEntry, f func()) {
	if e.commits == 0 {
		f()
		return
	}
	e.afterCommits = append(e.afterCommits, f)
}

// commitDone notes the end of one of e's offset commits.
func (c *Coordinator) commitDone(e *groupEntry) {
	e.commits--
	if e.commits > 0 {
		return
	}
	run := e.afterCommits
	e.afterCommits = nil
	for _, f := range run {
		f()
	}
	c.maybeForget(e)
}

// writeGroupDeletion writes the tombstones of e's offsets and metadata,
// then drops them (or, if the write failed, makes the group Empty again as
// before, from its snapshot) and calls done.
func (c *Coordinator) writeGroupDeletion(ctx actor.Context, e *groupEntry, before group.Snapshot, r *messages.DeleteGroupsResult, done func()) {
	id := e.g.ID()
	tps := c.table.Partitions(id)
	recs := tombstones(id, tps, true, c.cfg.Now().UnixMilli())
	log := c.logger.WithFields(logrus.Fields{"group": id, "offsets": len(tps)})
	c.appendRecords(ctx, recs, func(base int64, code messages.ErrorCode, msg string) {
		defer done()
		if code != 0 {
			log.WithFields(logrus.Fields{"code": code.ShortName(), "error": msg}).Warn("group deletion not written; the group stays")
			r.ErrorCode, r.ErrorMessage = code, msg
			g, err := group.Restore(id, c.groups.cfg, before, c.cfg.Now())
			if err != nil {
				g, err = group.NewGroup(id, c.groups.cfg)
			}
			if err != nil {
				log.WithError(err).Error("cannot host the group again")
				return
			}
			// The tombstones may be in the log: write the group again.
			e.g, e.deleting, e.persistedOK = g, false, false
			c.carryOut(ctx, e, group.Effects{})
			return
		}
		for i, tp := range tps {
			c.table.Apply(OffsetKey{Group: id, Topic: tp.Topic, Partition: tp.Partition}, nil, base+int64(i))
		}
		if c.groups.get(id) == e {
			delete(c.groups.groups, id)
		}
		log.Info("group deleted")
	})
}

// tombstones returns the records that delete group id's committed offsets
// of tps (in that order) and, with withGroup, its group metadata (last),
// stamped nowMs: what group deletion and offset expiry (expire.go) write.
func tombstones(id string, tps []TopicPartition, withGroup bool, nowMs int64) []record.Record {
	recs := make([]record.Record, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, record.Record{Key: EncodeOffsetKey(OffsetKey{Group: id, Topic: tp.Topic, Partition: tp.Partition}), Timestamp: nowMs})
	}
	if withGroup {
		recs = append(recs, record.Record{Key: EncodeGroupMetadataKey(id), Timestamp: nowMs})
	}
	return recs
}
