// senders.go: a follower's requests come only from the follower's host
// (DESIGN §10; the sender rules are cluster/senders.go). A follower fetch
// moves the high watermark and may take the follower into the ISR, so one
// forged with another replica's id could acknowledge acks=all writes that
// replica never has. A FetchRequest or OffsetForLeaderEpochRequest with
// replica_id R >= 0 is therefore served only when R is another replica of
// the partition (Config.Replicas) and the sender's address is R's
// registered advertised address (Config.Hosts, kept current by
// LiveHosts.Addresses from the broker). Otherwise it is refused first —
// before the target, epoch and offset checks, whose answers carry offsets
// and epochs — with CLUSTER_AUTHORIZATION_FAILED and nothing else, counted
// and logged (rate-limited) by cluster.RefuseInternal.
//
// The check is a slice scan of the replica set and one map lookup, cheap
// enough for every follower fetch. A follower the leader's broker does not
// know yet (it registered a moment ago) is refused until the host update
// arrives; followers retry with backoff.

package replica

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster"
)

// fromFollower reports whether the current request, claiming replica_id
// id, comes from that replica's host.
func (r *Replica) fromFollower(ctx actor.Context, id int32) bool {
	return id != r.cfg.Self && slices.Contains(r.cfg.Replicas, id) &&
		cluster.SenderIsHost(ctx.Sender(), ctx.Self().Address, r.cfg.Self, r.cfg.Hosts, id)
}

// refuseFollower counts and logs a refused follower request of kind.
func (r *Replica) refuseFollower(ctx actor.Context, kind string, id int32) {
	cluster.RefuseInternal(r.logger, kind, ctx.Sender(), logrus.Fields{"replica_id": id})
}

// followerRefusal is the error message of a refused follower request.
func followerRefusal(id int32) string {
	return fmt.Sprintf("a follower request for replica %d is served only from the registered address of that replica's host", id)
}
