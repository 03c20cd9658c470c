// elect.go holds leader election for partitions (DESIGN §4), Kafka's
// rules, as pure functions: no actors, no etcd, no clock. The controller
// calls ElectLeaders with the live host set whenever it changes; the
// replication code can call ElectLeader for one partition (e.g. after an
// ISR change).
//
// Per partition:
//   - Leader alive: the leader stays; dead hosts leave the ISR (the leader
//     is in it, so it never empties).
//   - Leader dead, or none (-1): the new leader is the first replica, in
//     replica (preference) order, that is alive and in the ISR; the ISR
//     keeps its live members. With none, and unclean election allowed, the
//     first live replica outside the ISR leads and the ISR becomes just it
//     (records may be lost: that is what "unclean" means). Otherwise the
//     partition is offline (leader -1) and its ISR is left as it is: as in
//     Kafka, the last ISR members stay in the ISR while offline, so the
//     first of them to come back is elected cleanly.
//   - Every leader change (to -1 and back included) bumps leader_epoch;
//     every change of leader or ISR bumps partition_epoch. Nothing else
//     changes, so calling again with the same live set changes nothing.

package controller

import (
	"slices"

	"github.com/actorlog/actorlog/messages"
)

// ElectLeaders applies the election rules above to every partition of t,
// in place, given the live hosts (live[id] is true for a host with a live
// registration; absent means dead) and whether unclean election is allowed
// (the topic's unclean.leader.election.enable, see
// cluster.UncleanLeaderElection). It reports whether any partition changed;
// when it returns false, t is untouched. Callers that need the state before
// the election clone t first (proto.Clone).
//
// Pure: safe for concurrent use on distinct topics.
func ElectLeaders(t *messages.TopicMetadata, live map[int32]bool, allowUnclean bool) (changed bool) {
	for _, p := range t.GetPartitions() {
		if ElectLeader(p, live, allowUnclean) {
			changed = true
		}
	}
	return changed
}

// ElectLeader applies the election rules to one partition, in place, and
// reports whether it changed (leader, ISR and epochs); see ElectLeaders.
//
// Invariants kept: the leader is -1 or an ISR member; the ISR is a subset
// of the replicas, in its previous order; leader_epoch grows exactly when
// the leader changes, partition_epoch exactly when leader or ISR changes.
func ElectLeader(p *messages.PartitionState, live map[int32]bool, allowUnclean bool) (changed bool) {
	leader, isr := p.GetLeader(), p.GetIsr()
	if leader == -1 || !live[leader] {
		leader, isr = electNew(p.GetReplicas(), isr, live, allowUnclean)
	} else {
		isr = liveMembers(isr, live)
	}
	leaderChanged := leader != p.GetLeader()
	isrChanged := !slices.Equal(isr, p.GetIsr())
	if !leaderChanged && !isrChanged {
		return false
	}
	if leaderChanged {
		p.Leader = leader
		p.LeaderEpoch++
	}
	if isrChanged {
		p.Isr = isr
	}
	p.PartitionEpoch++
	return true
}

// electNew picks a leader for a partition whose leader is dead or unset,
// and the ISR to go with it. isr is not modified; the returned ISR is isr
// itself when unchanged.
func electNew(replicas, isr []int32, live map[int32]bool, allowUnclean bool) (int32, []int32) {
	for _, r := range replicas {
		if live[r] && slices.Contains(isr, r) {
			return r, liveMembers(isr, live)
		}
	}
	if allowUnclean {
		for _, r := range replicas {
			if live[r] {
				return r, []int32{r}
			}
		}
	}
	// Offline. No ISR member is alive, so the ISR stays as it is: those
	// hosts hold every committed record, and the first back leads.
	return -1, isr
}

// liveMembers returns the live members of isr, in order: isr itself when
// all are alive, and isr itself too when none is (an ISR never empties).
func liveMembers(isr []int32, live map[int32]bool) []int32 {
	var out []int32
	for _, r := range isr {
		if live[r] {
			out = append(out, r)
		}
	}
	if len(out) == len(isr) || len(out) == 0 {
		return isr
	}
	return out
}
