// regress_test.go: regressions found by running real clients against a
// host: a large pipelined request read past its frame, and an empty read
// answered with a null record set.

package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readFrame must stop at the frame's end even when the buffer grows past
// it and the next pipelined request's bytes are already readable.
func TestReadFrameNeverReadsIntoTheNextFrame(t *testing.T) {
	for _, n := range []int{1, frameChunk, frameChunk + 1, 100_000, 650_000} {
		frame := bytes.Repeat([]byte{0xAB}, n)
		next := bytes.Repeat([]byte{0xCD}, 2<<20)
		r := bytes.NewReader(append(append([]byte{}, frame...), next...))
		got, err := readFrame(r, n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(got) != n || !bytes.Equal(got, frame) {
			t.Fatalf("n=%d: read %d bytes, want exactly the frame's %d", n, len(got), n)
		}
		if r.Len() != len(next) {
			t.Fatalf("n=%d: %d bytes of the next frame consumed", n, len(next)-r.Len())
		}
	}
}

// A partition with nothing to return gets an empty record set, never a
// null one, whatever the backend's slice is.
func TestFetchResponseNeverSendsANullRecordSet(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxBytes = 1 << 20
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = "t"
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = 0
	p.PartitionMaxBytes = 1 << 20
	topic.Partitions = append(topic.Partitions, p)
	req.Topics = append(req.Topics, topic)
	parts, code := planFetch(req)
	if code != 0 || len(parts) != 1 {
		t.Fatalf("planFetch = %d parts, code %d", len(parts), code)
	}
	for _, records := range [][]byte{nil, {}} {
		a, err := fetchResponse(req, parts, []ReadResult{{Records: records}})
		if err != nil {
			t.Fatal(err)
		}
		got := a.resp.Topics[0].Partitions[0].RecordBatches
		if got == nil {
			t.Fatalf("records %#v: the response's record set is nil (encoded as null)", records)
		}
	}
}
