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
	"github.com/actorlog/actorlog/actors/group"
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

	var output string
	describe := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's state, members and assignments, and per partition its committed offset, log end offset and lag",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGroupID(args[0]); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				return describeGroup(ctx, c, args[0], output, cmd.OutOrStdout())
			})
		},
	}
	addOutputFlag(describe, &output)

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
// and owner — as tables or, for output "json", a groupDescription. When a
// log end offset could not be read it still prints, then fails.
func describeGroup(ctx context.Context, c *client.Client, id, output string, out io.Writer) error {
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
	lags, err := c.GroupLag(ctx, id, assignedTopicPartitions(d, assigned)...)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", id, err)
	}
	gd := newGroupDescription(d, assigned, lags)
	if output == outputJSON {
		err = writeJSON(out, gd)
	} else {
		err = writeGroupTables(out, gd)
	}
	if err != nil {
		return fmt.Errorf("describe group %q: %w", id, err)
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

// assignedTopicPartitions lists the partitions assigned to d's members,
// member by member, topics and partitions sorted.
func assignedTopicPartitions(d *messages.DescribedGroup, assigned map[string]group.Assignment) []*messages.TopicPartitions {
	var out []*messages.TopicPartitions
	for _, m := range d.Members {
		a := assigned[m.MemberId]
		for _, t := range slices.Sorted(maps.Keys(a)) {
			out = append(out, &messages.TopicPartitions{Topic: t, Partitions: slices.Sorted(slices.Values(a[t]))})
		}
	}
	return out
}

// newGroupDescription is d, its members' assignments and its partitions'
// lags as `groups describe` shows them. A member's assignment is left out
// (nil) while the group is not Stable.
func newGroupDescription(d *messages.DescribedGroup, assigned map[string]group.Assignment, lags []client.PartitionLag) groupDescription {
	gd := groupDescription{
		GroupID: d.GroupId, State: d.GroupState, ProtocolType: d.ProtocolType, Protocol: d.ProtocolData,
		Generation: d.GenerationId, Leader: d.Leader, Members: []memberDescription{}, Offsets: []groupOffset{},
	}
	owner := map[string]string{}
	for _, m := range d.Members {
		md := memberDescription{MemberID: m.MemberId, GroupInstanceID: m.GroupInstanceId, ClientID: m.ClientId, ClientHost: m.ClientHost}
		a := assigned[m.MemberId]
		var parts []topicPartitions
		for _, t := range slices.Sorted(maps.Keys(a)) {
			ps := slices.Sorted(slices.Values(a[t]))
			parts = append(parts, topicPartitions{Topic: t, Partitions: ps})
			for _, p := range ps {
				owner[fmt.Sprintf("%s-%d", t, p)] = m.MemberId
			}
		}
		if d.GroupState == "Stable" {
			md.Assignment = orEmpty(parts)
		}
		gd.Members = append(gd.Members, md)
	}
	for _, l := range lags {
		gd.Offsets = append(gd.Offsets, groupOffset{
			Topic: l.Topic, Partition: l.Partition,
			CommittedOffset: knownOffset(l.Committed), LogEndOffset: knownOffset(l.LogEnd), Lag: knownOffset(l.Lag),
			MemberID: owner[fmt.Sprintf("%s-%d", l.Topic, l.Partition)],
		})
	}
	return gd
}

// writeGroupTables prints gd: a summary line, a table of its members (or
// "No active members.") and a table of its offsets (or "No committed
// offsets.").
func writeGroupTables(out io.Writer, gd groupDescription) error {
	protocol := orDash(gd.ProtocolType)
	if gd.Protocol != "" {
		protocol += "/" + gd.Protocol
	}
	fmt.Fprintf(out, "Group: %s\tState: %s\tProtocol: %s\tGeneration: %d\tLeader: %s\tMembers: %d\n",
		gd.GroupID, gd.State, protocol, gd.Generation, orDash(gd.Leader), len(gd.Members))

	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(gd.Members) > 0 {
		fmt.Fprintln(w, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range gd.Members {
			var parts []string
			for _, tp := range m.Assignment {
				for _, p := range tp.Partitions {
					parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
				}
			}
			assignment := strings.Join(parts, ",")
			if m.Assignment == nil {
				assignment = "(rebalancing)"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, orDash(m.GroupInstanceID), orDash(m.ClientID), orDash(m.ClientHost), orDash(assignment))
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	} else {
		fmt.Fprintln(out, "No active members.")
	}

	if len(gd.Offsets) == 0 {
		fmt.Fprintln(out, "No committed offsets.")
		return nil
	}
	fmt.Fprintln(w, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID")
	for _, o := range gd.Offsets {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", o.Topic, o.Partition, offsetPtrText(o.CommittedOffset), offsetPtrText(o.LogEndOffset),
			offsetPtrText(o.Lag), orDash(o.MemberID))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
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
