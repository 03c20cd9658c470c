// output.go: the --output flag of `topics describe`, `cluster describe` and
// `groups describe` ("table", the default, for people; "json" for scripts
// and the end-to-end tests), and the JSON documents they print. Each
// command prints one JSON document, built from the explicit structs below
// (not the protobufs), so its field names are part of the CLI's interface:
// snake_case, documented in the README, changed only compatibly. Numbers a
// table shows as "-" (unknown) are null in JSON; lists are never null.

package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// The values of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag registers --output (-o) on cmd, bound to dst.
func addOutputFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVarP(dst, "output", "o", outputTable, "output format: table or json")
}

// checkOutput refuses an --output value other than table or json, before
// anything is asked of the cluster.
func checkOutput(format string) error {
	switch format {
	case outputTable, outputJSON:
		return nil
	}
	return fmt.Errorf("--output %q: want table or json", format)
}

// writeJSON prints v as one indented JSON document and a newline.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// knownOffset turns an offset or lag that is -1 (or below) when unknown
// into null.
func knownOffset(n int64) *int64 {
	if n < 0 {
		return nil
	}
	return &n
}

// orEmpty returns xs, or an empty (not nil) slice, so JSON lists are [].
func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// topicDescription is `topics describe --output json`.
type topicDescription struct {
	// Name is the topic's name.
	Name string `json:"name"`
	// ReplicationFactor is the topic's replication factor.
	ReplicationFactor int32 `json:"replication_factor"`
	// Configs are the topic's config overrides.
	Configs map[string]string `json:"configs"`
	// Partitions are the topic's partitions, by index.
	Partitions []partitionDescription `json:"partitions"`
}

// The values of partitionDescription.LeaderStatus.
const (
	leaderAvailable   = "available"
	leaderOffline     = "offline"
	leaderUnavailable = "unavailable"
)

// partitionDescription is one partition of a topicDescription.
type partitionDescription struct {
	Partition int32 `json:"partition"`
	// Leader is the leader's host id, -1 when there is none.
	Leader int32 `json:"leader"`
	// LeaderStatus is "available"; "offline" when no live in-sync replica
	// could lead (Leader is -1); "unavailable" when the leader's host is
	// not registered (it has just gone and leadership has not moved yet).
	LeaderStatus string  `json:"leader_status"`
	Replicas     []int32 `json:"replicas"`
	ISR          []int32 `json:"isr"`
	// LogStartOffset and LogEndOffset are null when the leader did not
	// answer.
	LogStartOffset *int64 `json:"log_start_offset"`
	LogEndOffset   *int64 `json:"log_end_offset"`
	// AddingReplicas and RemovingReplicas are the hosts a reassignment in
	// progress adds and removes.
	AddingReplicas   []int32 `json:"adding_replicas"`
	RemovingReplicas []int32 `json:"removing_replicas"`
}

// clusterDescription is `cluster describe --output json`.
type clusterDescription struct {
	// ControllerID is the controller's host id, -1 when none is elected.
	ControllerID int32 `json:"controller_id"`
	// ControllerEpoch is the controller epoch, 0 when none is elected.
	ControllerEpoch int64 `json:"controller_epoch"`
	// Hosts are the live hosts by id, then the known hosts that are down.
	Hosts []hostDescription `json:"hosts"`
}

// hostDescription is one host of a clusterDescription.
type hostDescription struct {
	// Name is the host's name, "" when it has none.
	Name string `json:"name"`
	ID   int32  `json:"id"`
	// Address is the advertised address, "" when the host is down.
	Address string `json:"address"`
	Alive   bool   `json:"alive"`
	// BrokerEpoch is null when the host is down.
	BrokerEpoch *int64 `json:"broker_epoch"`
	Controller  bool   `json:"controller"`
}

// groupDescription is `groups describe --output json`.
type groupDescription struct {
	GroupID string `json:"group_id"`
	// State is Empty, PreparingRebalance, CompletingRebalance or Stable.
	State string `json:"state"`
	// ProtocolType is "consumer" for Kafka consumers, "" when unknown.
	ProtocolType string `json:"protocol_type"`
	// Protocol is the chosen assignor (e.g. "range"), "" when none.
	Protocol   string `json:"protocol"`
	Generation int32  `json:"generation"`
	// Leader is the leader's member id, "" when none.
	Leader  string              `json:"leader"`
	Members []memberDescription `json:"members"`
	// Offsets are, per partition the group committed or is assigned, the
	// committed offset, the log end offset and the lag.
	Offsets []groupOffset `json:"offsets"`
}

// memberDescription is one member of a groupDescription.
type memberDescription struct {
	MemberID        string `json:"member_id"`
	GroupInstanceID string `json:"group_instance_id"`
	ClientID        string `json:"client_id"`
	ClientHost      string `json:"client_host"`
	// Assignment is the member's partitions, by topic name; null while the
	// group is not Stable (rebalancing).
	Assignment []topicPartitions `json:"assignment"`
}

// topicPartitions is some partitions of one topic.
type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// groupOffset is one partition's line of a groupDescription.
type groupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// CommittedOffset, LogEndOffset and Lag are null when unknown.
	CommittedOffset *int64 `json:"committed_offset"`
	LogEndOffset    *int64 `json:"log_end_offset"`
	Lag             *int64 `json:"lag"`
	// MemberID is the member assigned the partition, "" when none.
	MemberID string `json:"member_id"`
}
