// kafkaadmin_test.go: the Kafka listener's admin APIs against a real
// in-process host, over its local broker and controller: kadm creates
// several topics (one with a bad name refused on its own, the others
// created; validate_only creates nothing; -1 takes the defaults) and the
// broker's own metadata shows them; partitions are added (validate_only
// adds none); topics are deleted; kcat -L sees a kadm-created topic.
// DescribeConfigs shows every key with its default or override;
// AlterConfigs and IncrementalAlterConfigs change retention.ms, and a bad
// value is refused and changes nothing; broker resources describe the
// topic settings and are refused for alters. DescribeCluster lists the
// host.

package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage"
)

// kafkaAdminHost starts a host with a Kafka listener on a free port and
// returns it with a kadm client, once Kafka metadata lists it.
func kafkaAdminHost(t *testing.T) (*Host, *kadm.Client) {
	t.Helper()
	h := startTestHost(t, func(c *Config) { c.KafkaListen = "127.0.0.1:0" })
	adm := kafkaAdmin(t, h.KafkaAddress())
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		if len(md.Brokers) != 1 {
			return fmt.Errorf("brokers %v", md.Brokers)
		}
		return nil
	})
	return h, adm
}

// kafkaNativeTopics asks the host's broker (actorlog's own metadata path) for
// topics; unknown ones are absent from the map.
func kafkaNativeTopics(t *testing.T, h *Host, names ...string) map[string]*messages.TopicMetadataResponse {
	t.Helper()
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	res, err := h.system.Root.RequestFuture(brk, &messages.MetadataRequest{Topics: names}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("broker metadata: %v", err)
	}
	md, ok := res.(*messages.MetadataResponse)
	if !ok {
		t.Fatalf("broker answered %T", res)
	}
	out := map[string]*messages.TopicMetadataResponse{}
	for _, tm := range md.Topics {
		if tm.ErrorCode == messages.ErrorCode_ERROR_CODE_UNSPECIFIED {
			out[tm.Name] = tm
		}
	}
	return out
}

// kafkaAdminCtx is a context for one admin call.
func kafkaAdminCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestKafkaAdminTopics(t *testing.T) {
	h, adm := kafkaAdminHost(t)
	id := h.hostID.Load()

	// validate_only: answered, nothing created.
	vr, err := adm.ValidateCreateTopics(kafkaAdminCtx(t), 3, 1, nil, "checked", "bad/name")
	if err != nil {
		t.Fatalf("validate create: %v", err)
	}
	if r := vr["checked"]; r.Err != nil || r.NumPartitions != 3 || r.ReplicationFactor != 1 {
		t.Fatalf("validate checked: %+v", r)
	}
	if r := vr["bad/name"]; !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("validate bad/name: %+v, want INVALID_TOPIC_EXCEPTION", r)
	}
	if r, err := adm.ValidateCreateTopics(kafkaAdminCtx(t), 1, 2, nil, "rf2"); err != nil || !errors.Is(r["rf2"].Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("validate rf 2 on 1 host: %+v %v, want INVALID_REPLICATION_FACTOR", r, err)
	}

	// Several topics, one bad name: refused alone, the others created.
	ret := "3600000"
	cr, err := adm.CreateTopics(kafkaAdminCtx(t), 3, 1, map[string]*string{"retention.ms": &ret}, "orders", "events", "bad/name")
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}
	for _, name := range []string{"orders", "events"} {
		r := cr[name]
		if r.Err != nil || r.NumPartitions != 3 || r.ReplicationFactor != 1 || r.ID == (kadm.TopicID{}) {
			t.Fatalf("create %s: %+v", name, r)
		}
		if c := r.Configs["retention.ms"]; c.Value == nil || *c.Value != ret || c.Source != 1 {
			t.Fatalf("create %s: retention.ms %+v, want %s from the topic", name, c, ret)
		}
		if c := r.Configs["segment.bytes"]; c.Value == nil || *c.Value != "1073741824" || c.Source != 5 {
			t.Fatalf("create %s: segment.bytes %+v, want the default", name, c)
		}
	}
	if r := cr["bad/name"]; !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("create bad/name: %+v, want INVALID_TOPIC_EXCEPTION", r)
	}
	// -1 takes the host's defaults; an existing name is refused.
	if r, err := adm.CreateTopics(kafkaAdminCtx(t), -1, -1, nil, "defaults"); err != nil || r["defaults"].Err != nil || r["defaults"].NumPartitions != 1 || r["defaults"].ReplicationFactor != 1 {
		t.Fatalf("create with defaults: %+v %v", r, err)
	}
	if r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, nil, "orders"); err != nil || !errors.Is(r["orders"].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("create orders again: %+v %v, want TOPIC_ALREADY_EXISTS", r, err)
	}
	if r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, "badconfig"); err != nil || !errors.Is(r["badconfig"].Err, kerr.InvalidConfig) {
		t.Fatalf("create with a bad config: %+v %v, want INVALID_CONFIG", r, err)
	}

	// actorlog's own view.
	clustertest.WaitFor(t, 10*time.Second, func() error {
		got := kafkaNativeTopics(t, h, "orders", "events", "defaults", "checked", "badconfig")
		switch {
		case got["orders"] == nil || len(got["orders"].Partitions) != 3 || got["orders"].Configs["retention.ms"] != ret:
			return fmt.Errorf("orders: %v", got["orders"])
		case got["events"] == nil || len(got["events"].Partitions) != 3:
			return fmt.Errorf("events: %v", got["events"])
		case got["defaults"] == nil || len(got["defaults"].Partitions) != 1:
			return fmt.Errorf("defaults: %v", got["defaults"])
		case got["checked"] != nil || got["badconfig"] != nil:
			return fmt.Errorf("validate-only or refused topics exist: %v", got)
		}
		return nil
	})

	// CreatePartitions: validate_only adds none; then 3 -> 5.
	if r, err := adm.ValidateUpdatePartitions(kafkaAdminCtx(t), 5, "orders"); err != nil || r["orders"].Err != nil {
		t.Fatalf("validate update partitions: %+v %v", r, err)
	}
	if r, err := adm.ValidateUpdatePartitions(kafkaAdminCtx(t), 2, "orders"); err != nil || !errors.Is(r["orders"].Err, kerr.InvalidPartitions) {
		t.Fatalf("validate shrinking: %+v %v, want INVALID_PARTITIONS", r, err)
	}
	if n := len(kafkaNativeTopics(t, h, "orders")["orders"].Partitions); n != 3 {
		t.Fatalf("validate-only added partitions: %d", n)
	}
	if r, err := adm.UpdatePartitions(kafkaAdminCtx(t), 5, "orders"); err != nil || r["orders"].Err != nil {
		t.Fatalf("update partitions: %+v %v", r, err)
	}
	if r, err := adm.UpdatePartitions(kafkaAdminCtx(t), 5, "orders"); err != nil || !errors.Is(r["orders"].Err, kerr.InvalidPartitions) {
		t.Fatalf("update partitions again: %+v %v, want INVALID_PARTITIONS", r, err)
	}
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		td := md.Topics["orders"]
		if len(td.Partitions) != 5 {
			return fmt.Errorf("orders has %d partitions", len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if p.Leader != id {
				return fmt.Errorf("orders-%d led by %d", p.Partition, p.Leader)
			}
		}
		return nil
	})
	if kcat, err := exec.LookPath("kcat"); err == nil {
		kcatLists(t, kcat, h.KafkaAddress(), "orders", 5, id)
	} else {
		t.Log("kcat not installed: kcat -L not checked")
	}

	// DeleteTopics: one deleted, an unknown one refused on its own.
	dr, err := adm.DeleteTopics(kafkaAdminCtx(t), "events", "nosuch")
	if err != nil {
		t.Fatalf("delete topics: %v", err)
	}
	if r := dr["events"]; r.Err != nil {
		t.Fatalf("delete events: %+v", r)
	}
	if r := dr["nosuch"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete nosuch: %+v, want UNKNOWN_TOPIC_OR_PARTITION", r)
	}
	clustertest.WaitFor(t, 20*time.Second, func() error {
		if got := kafkaNativeTopics(t, h, "events"); got["events"] != nil {
			return errors.New("events still listed")
		}
		return nil
	})
}

// kafkaTopicConfig returns key's config of topic from DescribeConfigs.
func kafkaTopicConfig(t *testing.T, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(kafkaAdminCtx(t), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("describe configs of %s: no %s in %v", topic, key, rc.Configs)
	return kadm.Config{}
}

func TestKafkaAdminConfigs(t *testing.T) {
	h, adm := kafkaAdminHost(t)
	if r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "conf"); err != nil || r["conf"].Err != nil {
		t.Fatalf("create: %+v %v", r, err)
	}

	// Every key, defaults and the override.
	rcs, err := adm.DescribeTopicConfigs(kafkaAdminCtx(t), "conf", "nosuch")
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	rc, err := rcs.On("conf", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe conf: %v %v", err, rc.Err)
	}
	want := map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"retention.ms":                   {"3600000", kmsg.ConfigSourceDynamicTopicConfig},
		"retention.bytes":                {"-1", kmsg.ConfigSourceDefaultConfig},
		"segment.bytes":                  {"1073741824", kmsg.ConfigSourceDefaultConfig},
		"segment.ms":                     {"604800000", kmsg.ConfigSourceDefaultConfig},
		"max.message.bytes":              {"1048576", kmsg.ConfigSourceDefaultConfig},
		"flush.policy":                   {"never", kmsg.ConfigSourceDefaultConfig},
		"min.insync.replicas":            {"1", kmsg.ConfigSourceDefaultConfig},
		"message.timestamp.type":         {"CreateTime", kmsg.ConfigSourceDefaultConfig},
		"unclean.leader.election.enable": {"false", kmsg.ConfigSourceDefaultConfig},
		"cleanup.policy":                 {"delete", kmsg.ConfigSourceDefaultConfig},
		"min.cleanable.dirty.ratio":      {"0.5", kmsg.ConfigSourceDefaultConfig},
		"min.compaction.lag.ms":          {"0", kmsg.ConfigSourceDefaultConfig},
		"max.compaction.lag.ms":          {"9223372036854775807", kmsg.ConfigSourceDefaultConfig},
		"delete.retention.ms":            {"86400000", kmsg.ConfigSourceDefaultConfig},
	}
	if len(rc.Configs) != len(want) {
		t.Fatalf("described %d configs, want %d: %+v", len(rc.Configs), len(want), rc.Configs)
	}
	for _, c := range rc.Configs {
		w, ok := want[c.Key]
		if !ok || c.MaybeValue() != w.value || c.Source != w.source || c.Sensitive {
			t.Errorf("config %s = %q from %v (sensitive %v), want %q from %v", c.Key, c.MaybeValue(), c.Source, c.Sensitive, w.value, w.source)
		}
	}
	for _, c := range rc.Configs {
		if c.Key != "retention.ms" {
			continue
		}
		if len(c.Synonyms) != 2 || c.Synonyms[1].Value == nil || *c.Synonyms[1].Value != "604800000" || c.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("retention.ms synonyms %+v, want the override then the default", c.Synonyms)
		}
	}
	if rc, err := rcs.On("nosuch", nil); err != nil || !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("describe nosuch: %v %+v, want UNKNOWN_TOPIC_OR_PARTITION", err, rc)
	}
	// Broker resources: the host's topic settings, at their defaults.
	brs, err := adm.DescribeBrokerConfigs(kafkaAdminCtx(t), h.hostID.Load())
	if err != nil || len(brs) != 1 || brs[0].Err != nil || len(brs[0].Configs) != 3 {
		t.Fatalf("describe broker configs: %+v %v, want the three topic settings", brs, err)
	}
	for _, c := range brs[0].Configs {
		want := map[string]string{"auto.create.topics.enable": "false", "num.partitions": "1", "default.replication.factor": "1"}[c.Key]
		if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("broker config %s: %+v, want %q from the defaults", c.Key, c, want)
		}
	}

	// IncrementalAlterConfigs: set retention.ms, keep the rest.
	if r, err := adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kadm.StringPtr("1")}}, "conf"); err != nil || r[0].Err != nil {
		t.Fatalf("incremental alter min.insync.replicas: %+v %v", r, err)
	}
	if r, err := adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, "conf"); err != nil || r[0].Err != nil {
		t.Fatalf("incremental alter retention.ms: %+v %v", r, err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		got := kafkaNativeTopics(t, h, "conf")["conf"]
		if got == nil || got.Configs["retention.ms"] != "7200000" || got.Configs["min.insync.replicas"] != "1" {
			return fmt.Errorf("conf configs %v", got.GetConfigs())
		}
		return nil
	})
	if c := kafkaTopicConfig(t, adm, "conf", "retention.ms"); c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after the alter: %+v", c)
	}
	// A bad value is refused and changes nothing; so is validate-only.
	if r, err := adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("-5")}}, "conf"); err != nil || !errors.Is(r[0].Err, kerr.InvalidConfig) {
		t.Fatalf("incremental alter to a bad value: %+v %v, want INVALID_CONFIG", r, err)
	}
	if r, err := adm.AlterTopicConfigsState(kafkaAdminCtx(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("forever")}}, "conf"); err != nil || !errors.Is(r[0].Err, kerr.InvalidConfig) {
		t.Fatalf("alter to a bad value: %+v %v, want INVALID_CONFIG", r, err)
	}
	if r, err := adm.ValidateAlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "conf"); err != nil || r[0].Err != nil {
		t.Fatalf("validate alter: %+v %v", r, err)
	}
	if c := kafkaTopicConfig(t, adm, "conf", "retention.ms"); c.MaybeValue() != "7200000" {
		t.Fatalf("retention.ms after refused and validate-only alters: %+v", c)
	}
	if got := kafkaNativeTopics(t, h, "conf")["conf"]; got.Configs["retention.ms"] != "7200000" {
		t.Fatalf("native retention.ms after refused alters: %v", got.Configs)
	}

	// AlterConfigs replaces the overrides: min.insync.replicas goes back
	// to its default.
	if r, err := adm.AlterTopicConfigsState(kafkaAdminCtx(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("60000")}}, "conf"); err != nil || r[0].Err != nil {
		t.Fatalf("alter configs: %+v %v", r, err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		got := kafkaNativeTopics(t, h, "conf")["conf"]
		if _, ok := got.GetConfigs()["min.insync.replicas"]; got == nil || got.Configs["retention.ms"] != "60000" || ok {
			return fmt.Errorf("conf configs %v", got.GetConfigs())
		}
		return nil
	})
	if c := kafkaTopicConfig(t, adm, "conf", "min.insync.replicas"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("min.insync.replicas after the replace: %+v", c)
	}
	// Incremental DELETE: back to the default.
	if r, err := adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "conf"); err != nil || r[0].Err != nil {
		t.Fatalf("incremental delete: %+v %v", r, err)
	}
	if c := kafkaTopicConfig(t, adm, "conf", "retention.ms"); c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms after the delete: %+v", c)
	}

	// Broker configs cannot be altered.
	if r, err := adm.AlterBrokerConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("1")}}, h.hostID.Load()); err != nil || !errors.Is(r[0].Err, kerr.InvalidRequest) {
		t.Fatalf("alter broker configs: %+v %v, want INVALID_REQUEST", r, err)
	}
}

func TestKafkaAdminDescribeCluster(t *testing.T) {
	h, _ := kafkaAdminHost(t)
	cl := kafkaClient(t, h.KafkaAddress())
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		var resp *kmsg.DescribeClusterResponse
		clustertest.WaitFor(t, 20*time.Second, func() error {
			var err error
			resp, err = req.RequestWith(kafkaAdminCtx(t), cl)
			switch {
			case err != nil:
				return err
			case resp.ControllerID != h.hostID.Load():
				return fmt.Errorf("controller %d", resp.ControllerID)
			}
			return nil
		})
		if len(resp.Brokers) != 1 {
			t.Fatalf("describe cluster v%d: brokers %+v, want this host", v, resp.Brokers)
		}
		addr := fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port)
		if resp.ErrorCode != 0 || resp.ClusterID != h.ClusterID() || resp.Brokers[0].NodeID != h.hostID.Load() || addr != h.KafkaAddress() {
			t.Fatalf("describe cluster v%d: %+v, want cluster %s, broker %d at %s", v, resp, h.ClusterID(), h.hostID.Load(), h.KafkaAddress())
		}
	}
}

// TestKafkaTopicConfigDefaults: every key the cluster knows has a default that
// the cluster accepts as a value, and the defaults mean what storage
// takes for an absent key.
func TestKafkaTopicConfigDefaults(t *testing.T) {
	for _, k := range cluster.TopicConfigKeys() {
		v, ok := topicConfigDefaults[k]
		if !ok {
			t.Errorf("no default for %s", k)
			continue
		}
		if err := cluster.ValidateTopicConfigs(map[string]string{k: v}); err != nil {
			t.Errorf("default %s=%s refused: %v", k, v, err)
		}
	}
	if len(topicConfigDefaults) != len(cluster.TopicConfigKeys()) {
		t.Errorf("defaults for %d keys, the cluster knows %d", len(topicConfigDefaults), len(cluster.TopicConfigKeys()))
	}
	explicit, err := cluster.StorageConfig(topicConfigDefaults)
	if err != nil {
		t.Fatalf("storage config of the defaults: %v", err)
	}
	if explicit.Retention != storage.DefaultRetention || explicit.RetentionBytes != storage.DefaultRetentionBytes ||
		explicit.SegmentBytes != storage.DefaultSegmentBytes || explicit.SegmentAge != storage.DefaultSegmentAge ||
		explicit.MaxMessageBytes != storage.DefaultMaxMessageBytes || explicit.Flush != (storage.FlushPolicy{}) || explicit.LogAppendTime {
		t.Errorf("the defaults differ from storage's: %+v", explicit)
	}
	entries := topicConfigEntries(map[string]string{cluster.ConfigRetentionMs: "5"})
	for _, e := range entries {
		if (e.Name == cluster.ConfigRetentionMs) == e.Default || e.ReadOnly {
			t.Errorf("entry %+v", e)
		}
	}
}

// TestKafkaPartitionAdmin drives ElectLeaders, AlterPartitionAssignments
// and ListPartitionReassignments through kadm against one host: its
// partitions are led by their preferred (only) replica, so elections are
// ELECTION_NOT_NEEDED; unknown partitions are UNKNOWN_TOPIC_OR_PARTITION;
// unclean elections are refused; bad replica lists are
// INVALID_REPLICA_ASSIGNMENT; reassigning to the current replicas
// succeeds and changes nothing; cancelling with nothing in progress is
// NO_REASSIGNMENT_IN_PROGRESS; nothing is listed as being reassigned.
func TestKafkaPartitionAdmin(t *testing.T) {
	h, adm := kafkaAdminHost(t)
	id := h.hostID.Load()
	if r, err := adm.CreateTopics(kafkaAdminCtx(t), 2, 1, nil, "moves"); err != nil || r["moves"].Err != nil {
		t.Fatalf("create moves: %+v %v", r, err)
	}
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		for _, p := range md.Topics["moves"].Partitions {
			if p.Leader != id {
				return fmt.Errorf("moves/%d leader %d", p.Partition, p.Leader)
			}
		}
		if len(md.Topics["moves"].Partitions) != 2 {
			return fmt.Errorf("moves: %+v", md.Topics["moves"])
		}
		return nil
	})

	// ElectLeaders: named partitions, then all of them.
	er, err := adm.ElectLeaders(kafkaAdminCtx(t), kadm.ElectPreferredReplica, kadm.TopicsSet{"moves": {0: {}, 1: {}, 5: {}}, "nosuch": {0: {}}})
	if err != nil {
		t.Fatalf("elect leaders: %v", err)
	}
	for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 5: kerr.UnknownTopicOrPartition} {
		if r := er["moves"][p]; !errors.Is(r.Err, want) {
			t.Errorf("elect moves/%d: %+v, want %v", p, r, want)
		}
	}
	if r := er["nosuch"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("elect nosuch/0: %+v, want UNKNOWN_TOPIC_OR_PARTITION", r)
	}
	if all, err := adm.ElectLeaders(kafkaAdminCtx(t), kadm.ElectPreferredReplica, nil); err != nil || len(all["moves"]) != 0 {
		t.Fatalf("elect all: %+v %v, want the led partitions left out", all, err)
	}
	if r, err := adm.ElectLeaders(kafkaAdminCtx(t), kadm.ElectLiveReplica, kadm.TopicsSet{"moves": {0: {}}}); err != nil ||
		!errors.Is(r["moves"][0].Err, kerr.InvalidRequest) || r["moves"][0].ErrMessage == "" {
		t.Fatalf("unclean election: %+v %v, want INVALID_REQUEST with a reason", r, err)
	}

	// AlterPartitionAssignments: one partition per request (all or nothing).
	for _, tc := range []struct {
		name     string
		replicas []int32
		want     error
	}{
		{"duplicate host", []int32{id, id}, kerr.InvalidReplicaAssignment},
		{"unknown host", []int32{id + 40}, kerr.InvalidReplicaAssignment},
		{"empty list", []int32{}, kerr.InvalidReplicaAssignment},
		{"replication factor change", []int32{id, id + 40}, kerr.InvalidReplicaAssignment},
		{"cancel with none in progress", nil, kerr.NoReassignmentInProgress},
		{"the current replicas", []int32{id}, nil},
	} {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign("moves", 0, tc.replicas)
		r, err := adm.AlterPartitionAssignments(kafkaAdminCtx(t), req)
		if err != nil || !errors.Is(r["moves"][0].Err, tc.want) || (tc.want == nil) != (r["moves"][0].Err == nil) {
			t.Errorf("reassign %s: %+v %v, want %v", tc.name, r, err, tc.want)
		}
	}
	var two kadm.AlterPartitionAssignmentsReq
	two.Assign("moves", 0, []int32{id})
	two.Assign("moves", 1, []int32{id, id})
	two.Assign("nosuch", 0, []int32{id})
	r, err := adm.AlterPartitionAssignments(kafkaAdminCtx(t), two)
	if err != nil || !errors.Is(r["moves"][0].Err, kerr.InvalidRequest) || !errors.Is(r["moves"][1].Err, kerr.InvalidReplicaAssignment) ||
		!errors.Is(r["nosuch"][0].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("reassign two partitions, one bad: %+v %v", r, err)
	}
	if got := kafkaNativeTopics(t, h, "moves")["moves"]; got == nil || len(got.Partitions) != 2 || len(got.Partitions[0].Replicas) != 1 {
		t.Fatalf("moves after the reassignments: %+v", got)
	}

	// Nothing is being reassigned.
	lr, err := adm.ListPartitionReassignments(kafkaAdminCtx(t), kadm.TopicsSet{"moves": {0: {}, 1: {}}, "nosuch": {0: {}}})
	if err != nil || len(lr) != 0 {
		t.Fatalf("list reassignments: %+v %v, want none", lr, err)
	}
}

// kcatProduce produces one record to topic with kcat (skipping the test
// when kcat is not installed); a topic that stays unknown fails it
// within a few seconds.
func kcatProduce(t *testing.T, addr, topic string) (string, error) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-P", "-b", addr, "-t", topic,
		"-X", "topic.metadata.propagation.max.ms=1000", "-X", "message.timeout.ms=10000")
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKafkaAutoCreateTopicsKcat produces with kcat to a topic that does
// not exist on a host with AutoCreateTopics: it is created with
// NumPartitions partitions and the record lands; an internal ("__") name
// is not created. DescribeConfigs reports the settings.
func TestKafkaAutoCreateTopicsKcat(t *testing.T) {
	produce := func(addr, topic string) (string, error) { return kcatProduce(t, addr, topic) }
	on := startTestHost(t, func(c *Config) {
		c.KafkaListen, c.AutoCreateTopics, c.NumPartitions = "127.0.0.1:0", true, 3
	})
	adm := kafkaAdmin(t, on.KafkaAddress())
	waitKafkaMetadata(t, adm, func(md kadm.Metadata) error {
		if len(md.Brokers) != 1 {
			return fmt.Errorf("brokers %v", md.Brokers)
		}
		return nil
	})
	if out, err := produce(on.KafkaAddress(), "newtopic"); err != nil {
		t.Fatalf("kcat -P to a new topic with auto-creation on: %v\n%s", err, out)
	}
	got := kafkaNativeTopics(t, on, "newtopic")["newtopic"]
	if got == nil || len(got.Partitions) != 3 || got.ReplicationFactor != 1 {
		t.Fatalf("newtopic: %+v, want 3 partitions, replication factor 1", got)
	}
	offs, err := adm.ListEndOffsets(kafkaAdminCtx(t), "newtopic")
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	var records int64
	offs.Each(func(o kadm.ListedOffset) { records += o.Offset })
	if records != 1 {
		t.Fatalf("newtopic holds %d records, want 1", records)
	}
	brs, err := adm.DescribeBrokerConfigs(kafkaAdminCtx(t), on.hostID.Load())
	if err != nil || len(brs) != 1 {
		t.Fatalf("describe broker configs: %+v %v", brs, err)
	}
	for _, c := range brs[0].Configs {
		if c.Key == "auto.create.topics.enable" && (c.Value == nil || *c.Value != "true" || c.Source != kmsg.ConfigSourceStaticBrokerConfig) ||
			c.Key == "num.partitions" && (c.Value == nil || *c.Value != "3") {
			t.Errorf("broker config %+v", c)
		}
	}
	// Internal names are never auto-created.
	if _, err := produce(on.KafkaAddress(), "__private"); err == nil || kafkaNativeTopics(t, on, "__private")["__private"] != nil {
		t.Fatalf("kcat -P to __private: err %v; the topic must not be created", err)
	}
}

// TestKafkaAutoCreateTopicsOffKcat: without AutoCreateTopics (the
// default), kcat producing to an unknown topic fails naming it, and no
// topic is created.
func TestKafkaAutoCreateTopicsOffKcat(t *testing.T) {
	off := startTestHost(t, func(c *Config) { c.KafkaListen = "127.0.0.1:0" })
	out, err := kcatProduce(t, off.KafkaAddress(), "newtopic")
	if err == nil || !strings.Contains(strings.ToLower(out), "unknown topic") {
		t.Fatalf("kcat -P with auto-creation off: %v\n%s\nwant a failure naming the unknown topic", err, out)
	}
	if got := kafkaNativeTopics(t, off, "newtopic")["newtopic"]; got != nil {
		t.Fatalf("newtopic was created with auto-creation off: %+v", got)
	}
}

// TestKafkaAutoCreateReplicationFactor: a host whose
// DefaultReplicationFactor needs more live hosts than there are answers a
// Metadata request that would auto-create a topic with
// INVALID_REPLICATION_FACTOR, as Kafka does, and creates nothing; a v4+
// request that does not allow auto-creation gets UNKNOWN_TOPIC_OR_PARTITION.
func TestKafkaAutoCreateReplicationFactor(t *testing.T) {
	h := startTestHost(t, func(c *Config) {
		c.KafkaListen, c.AutoCreateTopics, c.DefaultReplicationFactor = "127.0.0.1:0", true, 3
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddress()))
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	for _, allow := range []bool{true, false} {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = allow
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("wide")
		req.Topics = append(req.Topics, rt)
		var resp *kmsg.MetadataResponse
		clustertest.WaitFor(t, 20*time.Second, func() error {
			var err error
			resp, err = req.RequestWith(kafkaAdminCtx(t), cl)
			if err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			return nil
		})
		want := kerr.InvalidReplicationFactor.Code
		if !allow {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != want {
			t.Fatalf("metadata (allow %v): %+v, want code %d", allow, resp.Topics, want)
		}
	}
	if got := kafkaNativeTopics(t, h, "wide")["wide"]; got != nil {
		t.Fatalf("wide was created: %+v", got)
	}
}
