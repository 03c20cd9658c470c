// compacted.go: the leader's key check for compacted topics. A topic whose
// cleanup.policy includes compact keeps the newest record of each key, so a
// record without a key (a null key; an empty key is a key) has no place in
// it: as Kafka's LogValidator does ("Compacted topic cannot accept message
// without key"), the leader refuses the whole batch with INVALID_RECORD
// before anything of it is written. Only producer appends are checked
// (onProduce, native and Kafka alike); followers copy what their leader
// accepted.
//
// The check decodes the batch's records with a BatchReader the replica
// reuses (one goroutine: the actor's), inflating a compressed batch a
// second time (the log's own check inflates it again): a cost only topics
// with compaction pay. A batch the reader cannot decode passes here and is
// refused by the log's full check with the precise code (CORRUPT_MESSAGE,
// INVALID_RECORD, MESSAGE_TOO_LARGE).

package replica

import (
	"fmt"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// checkKeys refuses (INVALID_RECORD) a producer batch holding a record
// without a key when the replica's topic is compacted; otherwise it
// returns 0. Called on the leader, with r.log open.
func (r *Replica) checkKeys(batch []byte) (messages.ErrorCode, string) {
	if !r.cfg.Log.CleanupPolicy.Compacts() {
		return 0, ""
	}
	if r.keyReader == nil {
		r.keyReader = new(record.BatchReader)
	}
	br := r.keyReader
	if err := br.Reset(batch, r.log.Config().MaxInflatedBytes); err != nil {
		return 0, "" // the log's check refuses it with the right code
	}
	var rec record.Record
	for i := 0; br.Next(&rec); i++ {
		if rec.Key == nil {
			return messages.ErrorCode_ERROR_CODE_INVALID_RECORD,
				fmt.Sprintf("compacted topic requires a key: record %d of the batch has a null key (%s-%d has cleanup.policy=%s); nothing of the batch was written",
					i, r.cfg.Topic, r.cfg.Partition, r.cfg.Log.CleanupPolicy)
		}
	}
	return 0, "" // a decode error (br.Err) is the log's to report
}
