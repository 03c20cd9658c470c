// groups.go: `actorlog groups list|describe|reset-offsets|delete` — the
// consumer groups of the cluster (Kafka's kafka-consumer-groups): their
// state and members, each partition's committed offset, log end offset and
// lag, resetting a group's offsets while it has no members, and deleting
// an empty group with its offsets.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

func newGroupsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "groups", Short: "List, describe, reset and delete consumer groups"}

	var states []string
	list := &cobra.Command{
		Use: "list [--state S]...", Short: "List the consumer groups", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return listGroups(ctx, c, states, cmd.OutOrStdout())
			})
		},
	}
	list.Flags().StringArrayVar(&states, "state", nil, "only groups in this state: Empty, PreparingRebalance, CompletingRebalance, Stable (repeatable)")

	describe := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's state, members and assignments, and per partition its committed offset, log end offset and lag",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGroupID(args[0]); err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return describeGroup(ctx, c, args[0], cmd.OutOrStdout())
			})
		},
	}

	var (
		topic, toDatetime      string
		toEarliest, toLatest   bool
		toOffset               int64
		partition              int32
		dryRun                 bool
		resetFlags             = []string{"to-earliest", "to-latest", "to-offset", "to-datetime"}
		resetUse, resetExample = "reset-offsets GROUP --topic T (--to-earliest | --to-latest | --to-offset O | --to-datetime T) [--partition P] [--dry-run]",
			"actorlog groups reset-offsets billing --topic events --to-datetime 2026-01-02T15:04:05Z"
	)
	reset := &cobra.Command{
		Use:   resetUse,
		Short: "Move an empty group's committed offsets of a topic",
		Long: `Move a group's committed offsets of a topic (every partition, or --partition
P) to the log start (--to-earliest), the log end (--to-latest), an offset
(--to-offset, kept within each partition's log) or the first record at or
after a time (--to-datetime, RFC 3339). Only while the group has no members:
stop its consumers first. --dry-run shows the new offsets without committing
them.`,
		Example: resetExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGroupID(args[0]); err != nil {
				return err
			}
			target, err := resetTarget(cmd, toEarliest, toLatest, toOffset, toDatetime)
			if err != nil {
				return err
			}
			if topic == "" {
				return errors.New("--topic is required")
			}
			var parts []int32
			if cmd.Flags().Changed("partition") {
				if partition < 0 {
					return fmt.Errorf("--partition %d: must not be negative", partition)
				}
				parts = []int32{partition}
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return resetOffsets(ctx, c, args[0], topic, parts, target, dryRun, cmd.OutOrStdout())
			})
		},
	}
	reset.Flags().StringVar(&topic, "topic", "", "the topic whose offsets to reset (required)")
	reset.Flags().BoolVar(&toEarliest, "to-earliest", false, "reset to the log start offset")
	reset.Flags().BoolVar(&toLatest, "to-latest", false, "reset to the log end offset")
	reset.Flags().Int64Var(&toOffset, "to-offset", 0, "reset to this offset")
	reset.Flags().StringVar(&toDatetime, "to-datetime", "", "reset to the first record at or after this time (RFC 3339, e.g. 2026-01-02T15:04:05Z)")
	reset.Flags().Int32Var(&partition, "partition", 0, "only this partition")
	reset.Flags().BoolVar(&dryRun, "dry-run", false, "show the new offsets, commit nothing")
	reset.MarkFlagsMutuallyExclusive(resetFlags...)

	del := &cobra.Command{
		Use: "delete GROUP", Short: "Delete an empty group and its committed offsets", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGroupID(args[0]); err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				results, err := c.DeleteGroups(ctx, args[0])
				if err != nil && len(results) == 1 {
					err = results[0].ErrorCode.Err(results[0].ErrorMessage)
				}
				if err != nil {
					return fmt.Errorf("delete group %q: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %s.\n", args[0])
				return nil
			})
		},
	}

	cmd.AddCommand(list, describe, reset, del)
	return cmd
}

// checkGroupID refuses an empty group id before anything is asked.
func checkGroupID(id string) error {
	if strings.TrimSpace(id) == "" {
		return errors.New("the group id must not be empty")
	}
	return nil
}

// resetTarget reads the one --to-* flag given.
func resetTarget(cmd *cobra.Command, earliest, latest bool, offset int64, datetime string) (client.ResetTarget, error) {
	switch {
	case earliest:
		return client.ResetToEarliest(), nil
	case latest:
		return client.ResetToLatest(), nil
	case cmd.Flags().Changed("to-offset"):
		if offset < 0 {
			return client.ResetTarget{}, fmt.Errorf("--to-offset %d: must not be negative", offset)
		}
		return client.ResetToOffset(offset), nil
	case cmd.Flags().Changed("to-datetime"):
		t, err := time.Parse(time.RFC3339Nano, datetime)
		if err != nil {
			return client.ResetTarget{}, fmt.Errorf("--to-datetime %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", datetime)
		}
		return client.ResetToDatetime(t), nil
	}
	return client.ResetTarget{}, errors.New("one of --to-earliest, --to-latest, --to-offset, --to-datetime is required")
}

func listGroups(ctx context.Context, c *client.Client, states []string, out io.Writer) error {
	for _, s := range states {
		if !slices.ContainsFunc([]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}, func(n string) bool { return strings.EqualFold(n, s) }) {
			return fmt.Errorf("--state %q: want Empty, PreparingRebalance, CompletingRebalance or Stable", s)
		}
	}
	groups, err := c.ListGroups(ctx, states...)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL-TYPE")
	for _, gr := range groups {
		fmt.Fprintf(w, "%s\t%s\t%s\n", gr.GroupId, gr.GroupState, orDash(gr.ProtocolType))
	}
	return w.Flush()
}

// describeGroup prints a group: a summary line; its members (id, instance
// id, client id, host, assigned partitions); and per partition (those it
// committed and those assigned) the committed offset, log end offset, lag
// and owner.
func describeGroup(ctx context.Context, c *client.Client, id string, out io.Writer) error {
	d, err := c.DescribeGroup(ctx, id)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", id, err)
	}
	if d.GroupState == "Dead" {
		return fmt.Errorf("group %q does not exist", id)
	}
	assigned, err := client.AssignedPartitions(d)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", id, err)
	}
	protocol := orDash(d.ProtocolType)
	if d.ProtocolData != "" {
		protocol += "/" + d.ProtocolData
	}
	fmt.Fprintf(out, "Group: %s\tState: %s\tProtocol: %s\tGeneration: %d\tLeader: %s\tMembers: %d\n",
		d.GroupId, d.GroupState, protocol, d.GenerationId, orDash(d.Leader), len(d.Members))

	owner := map[string]string{}
	var also []*messages.TopicPartitions
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(d.Members) > 0 {
		fmt.Fprintln(w, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			a := assigned[m.MemberId]
			var parts []string
			for _, t := range slices.Sorted(maps.Keys(a)) {
				ps := slices.Sorted(slices.Values(a[t]))
				also = append(also, &messages.TopicPartitions{Topic: t, Partitions: ps})
				for _, p := range ps {
					owner[fmt.Sprintf("%s-%d", t, p)] = m.MemberId
					parts = append(parts, fmt.Sprintf("%s-%d", t, p))
				}
			}
			assignment := strings.Join(parts, ",")
			if d.GroupState != "Stable" {
				assignment = "(rebalancing)"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.MemberId, orDash(m.GroupInstanceId), orDash(m.ClientId), orDash(m.ClientHost), orDash(assignment))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "No active members.")
	}

	lags, err := c.GroupLag(ctx, id, also...)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", id, err)
	}
	if len(lags) == 0 {
		fmt.Fprintln(out, "No committed offsets.")
		return nil
	}
	fmt.Fprintln(w, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID")
	for _, l := range lags {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", l.Topic, l.Partition, offsetText(l.Committed), offsetText(l.LogEnd), offsetText(l.Lag),
			orDash(owner[fmt.Sprintf("%s-%d", l.Topic, l.Partition)]))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var unknown []string
	for _, l := range lags {
		if l.Err != nil {
			unknown = append(unknown, fmt.Sprintf("%s-%d: %v", l.Topic, l.Partition, l.Err))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("describe group %q: log end offset unknown for %s", id, strings.Join(unknown, "; "))
	}
	return nil
}

// offsetText renders an offset or lag, "-" when unknown (-1).
func offsetText(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func resetOffsets(ctx context.Context, c *client.Client, group, topic string, parts []int32, target client.ResetTarget, dryRun bool, out io.Writer) error {
	var plan []client.CommitOffset
	var err error
	if dryRun {
		plan, err = c.PlanResetOffsets(ctx, group, topic, parts, target)
	} else {
		plan, err = c.ResetOffsets(ctx, group, topic, parts, target)
	}
	if err != nil {
		return fmt.Errorf("reset offsets of group %q (nothing changed): %w", group, err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
	for _, p := range plan {
		fmt.Fprintf(w, "%s\t%d\t%d\n", p.Topic, p.Partition, p.Offset)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if dryRun {
		fmt.Fprintf(out, "Dry run: group %s's offsets of %s were not changed.\n", group, topic)
		return nil
	}
	fmt.Fprintf(out, "Reset group %s's offsets of %d partition(s) of %s to %v.\n", group, len(plan), topic, target)
	return nil
}
