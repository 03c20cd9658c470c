// This file holds fakeLog, a partition leader's log reduced to what an
// idempotent producer sees: it appends batches, deduplicates retries of a
// producer's last MaxInFlightIdempotent batches and refuses sequence gaps and old epochs, as
// the server side does. Tests drive it directly (pure) or behind an actor.

package producer

import (
	"fmt"
	"testing"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// fakeLog is one partition's log with per-producer sequence state.
type fakeLog struct {
	values    []string // record values by offset
	producers map[int64]*fakeProducer
}

// fakeProducer is what the leader remembers of one producer id.
type fakeProducer struct {
	epoch   int16
	lastSeq int32
	recent  []fakeBatch // the last MaxInFlightIdempotent batches appended, oldest first
}

// fakeBatch is one appended batch of a producer.
type fakeBatch struct {
	baseSeq int32
	count   int32
	offset  int64
}

func newFakeLog() *fakeLog { return &fakeLog{producers: map[int64]*fakeProducer{}} }

// produce appends batch, or refuses it, as the leader does; it returns the
// error code and the base offset (-1 on error).
func (l *fakeLog) produce(t testing.TB, batch []byte) (messages.ErrorCode, int64) {
	t.Helper()
	h, err := record.Validate(batch)
	if err != nil {
		t.Errorf("leader got a bad batch: %v", err)
		return messages.ErrorCode_ERROR_CODE_CORRUPT_MESSAGE, -1
	}
	if h.ProducerID < 0 {
		return 0, l.append(t, batch)
	}
	st := l.producers[h.ProducerID]
	switch {
	case st == nil || h.ProducerEpoch > st.epoch:
		st = &fakeProducer{epoch: h.ProducerEpoch}
		l.producers[h.ProducerID] = st
	case h.ProducerEpoch < st.epoch:
		return messages.ErrorCode_ERROR_CODE_INVALID_PRODUCER_EPOCH, -1
	default:
		for _, r := range st.recent {
			if r.baseSeq == h.BaseSequence && r.count == h.RecordCount {
				return 0, r.offset // a retry of a batch already appended
			}
		}
		if h.BaseSequence != seqAdd(st.lastSeq, 1) {
			return messages.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER, -1
		}
	}
	off := l.append(t, batch)
	st.lastSeq = seqAdd(h.BaseSequence, int(h.RecordCount)-1)
	st.recent = append(st.recent, fakeBatch{h.BaseSequence, h.RecordCount, off})
	if len(st.recent) > MaxInFlightIdempotent {
		st.recent = st.recent[1:]
	}
	return 0, off
}

// append adds batch's record values to the log and returns the base offset.
func (l *fakeLog) append(t testing.TB, batch []byte) int64 {
	t.Helper()
	recs, err := record.Records(batch, 1<<30)
	if err != nil {
		t.Errorf("leader cannot read a batch: %v", err) // not Fatal: may run in an actor
	}
	off := int64(len(l.values))
	for _, r := range recs {
		l.values = append(l.values, string(r.Value))
	}
	return off
}

// checkExactlyOnce fails unless the log holds want, in order: every value
// once, none other.
func (l *fakeLog) checkExactlyOnce(t testing.TB, name string, want []string) {
	t.Helper()
	if len(l.values) != len(want) {
		t.Errorf("%s: log has %d records, want %d", name, len(l.values), len(want))
	}
	for i := range min(len(l.values), len(want)) {
		if l.values[i] != want[i] {
			t.Errorf("%s: offset %d holds %q, want %q (log %v)", name, i, l.values[i], want[i], summary(l.values))
			return
		}
	}
}

// summary shortens a long list of values for a failure message.
func summary(vs []string) string {
	if len(vs) <= 20 {
		return fmt.Sprint(vs)
	}
	return fmt.Sprint(vs[:10], " ... ", vs[len(vs)-10:])
}
