// changes.go: the forms that change a topic's configs, produce a test
// record and reset a group's offsets — each the web face of a CLI command
// (`topics alter --config`, `produce`, `groups reset-offsets`), calling
// the same client methods and validation. Every one reads and checks its
// whole form before it asks the cluster for a change: bad input is a 400
// naming the field and changes nothing.
//
//	POST /ui/topics/{name}/configs        set ("k=v" lines), delete (keys
//	                                      of current overrides, repeated);
//	                                      the overrides become the current
//	                                      ones with set applied and delete
//	                                      removed, checked as the controller
//	                                      checks them
//	POST /ui/topics/{name}/produce        key, value, headers ("k=v"
//	                                      lines), partition (optional);
//	                                      acks=all; redirects with the
//	                                      partition and offset it got
//	POST /ui/groups/{id}/reset-offsets    to (earliest|latest|offset|
//	                                      datetime), offset, datetime (RFC
//	                                      3339), topic ("" every topic the
//	                                      group has committed), partition
//	                                      (optional, with a topic), confirm
//	                                      (must repeat the group id); only
//	                                      while the group has no members

package console

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/storage/record"
)

const (
	// MaxProduceValueBytes bounds a test record's value.
	MaxProduceValueBytes = 1 << 20
	// MaxProduceKeyBytes bounds a test record's key.
	MaxProduceKeyBytes = 64 << 10
	// MaxProduceHeaders bounds a test record's headers.
	MaxProduceHeaders = 64
	// MaxProduceHeaderBytes bounds the keys and values of a test record's
	// headers together.
	MaxProduceHeaderBytes = 64 << 10
	// maxProduceFormBytes bounds the produce form's body: the largest key,
	// value and headers, URL-encoded (3 bytes a byte at worst).
	maxProduceFormBytes = 3*(MaxProduceValueBytes+MaxProduceKeyBytes+MaxProduceHeaderBytes) + maxFormBytes
)

// alterConfigs is POST /ui/topics/{name}/configs: the topic's overrides
// with set applied and delete removed replace its overrides, as `topics
// alter NAME --config ...` replaces them. (Another change to the topic's
// configs between reading and writing them is overwritten, as with the
// CLI.)
func (c *Console) alterConfigs(ctx context.Context, r *http.Request) (string, error) {
	name, err := topicName(r)
	if err != nil {
		return "", err
	}
	set, err := parseConfigLines(r.PostForm.Get("set"))
	if err != nil {
		return "", badRequest("set: %v", err)
	}
	var del []string
	for _, k := range r.PostForm["delete"] {
		if k = strings.TrimSpace(k); k != "" {
			del = append(del, k)
		}
	}
	if len(set) == 0 && len(del) == 0 {
		return "", badRequest("set, delete: nothing to change: set a config or delete one")
	}
	t, err := c.topicMetadata(ctx, name)
	if err != nil {
		return "", err
	}
	cfgs := maps.Clone(t.Configs)
	if cfgs == nil {
		cfgs = map[string]string{}
	}
	for _, k := range del {
		if _, ok := set[k]; ok {
			return "", badRequest("delete: %q is also set: set it or delete it", k)
		}
		if _, ok := cfgs[k]; !ok {
			return "", badRequest("delete: %q is not a config override of topic %s", k, name)
		}
		delete(cfgs, k)
	}
	maps.Copy(cfgs, set)
	if err := cluster.ValidateTopicConfigs(cfgs); err != nil {
		return "", badRequest("set: %v", err)
	}
	if _, err := c.cfg.Admin.AlterTopicConfigs(ctx, name, cfgs); err != nil {
		return "", fmt.Errorf("alter topic %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "set": slices.Sorted(maps.Keys(set)), "delete": del, "remote": r.RemoteAddr}).Info("console: topic configs altered")
	return "/ui/topics/" + url.PathEscape(name) + "?done=configs", nil
}

// produceRecord is POST /ui/topics/{name}/produce: one record, as
// `actorlog produce TOPIC [--partition P]` produces a line (acks=all). An
// empty key is no key (the partitioner then picks the partition).
func (c *Console) produceRecord(ctx context.Context, r *http.Request) (string, error) {
	name, err := topicName(r)
	if err != nil {
		return "", err
	}
	key, value := r.PostForm.Get("key"), r.PostForm.Get("value")
	if len(key) > MaxProduceKeyBytes {
		return "", badRequest("key: %d bytes, at most %d allowed", len(key), MaxProduceKeyBytes)
	}
	if len(value) > MaxProduceValueBytes {
		return "", badRequest("value: %d bytes, at most %d allowed", len(value), MaxProduceValueBytes)
	}
	headers, err := parseHeaderLines(r.PostForm.Get("headers"))
	if err != nil {
		return "", err
	}
	part := producer.AnyPartition
	ps := strings.TrimSpace(r.PostForm.Get("partition"))
	if ps != "" {
		if part, err = formInt32(r, "partition", 0, cluster.MaxPartitionsPerTopic-1); err != nil {
			return "", err
		}
	}
	// As the CLI's checkTopicPartition: an unknown topic or a partition
	// out of range fails clearly before anything is sent.
	t, err := c.topicMetadata(ctx, name)
	if err != nil {
		return "", err
	}
	if part != producer.AnyPartition && int(part) >= len(t.Partitions) {
		return "", badRequest("partition %d out of range: topic %s has partitions 0..%d", part, name, len(t.Partitions)-1)
	}
	msg := producer.Send{Topic: name, Partition: part, Value: []byte(value), Headers: headers}
	if key != "" {
		msg.Key = []byte(key)
	}
	d, err := c.cfg.Producer.Produce(ctx, msg)
	if err != nil {
		return "", fmt.Errorf("produce to %q: %w", name, err)
	}
	c.log.WithFields(logrus.Fields{"topic": name, "partition": d.Partition, "offset": d.Offset, "value_bytes": len(value), "remote": r.RemoteAddr}).Info("console: test record produced")
	return fmt.Sprintf("/ui/topics/%s?done=produced&partition=%d&offset=%d", url.PathEscape(name), d.Partition, d.Offset), nil
}

// parseHeaderLines reads "key=value" header lines (blank lines skipped;
// the value is everything after the first "="), within the header caps.
func parseHeaderLines(s string) ([]record.RecordHeader, error) {
	var hs []record.RecordHeader
	size := 0
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, badRequest("headers: line %q: want key=value", line)
		}
		if len(hs) == MaxProduceHeaders {
			return nil, badRequest("headers: more than %d", MaxProduceHeaders)
		}
		if size += len(k) + len(v); size > MaxProduceHeaderBytes {
			return nil, badRequest("headers: more than %d bytes", MaxProduceHeaderBytes)
		}
		hs = append(hs, record.RecordHeader{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

// resetOffsets is POST /ui/groups/{id}/reset-offsets: `groups
// reset-offsets GROUP --topic T --to-...` for one topic, or for every
// topic the group has committed offsets of. Every topic is planned first
// (which refuses a group with members, an unknown topic, a partition out
// of range), so a refusal changes nothing; then each is reset.
func (c *Console) resetOffsets(ctx context.Context, r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := checkGroupID(id); err != nil {
		return "", err
	}
	if r.PostForm.Get("confirm") != id {
		return "", badRequest("confirm: type the group's id (%s) to reset its offsets", id)
	}
	target, err := resetTarget(r)
	if err != nil {
		return "", err
	}
	topic := strings.TrimSpace(r.PostForm.Get("topic"))
	var parts []int32
	if ps := strings.TrimSpace(r.PostForm.Get("partition")); ps != "" {
		if topic == "" {
			return "", badRequest("partition: choose a topic to reset one partition")
		}
		p, err := formInt32(r, "partition", 0, cluster.MaxPartitionsPerTopic-1)
		if err != nil {
			return "", err
		}
		parts = []int32{p}
	}
	var topics []string
	if topic != "" {
		if err := cluster.ValidateTopicName(topic); err != nil {
			return "", badRequest("topic: %v", err)
		}
		if len(parts) > 0 {
			t, err := c.topicMetadata(ctx, topic)
			if err != nil {
				return "", err
			}
			if int(parts[0]) >= len(t.Partitions) {
				return "", badRequest("partition %d out of range: topic %s has partitions 0..%d", parts[0], topic, len(t.Partitions)-1)
			}
		}
		topics = []string{topic}
	} else {
		lags, err := c.cfg.Groups.GroupLag(ctx, id)
		if err != nil {
			return "", fmt.Errorf("offsets of group %q: %w", id, err)
		}
		for _, l := range lags {
			if l.Committed >= 0 && !slices.Contains(topics, l.Topic) {
				topics = append(topics, l.Topic)
			}
		}
		if len(topics) == 0 {
			return "", badRequest("topic: group %q has no committed offsets: choose a topic", id)
		}
		slices.Sort(topics)
		// The form named no topic: READ on each is checked here (access.go).
		if err := c.authorizeEach(ctx, acl.OpRead, acl.ResourceTopic, topics); err != nil {
			return "", err
		}
	}
	for _, t := range topics {
		if _, err := c.cfg.GroupAdmin.PlanResetOffsets(ctx, id, t, parts, target); err != nil {
			return "", fmt.Errorf("reset offsets of group %q (nothing changed): %w", id, err)
		}
	}
	n := 0
	for i, t := range topics {
		done, err := c.cfg.GroupAdmin.ResetOffsets(ctx, id, t, parts, target)
		if err != nil {
			if i == 0 {
				return "", fmt.Errorf("reset offsets of group %q (nothing changed): %w", id, err)
			}
			return "", fmt.Errorf("reset offsets of group %q: topics %s were reset, %s and after were not: %w", id, strings.Join(topics[:i], ", "), t, err)
		}
		n += len(done)
	}
	c.log.WithFields(logrus.Fields{"group": id, "topics": topics, "partitions": parts, "target": target.String(), "remote": r.RemoteAddr}).Info("console: group offsets reset")
	return fmt.Sprintf("/ui/groups/%s?done=reset&n=%d", url.PathEscape(id), n), nil
}

// resetTarget reads the reset form's target as the CLI reads its --to-*
// flags.
func resetTarget(r *http.Request) (client.ResetTarget, error) {
	switch to := r.PostForm.Get("to"); to {
	case "earliest":
		return client.ResetToEarliest(), nil
	case "latest":
		return client.ResetToLatest(), nil
	case "offset":
		s := strings.TrimSpace(r.PostForm.Get("offset"))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return client.ResetTarget{}, badRequest("offset %q: want a number, not negative", s)
		}
		return client.ResetToOffset(n), nil
	case "datetime":
		s := strings.TrimSpace(r.PostForm.Get("datetime"))
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return client.ResetTarget{}, badRequest("datetime %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
		}
		return client.ResetToDatetime(t), nil
	default:
		return client.ResetTarget{}, badRequest("to %q: want earliest, latest, offset or datetime", to)
	}
}

// groupTopics lists the topics of a group's offsets, sorted, once each.
func groupTopics(offsets []GroupOffset) []string {
	var ts []string
	for _, o := range offsets {
		if !slices.Contains(ts, o.Topic) {
			ts = append(ts, o.Topic)
		}
	}
	slices.Sort(ts)
	return ts
}
