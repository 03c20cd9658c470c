// topics.go: `actorlog topics create|list|describe|delete|add-partitions|alter`.

package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/replica"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/messages"
)

// connect starts a client for the command's bootstrap list.
func (g *globals) connect() (*client.Client, error) {
	level := g.logLevel
	if level == "" {
		level = "warn"
	}
	logger, err := host.NewLogger(g.logFormat, level)
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{Bootstrap: strings.Split(g.bootstrap, ","), Logger: logrus.NewEntry(logger)})
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

	describe := &cobra.Command{
		Use: "describe NAME", Short: "Describe a topic's partitions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return describeTopic(ctx, c, args[0], cmd.OutOrStdout())
			})
		},
	}

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
	alter := &cobra.Command{
		Use: "alter NAME --config k=v...", Short: "Replace a topic's config overrides", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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

	cmd.AddCommand(create, list, describe, del, addParts, alter)
	return cmd
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

func describeTopic(ctx context.Context, c *client.Client, name string, out io.Writer) error {
	md, err := c.Metadata(ctx, name)
	if err != nil {
		return err
	}
	if len(md.Topics) != 1 {
		return fmt.Errorf("describe %q: no metadata returned", name)
	}
	t := md.Topics[0]
	if err := t.ErrorCode.Err("topic " + name); err != nil {
		return err
	}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cfgs []string
	for _, k := range keys {
		cfgs = append(cfgs, k+"="+t.Configs[k])
	}
	fmt.Fprintf(out, "Topic: %s\tPartitions: %d\tReplicationFactor: %d\tConfigs: %s\n", t.Name, len(t.Partitions), t.ReplicationFactor, strings.Join(cfgs, ","))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START-OFFSET\tLOG-END-OFFSET")
	for _, p := range t.Partitions {
		start, end := "-", "-"
		if lo, err := c.ListOffsets(ctx, p, name, replica.EarliestTimestamp); err == nil {
			start = fmt.Sprint(lo.Offset)
		}
		if lo, err := c.ListOffsets(ctx, p, name, replica.LatestTimestamp); err == nil {
			end = fmt.Sprint(lo.Offset)
		}
		fmt.Fprintf(w, "%d\t%s\t%v\t%v\t%s\t%s\n", p.Partition, leaderText(p), ids(p.Replicas), ids(p.Isr), start, end)
	}
	return w.Flush()
}

// leaderText renders a partition's leader: its host id, "none (offline)"
// when the controller found no live in-sync replica to lead it, or the id
// marked unavailable when the leader's host is not registered (it has just
// gone, and the controller has not moved leadership yet).
func leaderText(p *messages.PartitionMetadata) string {
	switch {
	case p.Leader < 0:
		return "none (offline)"
	case p.ErrorCode == messages.ErrorCode_ERROR_CODE_LEADER_NOT_AVAILABLE:
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

// checkTopicPartition fails clearly for an unknown topic or a partition out
// of range.
func checkTopicPartition(c *client.Client, topic string, parts []int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.RequestTimeout())
	defer cancel()
	md, err := c.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	if len(md.Topics) != 1 {
		return fmt.Errorf("topic %q: no metadata returned", topic)
	}
	t := md.Topics[0]
	if err := t.ErrorCode.Err("topic " + topic); err != nil {
		return err
	}
	for _, p := range parts {
		if p < 0 || int(p) >= len(t.Partitions) {
			return fmt.Errorf("partition %d out of range: topic %s has partitions 0..%d", p, topic, len(t.Partitions)-1)
		}
	}
	return nil
}
