// topics.go: `actorlog topics create|list|describe|delete|add-partitions|alter|elect-leaders`.
// `alter` replaces a topic's configs (--config), reassigns partitions to
// other hosts (--replicas, Kafka's kafka-reassign-partitions) or cancels
// reassignments in progress (--cancel-reassignment); `elect-leaders` moves
// leadership back to the preferred replicas (Kafka's kafka-leader-election
// --election-type PREFERRED).

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/messages"
)

// connect starts a client for the command's bootstrap list.
// logger returns the logger of --log-level (defaultLevel when unset) and
// --log-format.
func (g *globals) logger(defaultLevel string) (*logrus.Logger, error) {
	level := g.logLevel
	if level == "" {
		level = defaultLevel
	}
	return host.NewLogger(g.logFormat, level)
}

func (g *globals) connect() (*client.Client, error) {
	logger, err := g.logger("warn")
	if err != nil {
		return nil, err
	}
	log := logrus.NewEntry(logger)
	tlsr, err := g.remoteTLS.reloader(log)
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{Bootstrap: strings.Split(g.bootstrap, ","), Logger: log, TLS: tlsr})
}

func parseConfigs(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--config %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

func newTopicsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "Create, list, describe and delete topics"}

	var partitions, rf int32
	var configs []string
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a topic", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfgs, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				t, err := c.CreateTopic(ctx, args[0], partitions, rf, cfgs)
				if err != nil {
					return fmt.Errorf("create topic %q: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s with %d partitions, replication factor %d.\n", t.Name, len(t.Partitions), t.ReplicationFactor)
				return nil
			})
		},
	}
	create.Flags().Int32Var(&partitions, "partitions", 1, "number of partitions")
	create.Flags().Int32Var(&rf, "replication-factor", 1, "replicas per partition")
	create.Flags().StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")

	list := &cobra.Command{
		Use: "list", Short: "List topics", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				md, err := c.Metadata(ctx)
				if err != nil {
					return err
				}
				for _, t := range md.Topics {
					fmt.Fprintln(cmd.OutOrStdout(), t.Name)
				}
				return nil
			})
		},
	}

	var output string
	describe := &cobra.Command{
		Use: "describe NAME", Short: "Describe a topic's partitions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return describeTopic(ctx, c, args[0], output, cmd.OutOrStdout())
			})
		},
	}
	addOutputFlag(describe, &output)

	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a topic and its data", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				if err := c.DeleteTopic(ctx, args[0]); err != nil {
					return fmt.Errorf("delete topic %q: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %s.\n", args[0])
				return nil
			})
		},
	}

	var total int32
	addParts := &cobra.Command{
		Use: "add-partitions NAME --total N", Short: "Grow a topic to N partitions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				t, err := c.CreatePartitions(ctx, args[0], total)
				if err != nil {
					return fmt.Errorf("add partitions to %q: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Topic %s now has %d partitions.\n", t.Name, len(t.Partitions))
				return nil
			})
		},
	}
	addParts.Flags().Int32Var(&total, "total", 0, "new total number of partitions")

	var alterCfgs []string
	var replicas string
	var cancelReassignment bool
	alter := &cobra.Command{
		Use:   "alter NAME (--config k=v... | --replicas P=HOST,HOST;... | --cancel-reassignment)",
		Short: "Replace a topic's config overrides, or move its partitions to other hosts",
		Long: `Replace a topic's config overrides (--config), or reassign partitions to
other hosts: --replicas "0=1,2;1=2,3" gives partition 0 the replicas 1 and 2
(the first is the preferred leader) and partition 1 the replicas 2 and 3.
Hosts are ids or names, as "actorlog cluster describe" lists them. The new
replicas catch up, then the old ones are dropped and their logs deleted;
"topics describe" shows the progress. --cancel-reassignment reverts the
topic's reassignments in progress.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("replicas") {
				return withClient(g, func(ctx context.Context, c *client.Client) error {
					return reassignPartitions(ctx, c, args[0], replicas, cmd.OutOrStdout())
				})
			}
			if cancelReassignment {
				return withClient(g, func(ctx context.Context, c *client.Client) error {
					return cancelReassignments(ctx, c, args[0], cmd.OutOrStdout())
				})
			}
			cfgs, err := parseConfigs(alterCfgs)
			if err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				if _, err := c.AlterTopicConfigs(ctx, args[0], cfgs); err != nil {
					return fmt.Errorf("alter topic %q: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Updated configs of topic %s.\n", args[0])
				return nil
			})
		},
	}
	alter.Flags().StringArrayVar(&alterCfgs, "config", nil, "topic config key=value (repeatable)")
	alter.Flags().StringVar(&replicas, "replicas", "", `new replicas per partition: "P=HOST,HOST;P=..." (host ids or names)`)
	alter.Flags().BoolVar(&cancelReassignment, "cancel-reassignment", false, "cancel the topic's reassignments in progress")
	alter.MarkFlagsMutuallyExclusive("config", "replicas", "cancel-reassignment")

	elect := &cobra.Command{
		Use:   "elect-leaders [NAME [PARTITION...]]",
		Short: "Move partition leadership back to the preferred replicas",
		Long: `Move the leadership of partitions back to their preferred replica (the
first of the replica list) where it is live and in sync: every partition of
every topic, of topic NAME, or the PARTITIONs of NAME.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var parts []int32
			for _, a := range args[min(1, len(args)):] {
				n, err := strconv.ParseInt(a, 10, 32)
				if err != nil {
					return fmt.Errorf("partition %q: not a number", a)
				}
				parts = append(parts, int32(n))
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return electLeaders(ctx, c, args, parts, cmd.OutOrStdout())
			})
		},
	}

	cmd.AddCommand(create, list, describe, del, addParts, alter, elect)
	return cmd
}

// parseReplicas parses --replicas: "P=HOST,HOST;P=HOST,..." where each
// HOST goes through resolve (ids or names). Every partition once, each
// with at least one host.
func parseReplicas(spec string, resolve func(string) (int32, error)) ([]*messages.PartitionReassignment, error) {
	var out []*messages.PartitionReassignment
	seen := map[int32]bool{}
	for _, entry := range strings.Split(spec, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		ps, hosts, ok := strings.Cut(entry, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("--replicas %q: want PARTITION=HOST,HOST,... separated by ';'", entry)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("--replicas: partition %d given twice", n)
		}
		seen[int32(n)] = true
		r := &messages.PartitionReassignment{Partition: int32(n)}
		for _, h := range strings.Split(hosts, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			id, err := resolve(h)
			if err != nil {
				return nil, fmt.Errorf("--replicas: partition %d: %w", n, err)
			}
			r.Replicas = append(r.Replicas, id)
		}
		if len(r.Replicas) == 0 {
			return nil, fmt.Errorf("--replicas: partition %d has no hosts (--cancel-reassignment cancels a reassignment)", n)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--replicas %q: no partitions given", spec)
	}
	return out, nil
}

// reassignPartitions runs `topics alter NAME --replicas SPEC`.
func reassignPartitions(ctx context.Context, c *client.Client, topic, spec string, out io.Writer) error {
	d, err := c.DescribeCluster(ctx)
	if err != nil {
		return err
	}
	rs, err := parseReplicas(spec, func(s string) (int32, error) { return client.ResolveHost(d, s) })
	if err != nil {
		return err
	}
	parts := make([]int32, len(rs))
	for i, r := range rs {
		parts[i] = r.Partition
	}
	if err := checkTopicPartition(c, topic, parts); err != nil {
		return err
	}
	if err := sendReassignments(ctx, c, topic, rs, "reassign partitions"); err != nil {
		return err
	}
	for _, r := range rs {
		fmt.Fprintf(out, "Partition %s-%d: reassignment to replicas %s accepted.\n", topic, r.Partition, ids(r.Replicas))
	}
	fmt.Fprintf(out, "`actorlog topics describe %s` shows the progress (ADDING, REMOVING).\n", topic)
	return nil
}

// cancelReassignments runs `topics alter NAME --cancel-reassignment`: it
// cancels the reassignments the metadata shows in progress.
func cancelReassignments(ctx context.Context, c *client.Client, topic string, out io.Writer) error {
	t, err := topicMetadata(ctx, c, topic)
	if err != nil {
		return err
	}
	var rs []*messages.PartitionReassignment
	for _, p := range t.Partitions {
		if len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0 {
			rs = append(rs, &messages.PartitionReassignment{Partition: p.Partition})
		}
	}
	if len(rs) == 0 {
		return fmt.Errorf("topic %s: no reassignment in progress", topic)
	}
	if err := sendReassignments(ctx, c, topic, rs, "cancel reassignments"); err != nil {
		return err
	}
	for _, r := range rs {
		fmt.Fprintf(out, "Partition %s-%d: reassignment cancelled.\n", topic, r.Partition)
	}
	return nil
}

// sendReassignments sends rs and turns a refusal into one error.
func sendReassignments(ctx context.Context, c *client.Client, topic string, rs []*messages.PartitionReassignment, what string) error {
	results, err := c.ReassignPartitions(ctx, topic, rs...)
	if err != nil {
		return fmt.Errorf("%s of %q: %w", what, topic, err)
	}
	if err := refusal(results); err != nil {
		return fmt.Errorf("%s of %q (nothing changed): %w", what, topic, err)
	}
	return nil
}

// refusal returns the first partition error of an all-or-nothing request
// that is not the "not applied" of the partitions that were fine.
func refusal(results []*messages.PartitionResult) error {
	var first error
	for _, r := range results {
		err := r.ErrorCode.Err(r.ErrorMessage)
		if err == nil {
			continue
		}
		err = fmt.Errorf("partition %d: %w", r.Partition, err)
		if r.ErrorCode != messages.ErrorCode_ERROR_CODE_INVALID_REQUEST || !strings.HasPrefix(r.ErrorMessage, "not applied") {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// electLeaders runs `topics elect-leaders [NAME [PARTITION...]]`.
func electLeaders(ctx context.Context, c *client.Client, args []string, parts []int32, out io.Writer) error {
	var req []*messages.TopicPartitions
	if len(args) > 0 {
		if err := checkTopicPartition(c, args[0], parts); err != nil {
			return err
		}
		req = append(req, &messages.TopicPartitions{Topic: args[0], Partitions: parts})
	}
	results, err := c.ElectLeaders(ctx, req...)
	if err != nil {
		return fmt.Errorf("elect leaders: %w", err)
	}
	var failed []string
	for _, r := range results {
		switch r.ErrorCode {
		case 0:
			fmt.Fprintf(out, "Partition %s-%d: the preferred replica leads now.\n", r.Topic, r.Partition)
		case messages.ErrorCode_ERROR_CODE_ELECTION_NOT_NEEDED:
			fmt.Fprintf(out, "Partition %s-%d: the preferred replica leads already.\n", r.Topic, r.Partition)
		default:
			failed = append(failed, fmt.Sprintf("%s-%d: %v", r.Topic, r.Partition, r.ErrorCode.Err(r.ErrorMessage)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d partition(s) could not be elected: %s", len(failed), strings.Join(failed, "; "))
	}
	if len(results) == 0 {
		fmt.Fprintln(out, "Every partition is led by its preferred replica.")
	}
	return nil
}

func withClient(g *globals, fn func(ctx context.Context, c *client.Client) error) error {
	c, err := g.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return fn(ctx, c)
}

// topicMetadata returns one topic's metadata, or its error.
func topicMetadata(ctx context.Context, c *client.Client, name string) (*messages.TopicMetadataResponse, error) {
	md, err := c.Metadata(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(md.Topics) != 1 {
		return nil, fmt.Errorf("topic %q: no metadata returned", name)
	}
	t := md.Topics[0]
	if err := t.ErrorCode.Err("topic " + name); err != nil {
		return nil, err
	}
	return t, nil
}

// describeTopic prints a topic's partitions (leader, replicas, ISR, log
// start and end offsets, reassignment in progress) as a table or, for
// output "json", a topicDescription.
func describeTopic(ctx context.Context, c *client.Client, name, output string, out io.Writer) error {
	t, err := topicMetadata(ctx, c, name)
	if err != nil {
		return err
	}
	td := topicDescription{Name: t.Name, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}, Partitions: []partitionDescription{}}
	maps.Copy(td.Configs, t.Configs)
	for _, p := range t.Partitions {
		var start, end *int64
		if lo, err := c.ListOffsets(ctx, p, name, messages.EarliestTimestamp); err == nil {
			start = &lo.Offset
		}
		if lo, err := c.ListOffsets(ctx, p, name, messages.LatestTimestamp); err == nil {
			end = &lo.Offset
		}
		td.Partitions = append(td.Partitions, newPartitionDescription(p, start, end))
	}
	if output == outputJSON {
		return writeJSON(out, td)
	}
	return writeTopicTable(out, td)
}

// newPartitionDescription is p with its log start and end offsets (nil when
// unknown).
func newPartitionDescription(p *messages.PartitionMetadata, start, end *int64) partitionDescription {
	return partitionDescription{
		Partition: p.Partition, Leader: p.Leader, LeaderStatus: leaderStatus(p),
		Replicas: orEmpty(slices.Clone(p.Replicas)), ISR: orEmpty(slices.Clone(p.Isr)),
		LogStartOffset: start, LogEndOffset: end,
		AddingReplicas: orEmpty(slices.Clone(p.AddingReplicas)), RemovingReplicas: orEmpty(slices.Clone(p.RemovingReplicas)),
	}
}

// writeTopicTable prints td: a summary line, then a table of its
// partitions.
func writeTopicTable(out io.Writer, td topicDescription) error {
	var cfgs []string
	for _, k := range slices.Sorted(maps.Keys(td.Configs)) {
		cfgs = append(cfgs, k+"="+td.Configs[k])
	}
	fmt.Fprintf(out, "Topic: %s\tPartitions: %d\tReplicationFactor: %d\tConfigs: %s\n", td.Name, len(td.Partitions), td.ReplicationFactor, strings.Join(cfgs, ","))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START-OFFSET\tLOG-END-OFFSET\tADDING\tREMOVING")
	for _, p := range td.Partitions {
		fmt.Fprintf(w, "%d\t%s\t%v\t%v\t%s\t%s\t%s\t%s\n", p.Partition, leaderText(p), ids(p.Replicas), ids(p.ISR),
			offsetPtrText(p.LogStartOffset), offsetPtrText(p.LogEndOffset), orDash(ids(p.AddingReplicas)), orDash(ids(p.RemovingReplicas)))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// offsetPtrText renders an offset, "-" when unknown (nil).
func offsetPtrText(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// leaderStatus tells whether a partition's leader can serve: "offline"
// when the controller found no live in-sync replica to lead it,
// "unavailable" when the leader's host is not registered (it has just
// gone, and the controller has not moved leadership yet), else
// "available".
func leaderStatus(p *messages.PartitionMetadata) string {
	switch {
	case p.Leader < 0:
		return leaderOffline
	case p.ErrorCode == messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE:
		return leaderUnavailable
	}
	return leaderAvailable
}

// leaderText renders a partition's leader: its host id, "none (offline)",
// or the id marked "(unavailable)" (see leaderStatus).
func leaderText(p partitionDescription) string {
	switch p.LeaderStatus {
	case leaderOffline:
		return "none (offline)"
	case leaderUnavailable:
		return fmt.Sprintf("%d (unavailable)", p.Leader)
	}
	return fmt.Sprint(p.Leader)
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// newTopicWait is how long checkTopicPartition waits for a topic the
// host does not know yet.
const newTopicWait = 3 * time.Second

// checkTopicPartition fails clearly for an unknown topic or a partition out
// of range.
func checkTopicPartition(c *client.Client, topic string, parts []int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.RequestTimeout())
	defer cancel()
	t, err := topicMetadata(ctx, c, topic)
	// A topic created a moment ago (`topics create X && perf produce
	// --topic X`) may not have reached the host that answers yet: wait
	// for it a little, as Kafka's producer waits for a topic's metadata,
	// but not so long that a misspelt name hangs.
	for wait := time.Now().Add(newTopicWait); messages.CodeOf(err) == messages.ErrorCode_ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
		t, err = topicMetadata(ctx, c, topic)
	}
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p < 0 || int(p) >= len(t.Partitions) {
			return fmt.Errorf("partition %d out of range: topic %s has partitions 0..%d", p, topic, len(t.Partitions)-1)
		}
	}
	return nil
}
