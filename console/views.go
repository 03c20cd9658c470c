// views.go: the console's data — what each page shows and each JSON
// endpoint returns — built from the cluster's answers. The view structs
// are the JSON shapes the package comment documents.

package console

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/group"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

const (
	// MaxDescribedGroups is how many groups the groups list describes
	// (members, lag); those after it show only their state.
	MaxDescribedGroups = 50
	// offsetParallelism bounds the ListOffsets (and DescribeGroup) calls
	// one request makes at once.
	offsetParallelism = 16
	// maxGroupIDLength bounds a group id taken from a URL.
	maxGroupIDLength = 1024
	// listGroupsTimeout bounds listing the groups.
	listGroupsTimeout = 3 * time.Second
)

// ClusterView is /api/v1/cluster.
type ClusterView struct {
	ControllerID int32 `json:"controller_id"`
	// ControllerName is the controller's host name; "none elected" when
	// there is none, "host N" when its host is not registered.
	ControllerName  string     `json:"controller_name"`
	ControllerEpoch int64      `json:"controller_epoch"`
	Hosts           []HostView `json:"hosts"`
	Topics          int        `json:"topics"`
	Partitions      int        `json:"partitions"`
	UnderReplicated int        `json:"under_replicated"`
	Offline         int        `json:"offline"`
	UnderMinISR     int        `json:"under_min_isr"`
	// Warning: some partition is under-replicated, offline or under its
	// min ISR, or no controller is elected.
	Warning bool `json:"warning"`
}

// HostView is one host of ClusterView; a dead host has only its name and
// id.
type HostView struct {
	Name         string `json:"name"`
	ID           int32  `json:"id"`
	Address      string `json:"address"`
	HTTPAddress  string `json:"http_address"`
	KafkaAddress string `json:"kafka_address"`
	Alive        bool   `json:"alive"`
	// BrokerEpoch is a JSON string: epochs exceed 2^53, where a
	// JavaScript number would round them.
	BrokerEpoch *int64 `json:"broker_epoch,string"`
	Controller  bool   `json:"controller"`
	// Leaders and Replicas count the partitions it leads and holds.
	Leaders  int `json:"leaders"`
	Replicas int `json:"replicas"`
	// EtcdRole is its etcd member's role: "leader", "follower",
	// "learner", "unreachable"; "not a member", "external etcd" or
	// "unknown" (live.go).
	EtcdRole string `json:"etcd_role"`
}

// TopicsView is /api/v1/topics.
type TopicsView struct {
	Topics []TopicSummary `json:"topics"`
	// SizeError names the hosts that did not report their log sizes.
	SizeError string `json:"size_error,omitempty"`
	// SamplePeriodSeconds is the period of the rates and their histories.
	SamplePeriodSeconds float64 `json:"sample_period_seconds"`
}

// TopicSummary is one topic of TopicsView.
type TopicSummary struct {
	Name              string `json:"name"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int32  `json:"replication_factor"`
	UnderReplicated   int    `json:"under_replicated"`
	Offline           int    `json:"offline"`
	UnderMinISR       int    `json:"under_min_isr"`
	// SizeBytes sums the segment bytes of all its replicas that reported
	// one (null: none did); SizePartial: some replica did not (live.go).
	SizeBytes   *int64 `json:"size_bytes"`
	SizePartial bool   `json:"size_partial"`
	// InPerSec and OutPerSec are records produced and consumed per second
	// over the last sample period (null until two samples were taken);
	// InHistory and OutHistory the last rates, oldest first (rates.go).
	InPerSec   *float64  `json:"in_per_sec"`
	OutPerSec  *float64  `json:"out_per_sec"`
	InHistory  []float64 `json:"in_history"`
	OutHistory []float64 `json:"out_history"`
}

// TopicView is /api/v1/topics/{name}.
type TopicView struct {
	Name              string            `json:"name"`
	ReplicationFactor int32             `json:"replication_factor"`
	MinInsyncReplicas int               `json:"min_insync_replicas"`
	Configs           map[string]string `json:"configs"`
	// TotalLogEndOffset sums the known log end offsets: its growth is the
	// produce rate.
	TotalLogEndOffset int64 `json:"total_log_end_offset"`
	// SizeBytes and SizePartial: as TopicSummary's.
	SizeBytes   *int64          `json:"size_bytes"`
	SizePartial bool            `json:"size_partial"`
	Partitions  []PartitionView `json:"partitions"`
}

// PartitionView is one partition of TopicView.
type PartitionView struct {
	Partition   int32 `json:"partition"`
	Leader      int32 `json:"leader"`
	LeaderEpoch int32 `json:"leader_epoch"`
	// LeaderStatus is "available", "unavailable" (its host is gone, the
	// controller has not moved it yet) or "offline" (no leader).
	LeaderStatus    string  `json:"leader_status"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	Adding          []int32 `json:"adding"`
	Removing        []int32 `json:"removing"`
	LogStartOffset  *int64  `json:"log_start_offset"`
	LogEndOffset    *int64  `json:"log_end_offset"`
	UnderReplicated bool    `json:"under_replicated"`
	Offline         bool    `json:"offline"`
	UnderMinISR     bool    `json:"under_min_isr"`
	// SizeBytes is its leader's segment bytes (null: unknown);
	// ReplicasSizeBytes sums those of its replicas that reported one
	// (null: none did); SizePartial: some replica did not.
	SizeBytes         *int64 `json:"size_bytes"`
	ReplicasSizeBytes *int64 `json:"replicas_size_bytes"`
	SizePartial       bool   `json:"size_partial"`
}

// GroupsView is /api/v1/groups.
type GroupsView struct {
	Groups []GroupSummary `json:"groups"`
	// Error: some host did not answer; the list may miss its groups.
	Error string `json:"error,omitempty"`
}

// GroupSummary is one group of GroupsView.
type GroupSummary struct {
	GroupID      string `json:"group_id"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Members      *int   `json:"members"`
	TotalLag     *int64 `json:"total_lag"`
}

// GroupView is /api/v1/groups/{id}.
type GroupView struct {
	GroupID      string        `json:"group_id"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type"`
	Protocol     string        `json:"protocol"`
	Generation   int32         `json:"generation"`
	Leader       string        `json:"leader"`
	Members      []MemberView  `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	// TotalLag sums the known lags.
	TotalLag int64 `json:"total_lag"`
}

// MemberView is one member of GroupView; Assignment is nil while the
// group is not Stable.
type MemberView struct {
	MemberID        string            `json:"member_id"`
	GroupInstanceID string            `json:"group_instance_id"`
	ClientID        string            `json:"client_id"`
	ClientHost      string            `json:"client_host"`
	Assignment      []TopicPartitions `json:"assignment"`
}

// TopicPartitions is a topic and some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupOffset is one partition of GroupView: null offsets are unknown.
type GroupOffset struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset *int64 `json:"committed_offset"`
	LogEndOffset    *int64 `json:"log_end_offset"`
	Lag             *int64 `json:"lag"`
	MemberID        string `json:"member_id"`
	Error           string `json:"error,omitempty"`
}

// partitionHealth classifies p of a topic whose min.insync.replicas is
// minISR.
func partitionHealth(p *messages.PartitionMetadata, minISR int) (underReplicated, offline, underMinISR bool) {
	offline = p.Leader < 0
	underReplicated = len(p.Isr) < len(p.Replicas)
	underMinISR = len(p.Isr) < minISR
	return
}

// minISR is a topic's min.insync.replicas, 1 when it cannot be read.
func minISR(t *messages.TopicMetadataResponse) int {
	n, err := cluster.MinInsyncReplicas(t.Configs)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func (c *Console) cluster(ctx context.Context) (*ClusterView, error) {
	d, err := c.cfg.Cluster.DescribeCluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	md, err := c.cfg.Cluster.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	v := &ClusterView{ControllerID: d.ControllerId, ControllerEpoch: d.ControllerEpoch, Hosts: []HostView{}}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, t := range md.Topics {
		if t.ErrorCode != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			continue
		}
		v.Topics++
		m := minISR(t)
		for _, p := range t.Partitions {
			v.Partitions++
			ur, off, umi := partitionHealth(p, m)
			v.UnderReplicated += b2i(ur)
			v.Offline += b2i(off)
			v.UnderMinISR += b2i(umi)
			if p.Leader >= 0 {
				leaders[p.Leader]++
			}
			for _, r := range p.Replicas {
				replicas[r]++
			}
		}
	}
	for _, h := range d.Hosts {
		epoch := h.BrokerEpoch
		v.Hosts = append(v.Hosts, HostView{
			Name: h.Name, ID: h.HostId, Address: h.AdvertisedAddress, HTTPAddress: h.HttpAddress, KafkaAddress: h.KafkaAddress,
			Alive: true, BrokerEpoch: &epoch, Controller: h.HostId == d.ControllerId,
			Leaders: leaders[h.HostId], Replicas: replicas[h.HostId],
		})
	}
	for _, h := range d.DownHosts {
		v.Hosts = append(v.Hosts, HostView{Name: h.Name, ID: h.HostId, Leaders: leaders[h.HostId], Replicas: replicas[h.HostId]})
	}
	setEtcdRoles(v.Hosts, c.etcdMembers(ctx))
	v.ControllerName = "none elected"
	if v.ControllerID >= 0 {
		v.ControllerName = fmt.Sprintf("host %d", v.ControllerID)
		for _, h := range v.Hosts {
			if h.ID == v.ControllerID && h.Name != "" {
				v.ControllerName = h.Name
			}
		}
	}
	v.Warning = v.UnderReplicated > 0 || v.Offline > 0 || v.UnderMinISR > 0 || v.ControllerID < 0
	return v, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *Console) topics(ctx context.Context) (*TopicsView, error) {
	md, err := c.cfg.Cluster.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	c.rates.touch() // someone views the list: sample its rates (rates.go)
	sizes := c.logSizes(ctx, md.Hosts)
	v := &TopicsView{Topics: []TopicSummary{}, SizeError: sizes.sizeError(), SamplePeriodSeconds: c.cfg.SamplePeriod.Seconds()}
	for _, t := range md.Topics {
		if t.ErrorCode != messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			continue
		}
		s := TopicSummary{Name: t.Name, Internal: t.Name == messages.OffsetsTopic, Partitions: len(t.Partitions), ReplicationFactor: t.ReplicationFactor}
		m := minISR(t)
		var size int64
		known := false
		for _, p := range t.Partitions {
			ur, off, umi := partitionHealth(p, m)
			s.UnderReplicated += b2i(ur)
			s.Offline += b2i(off)
			s.UnderMinISR += b2i(umi)
			if sizes != nil {
				_, n, reported, partial := sizes.partitionSize(t.Name, p)
				size += n
				known = known || reported > 0
				s.SizePartial = s.SizePartial || partial
			}
		}
		if known {
			s.SizeBytes = &size
		}
		s.InPerSec, s.OutPerSec, s.InHistory, s.OutHistory = c.rates.rates(t.Name)
		v.Topics = append(v.Topics, s)
	}
	slices.SortFunc(v.Topics, func(a, b TopicSummary) int { return strings.Compare(a.Name, b.Name) })
	return v, nil
}

// topicMetadata returns one topic's metadata: 400 for a bad name, 404 for
// an unknown topic.
func (c *Console) topicMetadata(ctx context.Context, name string) (*messages.TopicMetadataResponse, error) {
	if err := cluster.ValidateTopicName(name); err != nil {
		return nil, badRequest("topic name: %v", err)
	}
	md, err := c.cfg.Cluster.Metadata(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", name, err)
	}
	for _, t := range md.Topics {
		if t.Name != name {
			continue
		}
		if t.ErrorCode == messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION {
			return nil, notFound("topic %q does not exist", name)
		}
		if err := t.ErrorCode.Err("topic " + name); err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, notFound("topic %q does not exist", name)
}

func (c *Console) topic(ctx context.Context, name string) (*TopicView, error) {
	t, err := c.topicMetadata(ctx, name)
	if err != nil {
		return nil, err
	}
	v := &TopicView{Name: t.Name, ReplicationFactor: t.ReplicationFactor, MinInsyncReplicas: minISR(t), Configs: map[string]string{},
		Partitions: make([]PartitionView, len(t.Partitions))}
	maps.Copy(v.Configs, t.Configs)
	// The sizes (cached, live.go) are asked for beside the offsets.
	sizesc := make(chan *sizeSnapshot, 1)
	go func() { sizesc <- c.logSizes(ctx, nil) }()
	var wg sync.WaitGroup
	sem := make(chan struct{}, offsetParallelism)
	for i, p := range t.Partitions {
		ur, off, umi := partitionHealth(p, v.MinInsyncReplicas)
		v.Partitions[i] = PartitionView{
			Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, LeaderStatus: leaderStatus(p),
			Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.Isr), Adding: orEmpty(p.AddingReplicas), Removing: orEmpty(p.RemovingReplicas),
			UnderReplicated: ur, Offline: off, UnderMinISR: umi,
		}
		if p.Leader < 0 {
			continue
		}
		wg.Add(1)
		go func(pv *PartitionView, p *messages.PartitionMetadata) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// Unknown offsets stay null: the page shows "-", as the CLI does.
			if lo, err := c.cfg.Offsets.ListOffsets(ctx, p, name, messages.EarliestTimestamp); err == nil {
				pv.LogStartOffset = &lo.Offset
			}
			if lo, err := c.cfg.Offsets.ListOffsets(ctx, p, name, messages.LatestTimestamp); err == nil {
				pv.LogEndOffset = &lo.Offset
			}
		}(&v.Partitions[i], p)
	}
	wg.Wait()
	if sizes := <-sizesc; sizes != nil {
		var total int64
		known := false
		for i, p := range t.Partitions {
			pv := &v.Partitions[i]
			leader, n, reported, partial := sizes.partitionSize(name, p)
			pv.SizeBytes, pv.SizePartial = leader, partial
			if reported > 0 {
				pv.ReplicasSizeBytes = &n
				total += n
				known = true
			}
			v.SizePartial = v.SizePartial || partial
		}
		if known {
			v.SizeBytes = &total
		}
	}
	slices.SortFunc(v.Partitions, func(a, b PartitionView) int { return int(a.Partition - b.Partition) })
	for _, p := range v.Partitions {
		if p.LogEndOffset != nil {
			v.TotalLogEndOffset += *p.LogEndOffset
		}
	}
	return v, nil
}

// leaderStatus is the CLI's `topics describe` leader status.
func leaderStatus(p *messages.PartitionMetadata) string {
	switch {
	case p.Leader < 0:
		return "offline"
	case p.ErrorCode == messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE:
		return "unavailable"
	}
	return "available"
}

func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return slices.Clone(xs)
}

func (c *Console) groups(ctx context.Context) (*GroupsView, error) {
	// Listing retries while some host does not answer: bounded, so the
	// page shows what the others listed without waiting for it.
	lctx, cancel := context.WithTimeout(ctx, listGroupsTimeout)
	gs, err := c.cfg.Groups.ListGroups(lctx)
	cancel()
	v := &GroupsView{Groups: []GroupSummary{}}
	if err != nil {
		if errors.Is(err, client.ErrUnreachable) || ctx.Err() != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		v.Error = err.Error() // the hosts that answered: show what they listed
	}
	for _, g := range gs {
		v.Groups = append(v.Groups, GroupSummary{GroupID: g.GroupId, State: g.GroupState, ProtocolType: g.ProtocolType})
	}
	slices.SortFunc(v.Groups, func(a, b GroupSummary) int { return strings.Compare(a.GroupID, b.GroupID) })
	var wg sync.WaitGroup
	sem := make(chan struct{}, offsetParallelism)
	for i := range v.Groups[:min(len(v.Groups), MaxDescribedGroups)] {
		wg.Add(1)
		go func(s *GroupSummary) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			g, err := c.group(ctx, s.GroupID)
			if err != nil {
				return // the row keeps its state; members and lag stay unknown
			}
			n, lag := len(g.Members), g.TotalLag
			s.Members, s.TotalLag = &n, &lag
		}(&v.Groups[i])
	}
	wg.Wait()
	return v, nil
}

// checkGroupID refuses a group id the CLI would refuse, or an absurdly
// long one.
func checkGroupID(id string) error {
	if strings.TrimSpace(id) == "" {
		return badRequest("group id: must not be empty")
	}
	if len(id) > maxGroupIDLength {
		return badRequest("group id: %d bytes, at most %d allowed", len(id), maxGroupIDLength)
	}
	return nil
}

// group is `actorlog groups describe` as a GroupView.
func (c *Console) group(ctx context.Context, id string) (*GroupView, error) {
	if err := checkGroupID(id); err != nil {
		return nil, err
	}
	d, err := c.cfg.Groups.DescribeGroup(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", id, err)
	}
	if d.GroupState == "Dead" {
		return nil, notFound("group %q does not exist", id)
	}
	assigned, err := client.AssignedPartitions(d)
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", id, err)
	}
	var also []*messages.TopicPartitions
	for _, m := range d.Members {
		a := assigned[m.MemberId]
		for _, t := range slices.Sorted(maps.Keys(a)) {
			also = append(also, &messages.TopicPartitions{Topic: t, Partitions: slices.Sorted(slices.Values(a[t]))})
		}
	}
	lags, err := c.cfg.Groups.GroupLag(ctx, id, also...)
	if err != nil {
		return nil, fmt.Errorf("lag of group %q: %w", id, err)
	}
	return newGroupView(d, assigned, lags), nil
}

// newGroupView is d with its members' assignments and its partitions'
// lags, as `groups describe --output json` shows them.
func newGroupView(d *messages.DescribedGroup, assigned map[string]group.Assignment, lags []client.PartitionLag) *GroupView {
	v := &GroupView{GroupID: d.GroupId, State: d.GroupState, ProtocolType: d.ProtocolType, Protocol: d.ProtocolData,
		Generation: d.GenerationId, Leader: d.Leader, Members: []MemberView{}, Offsets: []GroupOffset{}}
	owner := map[string]string{}
	for _, m := range d.Members {
		mv := MemberView{MemberID: m.MemberId, GroupInstanceID: m.GroupInstanceId, ClientID: m.ClientId, ClientHost: m.ClientHost}
		a := assigned[m.MemberId]
		parts := []TopicPartitions{}
		for _, t := range slices.Sorted(maps.Keys(a)) {
			ps := slices.Sorted(slices.Values(a[t]))
			parts = append(parts, TopicPartitions{Topic: t, Partitions: ps})
			for _, p := range ps {
				owner[fmt.Sprintf("%s-%d", t, p)] = m.MemberId
			}
		}
		if d.GroupState == "Stable" {
			mv.Assignment = parts
		}
		v.Members = append(v.Members, mv)
	}
	for _, l := range lags {
		o := GroupOffset{Topic: l.Topic, Partition: l.Partition, CommittedOffset: known(l.Committed), LogEndOffset: known(l.LogEnd),
			Lag: known(l.Lag), MemberID: owner[fmt.Sprintf("%s-%d", l.Topic, l.Partition)]}
		if l.Err != nil {
			o.Error = l.Err.Error()
		}
		if l.Lag > 0 {
			v.TotalLag += l.Lag
		}
		v.Offsets = append(v.Offsets, o)
	}
	return v
}

// known is n, nil when it is -1 (unknown).
func known(n int64) *int64 {
	if n < 0 {
		return nil
	}
	return &n
}
