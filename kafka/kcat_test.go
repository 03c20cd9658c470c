// kcat_test.go: kcat (librdkafka) lists the fake cluster, produces with
// every codec and consumes back exactly what it wrote. Skipped where kcat
// is not installed (the project's scripts install it in a later step of
// issue 13).

package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/storage/record"
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

// TestKcatProducesAndConsumes: kcat -P (idempotent: InitProducerId, acks
// all) writes N lines with each codec (one partition per codec), then kcat
// -C -e reads exactly those N lines back; librdkafka must not have turned
// compression off.
func TestKcatProducesAndConsumes(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	const n = 1000
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	ds := startDataServer(t, map[string]int{"kc": len(codecs)}, nil)
	var lines bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&lines, "line-%d-%s\n", i, strings.Repeat("x", i%50))
	}
	run := func(stdin []byte, args ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-b", ds.addr}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v: %v\nstderr: %s", args, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	for p, codec := range codecs {
		part := strconv.Itoa(p)
		_, stderr := run(lines.Bytes(), "-P", "-t", "kc", "-p", part, "-z", codec, "-X", "debug=feature",
			"-X", "enable.idempotence=true")
		// librdkafka enables codecs by the APIs it sees advertised; v2
		// batches need MsgVer2 (Produce from v0 among them).
		for _, feature := range []string{"MsgVer2", "ZSTD"} {
			if strings.Contains(stderr, "Disabling feature "+feature+"\n") {
				t.Errorf("%s: librdkafka disabled feature %s", codec, feature)
			}
		}
		// librdkafka 2.0 ties LZ4 to FindCoordinator, which comes with the
		// group APIs (a later step of issue 13): until then it sends lz4
		// batches uncompressed.
		lz4Off := codec == "lz4" && ds.srv.table.lookup(10) == nil
		if lz4Off && !strings.Contains(stderr, "Disabling feature LZ4") {
			t.Errorf("lz4: librdkafka kept LZ4 without FindCoordinator; update this test")
		}
		out, _ := run(nil, "-C", "-t", "kc", "-p", part, "-o", "beginning", "-e", "-q")
		if out != lines.String() {
			got := strings.Count(out, "\n")
			t.Fatalf("%s: kcat -C -e read %d lines, not the %d written", codec, got, n)
		}
		var want record.Compression
		if codec != "none" && !lz4Off {
			if want, err = record.ParseCompression(codec); err != nil {
				t.Fatal(err)
			}
		}
		var got []record.Compression
		for _, b := range ds.data.stored("kc", int32(p)) {
			h, err := record.ParseHeader(b)
			if err != nil {
				t.Fatalf("%s: stored batch: %v", codec, err)
			}
			got = append(got, h.Compression())
			if h.ProducerID < 0 {
				t.Fatalf("%s: stored batch without a producer id: kcat was not idempotent", codec)
			}
		}
		if !slices.Contains(got, want) {
			t.Errorf("%s: stored batches with codecs %v\n%s", codec, got, stderr)
		}
	}
}
