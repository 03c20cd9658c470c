// offsets_test.go: table tests of the position and commit bookkeeping —
// positions move only past handled records, commits take what moved, and
// their answers record what the coordinator holds.

package consumer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

func TestOffsetBook(t *testing.T) {
	a, b, c := TopicPartition{"t", 0}, TopicPartition{"t", 1}, TopicPartition{"u", 0}
	type step func(*offsetBook)
	tests := []struct {
		name  string
		steps []step
		// want is the pending commits as "tp@offset" after the steps.
		want string
	}{
		{"nothing known, nothing to commit", []step{func(k *offsetBook) { k.add(a) }}, "[]"},
		{"a start position is committed (the group learns where it stands)", []step{
			func(k *offsetBook) { k.add(a); k.seek(a, 5) },
		}, "[t-0@5]"},
		{"a committed start position is not committed again", []step{
			func(k *offsetBook) { k.add(a); k.setCommitted(a, 5); k.seek(a, 5) },
		}, "[]"},
		{"handled records move the position", []step{
			func(k *offsetBook) { k.add(a); k.setCommitted(a, 5); k.seek(a, 5); k.processed(a, 9, 2) },
		}, "[t-0@9]"},
		{"positions never move back on handling", []step{
			func(k *offsetBook) { k.add(a); k.seek(a, 5); k.processed(a, 9, 2); k.processed(a, 7, 2) },
		}, "[t-0@9]"},
		{"a seek moves back", []step{
			func(k *offsetBook) { k.add(a); k.seek(a, 5); k.processed(a, 9, 2); k.seek(a, 3) },
		}, "[t-0@3]"},
		{"removed partitions are not committed", []step{
			func(k *offsetBook) { k.add(a); k.add(b); k.seek(a, 1); k.seek(b, 2); k.remove(a) },
		}, "[t-1@2]"},
		{"sorted by topic and partition", []step{
			func(k *offsetBook) {
				k.add(c)
				k.add(b)
				k.add(a)
				k.seek(c, 1)
				k.seek(b, 2)
				k.seek(a, 3)
			},
		}, "[t-0@3 t-1@2 u-0@1]"},
		{"untracked partitions are ignored", []step{
			func(k *offsetBook) { k.seek(a, 1); k.processed(a, 4, 1); k.setCommitted(a, 1) },
		}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newOffsetBook()
			for _, s := range tt.steps {
				s(k)
			}
			if got := fmtCommits(k.pending()); got != tt.want {
				t.Fatalf("pending %s, want %s", got, tt.want)
			}
		})
	}
}

func fmtCommits(cs []client.CommitOffset) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s-%d@%d", c.Topic, c.Partition, c.Offset))
	}
	return fmt.Sprint(out)
}

func TestOffsetBookCommitAnswers(t *testing.T) {
	a, b := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	setup := func() (*offsetBook, []client.CommitOffset) {
		k := newOffsetBook()
		k.add(a)
		k.add(b)
		k.seek(a, 0)
		k.seek(b, 0)
		k.processed(a, 10, 3)
		k.processed(b, 20, 3)
		return k, k.pending()
	}
	t.Run("only pending carries the epoch of the last record", func(t *testing.T) {
		_, offs := setup()
		if len(offs) != 2 || offs[0].LeaderEpoch != 3 {
			t.Fatalf("pending %+v", offs)
		}
	})
	t.Run("success", func(t *testing.T) {
		k, offs := setup()
		done, err := k.done(offs, []*messages.PartitionResult{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}, nil)
		if err != nil || len(done) != 2 || k.committed(a) != 10 || k.committed(b) != 20 || len(k.pending()) != 0 {
			t.Fatalf("done %v, %v; committed %d %d; pending %v", done, err, k.committed(a), k.committed(b), k.pending())
		}
		// More records handled: only that partition is pending.
		k.processed(b, 25, 3)
		if got := fmtCommits(k.pending()); got != "[t-1@25]" {
			t.Fatalf("pending %s", got)
		}
	})
	t.Run("a partition refused", func(t *testing.T) {
		k, offs := setup()
		done, err := k.done(offs, []*messages.PartitionResult{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1, ErrorCode: messages.ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE}}, nil)
		if !errors.Is(err, &messages.Error{Code: messages.ErrorCode_ERROR_CODE_OFFSET_METADATA_TOO_LARGE}) || len(done) != 1 || done[0].Partition != 0 {
			t.Fatalf("done %v, %v", done, err)
		}
		if got := fmtCommits(k.pending()); got != "[t-1@20]" {
			t.Fatalf("pending after a partial failure %s, want the refused partition again", got)
		}
	})
	t.Run("the request refused", func(t *testing.T) {
		k, offs := setup()
		reqErr := messages.ErrorCode_ERROR_CODE_ILLEGAL_GENERATION.Err("stale")
		done, err := k.done(offs, nil, reqErr)
		if !errors.Is(err, reqErr) || done != nil || len(k.pending()) != 2 {
			t.Fatalf("done %v, %v; pending %v", done, err, k.pending())
		}
	})
	t.Run("the partition was revoked before the answer", func(t *testing.T) {
		k, offs := setup()
		k.remove(a)
		if _, err := k.done(offs, []*messages.PartitionResult{{}, {}}, nil); err != nil || k.committed(a) != -1 || k.committed(b) != 20 {
			t.Fatalf("err %v, committed %d %d", err, k.committed(a), k.committed(b))
		}
	})
}
