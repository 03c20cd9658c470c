// kcat_test.go: kcat (librdkafka) lists the fake cluster. Skipped where
// kcat is not installed (the project's scripts install it in a later step
// of issue 13).

package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// kcatMetadata is the part of `kcat -L -J` the test reads.
type kcatMetadata struct {
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []kcatTopic `json:"topics"`
}

type kcatTopic struct {
	Topic      string          `json:"topic"`
	Error      string          `json:"error"`
	Partitions []kcatPartition `json:"partitions"`
}

type kcatPartition struct {
	Partition int32    `json:"partition"`
	Leader    int32    `json:"leader"`
	Error     string   `json:"error"`
	Replicas  []kcatID `json:"replicas"`
	ISRs      []kcatID `json:"isrs"`
}

type kcatID struct {
	ID int32 `json:"id"`
}

func ids(list []kcatID) []int32 {
	out := make([]int32, 0, len(list))
	for _, x := range list {
		out = append(out, x.ID)
	}
	return out
}

func TestKcatListsTheCluster(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", ts.addr, "-L", "-J", "-m", "10")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat -L: %v\nstderr: %s", err, stderr.String())
	}
	var md kcatMetadata
	if err := json.Unmarshal(stdout.Bytes(), &md); err != nil {
		t.Fatalf("kcat output %q: %v", stdout.String(), err)
	}
	want := ts.backend.md
	if md.ControllerID != want.ControllerID || len(md.Brokers) != len(want.Brokers) {
		t.Fatalf("kcat saw controller %d brokers %+v", md.ControllerID, md.Brokers)
	}
	for i, b := range md.Brokers {
		if b.ID != want.Brokers[i].NodeID || b.Name != ts.addr {
			t.Errorf("broker %d: %+v, want id %d at %s", i, b, want.Brokers[i].NodeID, ts.addr)
		}
	}
	if len(md.Topics) != len(want.Topics) {
		t.Fatalf("kcat saw %d topics: %s", len(md.Topics), stdout.String())
	}
	for _, wt := range want.Topics {
		i := slices.IndexFunc(md.Topics, func(x kcatTopic) bool {
			return x.Topic == wt.Name
		})
		if i < 0 {
			t.Fatalf("kcat did not list %s: %s", wt.Name, stdout.String())
		}
		got := md.Topics[i]
		if got.Error != "" || len(got.Partitions) != len(wt.Partitions) {
			t.Fatalf("%s: %+v", wt.Name, got)
		}
		for j, wp := range wt.Partitions {
			p := got.Partitions[j]
			leader := max(wp.Leader, -1)
			if p.Partition != wp.Partition || p.Leader != leader || !slices.Equal(ids(p.Replicas), wp.Replicas) || !slices.Equal(ids(p.ISRs), wp.ISR) {
				t.Errorf("%s/%d: kcat saw %+v, want %+v", wt.Name, wp.Partition, p, wp)
			}
			if (p.Error != "") != (wp.Leader < 0) {
				t.Errorf("%s/%d: error %q", wt.Name, wp.Partition, p.Error)
			}
		}
	}
}
