// frame_sizehint_test.go: appendResponse grows its buffer once for a large
// Fetch response (responseSizeHint, issue 13's benchmark profile) and
// still frames it byte for byte as kmsg encodes it.
package kafka

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendResponseFetchOneAllocation(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	tp := kmsg.NewFetchResponseTopic()
	tp.Topic = "bench"
	for p := int32(0); p < 3; p++ {
		part := kmsg.NewFetchResponseTopicPartition()
		part.Partition = p
		part.RecordBatches = bytes.Repeat([]byte{byte(p + 1)}, 1<<20)
		tp.Partitions = append(tp.Partitions, part)
	}
	resp.Topics = append(resp.Topics, tp)

	got := appendResponse(nil, 7, resp)
	body := resp.AppendTo(nil)
	want := binary.BigEndian.AppendUint32(nil, uint32(4+1+len(body)))
	want = binary.BigEndian.AppendUint32(want, 7)
	want = append(want, 0) // flexible response header: no tags
	want = append(want, body...)
	if !bytes.Equal(got, want) {
		t.Fatalf("frame differs from kmsg's encoding: %d bytes, want %d", len(got), len(want))
	}
	if hint := responseSizeHint(resp); hint < len(got) {
		t.Errorf("size hint %d is under the %d-byte frame", hint, len(got))
	}
	allocs := testing.AllocsPerRun(5, func() { _ = appendResponse(nil, 7, resp) })
	// 1 (2 under -race, whose instrumentation allocates); growing from
	// nil without the hint takes dozens.
	if allocs > 2 {
		t.Errorf("appendResponse of a 3 MiB Fetch response: %.0f allocations, want 1", allocs)
	}
	if responseSizeHint(kmsg.NewPtrMetadataResponse()) != 0 {
		t.Error("a non-Fetch response got a size hint")
	}
}
