// kafkacompact_test.go: the compaction topic configs and the key rule of
// compacted topics over the Kafka protocol, against a real in-process host:
// CreateTopics takes cleanup.policy (any order, stored and described as
// "compact,delete") and the other compaction keys, refuses bad values with
// INVALID_CONFIG (create, incremental and full alter); DescribeConfigs shows
// every compaction key with Kafka's default, type and source; and kgo
// (idempotent, acks=all) producing a record without a key to a compacted
// topic gets INVALID_RECORD with nothing appended, while keyed records (an
// empty key too) and keyless records to a delete topic are written.

package host

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/cluster/clustertest"
)

func TestKafkaCompactionConfigs(t *testing.T) {
	h, adm := kafkaAdminHost(t)
	r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("delete,compact"), "delete.retention.ms": kadm.StringPtr("0"),
	}, "ccfg")
	if err != nil || r["ccfg"].Err != nil {
		t.Fatalf("create: %+v %v", r, err)
	}
	want := map[string]struct {
		value  string
		source kmsg.ConfigSource
		typ    kmsg.ConfigType
	}{
		"cleanup.policy":            {"compact,delete", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeList},
		"delete.retention.ms":       {"0", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeLong},
		"min.cleanable.dirty.ratio": {"0.5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeDouble},
		"min.compaction.lag.ms":     {"0", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong},
		"max.compaction.lag.ms":     {"9223372036854775807", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong},
	}
	for k, w := range want {
		c := kafkaTopicConfig(t, adm, "ccfg", k)
		if c.MaybeValue() != w.value || c.Source != w.source {
			t.Errorf("%s = %q from %v, want %q from %v", k, c.MaybeValue(), c.Source, w.value, w.source)
		}
	}
	// Types (DescribeConfigs v3+), straight from the protocol.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "ccfg"
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(kafkaAdminCtx(t), kafkaClient(t, h.KafkaAddress()))
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("describe configs: %+v %v", resp, err)
	}
	seen := 0
	for _, c := range resp.Resources[0].Configs {
		if w, ok := want[c.Name]; ok {
			seen++
			if c.ConfigType != w.typ {
				t.Errorf("%s: type %v, want %v", c.Name, c.ConfigType, w.typ)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("described %d of the %d compaction keys", seen, len(want))
	}

	// Bad values: INVALID_CONFIG everywhere, and nothing changes.
	bad := map[string]string{
		"cleanup.policy": "retain", "min.cleanable.dirty.ratio": "1.5", "min.compaction.lag.ms": "-1",
		"max.compaction.lag.ms": "0", "delete.retention.ms": "-1",
	}
	for k, v := range bad {
		r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{k: kadm.StringPtr(v)}, "cbad")
		if err != nil || !errors.Is(r["cbad"].Err, kerr.InvalidConfig) || !strings.Contains(r["cbad"].ErrMessage, k) {
			t.Errorf("create with %s=%s: %+v %v, want INVALID_CONFIG naming the key", k, v, r["cbad"], err)
		}
		ar, err := adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}}, "ccfg")
		if err != nil || !errors.Is(ar[0].Err, kerr.InvalidConfig) {
			t.Errorf("incremental alter to %s=%s: %+v %v, want INVALID_CONFIG", k, v, ar, err)
		}
	}
	ar, err := adm.AlterTopicConfigsState(kafkaAdminCtx(t), []kadm.AlterConfig{
		{Name: "min.compaction.lag.ms", Value: kadm.StringPtr("2000")}, {Name: "max.compaction.lag.ms", Value: kadm.StringPtr("1000")},
	}, "ccfg")
	if err != nil || !errors.Is(ar[0].Err, kerr.InvalidConfig) {
		t.Errorf("alter to max.compaction.lag.ms below min.compaction.lag.ms: %+v %v, want INVALID_CONFIG", ar, err)
	}
	if c := kafkaTopicConfig(t, adm, "ccfg", "cleanup.policy"); c.MaybeValue() != "compact,delete" {
		t.Fatalf("cleanup.policy after refused alters: %+v", c)
	}
	// A valid incremental alter is normalized too.
	ar, err = adm.AlterTopicConfigs(kafkaAdminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr(" compact ")}}, "ccfg")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter cleanup.policy: %+v %v", ar, err)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		if got := kafkaNativeTopics(t, h, "ccfg")["ccfg"]; got.GetConfigs()["cleanup.policy"] != "compact" {
			return fmt.Errorf("ccfg configs %v", got.GetConfigs())
		}
		return nil
	})
}

func TestKafkaCompactedTopicRefusesKeylessRecords(t *testing.T) {
	h, adm := kafkaAdminHost(t)
	for topic, policy := range map[string]string{"compacted": "compact", "both": "compact,delete", "plain": "delete"} {
		if r, err := adm.CreateTopics(kafkaAdminCtx(t), 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr(policy)}, topic); err != nil || r[topic].Err != nil {
			t.Fatalf("create %s: %+v %v", topic, r, err)
		}
	}
	cl := kafkaClient(t, h.KafkaAddress(), kgo.RecordRetries(3))
	for _, topic := range []string{"compacted", "both"} {
		ctx, cancel := context30s()
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("no key")})
		cancel()
		if err := res.FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("%s: keyless produce: %v, want INVALID_RECORD", topic, err)
		}
		// Keyed records, an empty key among them, are written by the same
		// idempotent client (from offset 0: the refused record took none,
		// nor any sequence number).
		keyed := []*kgo.Record{{Topic: topic, Key: []byte("k"), Value: []byte("v1")}, {Topic: topic, Key: []byte{}, Value: []byte("v2")}}
		produceAll(t, cl, keyed)
		if keyed[0].Offset != 0 || keyed[1].Offset != 1 {
			t.Fatalf("%s: keyed records at offsets %d, %d; want 0, 1", topic, keyed[0].Offset, keyed[1].Offset)
		}
		got := nativeRead(t, h, topic, 0, 2)
		if len(got) != 2 || string(got[0].Key) != "k" || got[1].Key == nil || string(got[1].Value) != "v2" {
			t.Fatalf("%s: log holds %+v", topic, got)
		}
	}
	plain := []*kgo.Record{{Topic: "plain", Value: []byte("no key")}}
	produceAll(t, kafkaClient(t, h.KafkaAddress()), plain)
	if plain[0].Offset != 0 {
		t.Fatalf("plain: keyless record at %d", plain[0].Offset)
	}
}
