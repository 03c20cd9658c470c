// autocreate_test.go: topic auto-creation by Metadata (Config.Topics) and
// the broker configs DescribeConfigs reports. Over the wire against the
// fake backends: with auto-creation on, v0-3 requests always and v4+
// requests only with allow_auto_topic_creation create an unknown topic
// through AdminBackend.CreateTopic with the defaults (-1) and answer
// LEADER_NOT_AVAILABLE; invalid names, "__" names and known topics are
// never created; with it off nothing is. The BROKER resource reports
// auto.create.topics.enable, num.partitions and default.replication.factor
// with their values and sources. Config validation refuses auto-creation
// without an admin backend and negative defaults.

package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// autoCreateServer serves the sample cluster with a fake admin backend
// and auto-creation set as on.
func autoCreateServer(t *testing.T, on bool) (*fakeAdmin, *testServer) {
	t.Helper()
	a := newFakeAdmin()
	ts := startServer(t, func(c *Config) {
		c.Admin = a
		c.Topics = TopicSettings{AutoCreate: on, NumPartitions: 3}
	})
	return a, ts
}

// createdNames are the names CreateTopic was called with.
func (a *fakeAdmin) createdNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, q := range a.created {
		out = append(out, q.Name)
	}
	return out
}

// metadataCodes asks for topics at v (allow: allow_auto_topic_creation)
// and returns each topic's error code.
func metadataCodes(t *testing.T, ts *testServer, v int16, allow bool, topics ...string) map[string]int16 {
	t.Helper()
	c := ts.dial(t)
	defer c.Close()
	req := metadataReq(v, topics...)
	req.AllowAutoTopicCreation = allow
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = v
	adminRoundTrip(t, c, req, resp)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		if rt.Topic != nil {
			out[*rt.Topic] = rt.ErrorCode
		}
	}
	return out
}

func TestAutoCreateGating(t *testing.T) {
	a, ts := autoCreateServer(t, true)
	lna, unk := kerr.LeaderNotAvailable.Code, kerr.UnknownTopicOrPartition.Code

	// v3: always allowed. Known topics, "__" names and bad names are not created.
	got := metadataCodes(t, ts, 3, false, "fresh3", "orders", "__internal", "__consumer_offsets", "bad/name", "toolong"+string(make([]byte, 250)))
	if got["fresh3"] != lna || got["orders"] != 0 || got["__internal"] != unk || got["__consumer_offsets"] != 0 || got["bad/name"] != kerr.InvalidTopicException.Code {
		t.Fatalf("v3: %v", got)
	}
	if names := a.createdNames(); len(names) != 1 || names[0] != "fresh3" {
		t.Fatalf("v3 created %v, want fresh3 only", names)
	}
	a.mu.Lock()
	q := a.created[0]
	a.mu.Unlock()
	if q.Partitions != -1 || q.ReplicationFactor != -1 || q.ValidateOnly {
		t.Fatalf("auto-create query %+v, want the defaults (-1, -1)", q)
	}

	// v4+: only with allow_auto_topic_creation.
	for _, v := range []int16{4, 9, 12} {
		if got := metadataCodes(t, ts, v, false, "denied"); got["denied"] != unk {
			t.Fatalf("v%d without allow: %v", v, got)
		}
		name := "allowed" + string(rune('a'+v))
		if got := metadataCodes(t, ts, v, true, name); got[name] != lna {
			t.Fatalf("v%d with allow: %v", v, got)
		}
	}
	for _, n := range a.createdNames() {
		if n == "denied" {
			t.Fatalf("created a topic the request did not allow: %v", a.createdNames())
		}
	}
	if n := len(a.createdNames()); n != 4 {
		t.Fatalf("created %v, want fresh3 and three allowed topics", a.createdNames())
	}

	// A topic the admin backend already has (created meanwhile) is
	// LEADER_NOT_AVAILABLE too; a refusal passes its code through.
	a.add("racing", 1, map[string]string{})
	if got := metadataCodes(t, ts, 1, false, "racing"); got["racing"] != lna {
		t.Fatalf("created meanwhile: %v", got)
	}
	if autoCreateCode(kerr.InvalidReplicationFactor.Code) != kerr.InvalidReplicationFactor.Code || autoCreateCode(0) != lna {
		t.Fatalf("autoCreateCode")
	}

	// Listing every topic creates nothing.
	before := len(a.createdNames())
	metadataCodes(t, ts, 1, true)
	if len(a.createdNames()) != before {
		t.Fatalf("a listing of every topic created %v", a.createdNames()[before:])
	}
}

func TestAutoCreateOff(t *testing.T) {
	a, ts := autoCreateServer(t, false)
	for _, v := range []int16{0, 3, 4, 12} {
		if got := metadataCodes(t, ts, v, true, "fresh"); got["fresh"] != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", v, got)
		}
	}
	if names := a.createdNames(); len(names) != 0 {
		t.Fatalf("created %v with auto-creation off", names)
	}
}

func TestAutoCreateTopicNames(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "A.b_c-9": true, ".": false, "..": false, "...": true, "": false, "a/b": false, "a b": false, "é": false,
		string(make([]byte, 249)): false, // NULs
	} {
		if got := validTopicName(name); got != want {
			t.Errorf("validTopicName(%q) = %v, want %v", name, got, want)
		}
	}
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'x'
	}
	if validTopicName(string(long)) || !validTopicName(string(long[:249])) {
		t.Errorf("length limit: 249 allowed, 250 not")
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	_, ts := autoCreateServer(t, true)
	c := ts.dial(t)
	for _, v := range []int16{0, 1, 3} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms = v, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.Version = v
		adminRoundTrip(t, c, req, resp)
		got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, e := range resp.Resources[0].Configs {
			got[e.Name] = e
		}
		if resp.Resources[0].ErrorCode != 0 || len(got) != 3 {
			t.Fatalf("v%d: %+v", v, resp.Resources[0])
		}
		for name, want := range map[string]struct {
			value   string
			dflt    bool
			typ     kmsg.ConfigType
			synonym int
		}{
			ConfigAutoCreateTopics:         {"true", false, kmsg.ConfigTypeBoolean, 2},
			ConfigNumPartitions:            {"3", false, kmsg.ConfigTypeInt, 2},
			ConfigDefaultReplicationFactor: {"1", true, kmsg.ConfigTypeInt, 1},
		} {
			e := got[name]
			src := kmsg.ConfigSourceStaticBrokerConfig
			if want.dflt {
				src = kmsg.ConfigSourceDefaultConfig
			}
			if e.Value == nil || *e.Value != want.value || (v == 0 && e.IsDefault != want.dflt) || !e.ReadOnly || (v >= 1 && e.Source != src) {
				t.Errorf("v%d %s: %+v, want %s default %v source %v", v, name, e, want.value, want.dflt, src)
			}
			if v >= 1 && (len(e.ConfigSynonyms) != want.synonym || e.ConfigSynonyms[0].Source != src) {
				t.Errorf("v%d %s synonyms: %+v", v, name, e.ConfigSynonyms)
			}
			if v >= 3 && e.ConfigType != want.typ {
				t.Errorf("v%d %s type %v, want %v", v, name, e.ConfigType, want.typ)
			}
		}
	}
}

func TestTopicSettingsValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"auto-create without admin":   {Backend: &fakeBackend{}, Topics: TopicSettings{AutoCreate: true}},
		"negative partitions":         {Backend: &fakeBackend{}, Topics: TopicSettings{NumPartitions: -1}},
		"negative replication factor": {Backend: &fakeBackend{}, Topics: TopicSettings{ReplicationFactor: -2}},
	} {
		if _, err := NewServer(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
	got := Config{Backend: &fakeBackend{}}.withDefaults()
	if got.Topics.NumPartitions != DefaultNumPartitions || got.Topics.ReplicationFactor != DefaultReplicationFactor || got.Topics.AutoCreate {
		t.Fatalf("defaults %+v", got.Topics)
	}
}
