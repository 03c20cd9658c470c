// produce.go: Produce (key 0), advertised v0-12, served v3-12; needs
// Config.Data.
//
// Behaviour:
//   - v0-2 (message sets) are answered with UNSUPPORTED_VERSION for every
//     partition, as Kafka 4 does; they stay advertised because advertising a
//     minimum above 0 silently turns compression off in older librdkafka.
//   - A transactional produce (transactional_id set, or a batch with the
//     transactional bit) is refused for every partition with
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what Kafka answers a producer
//     that may not use its transactional id (and Redpanda with transactions
//     off): clients treat it as fatal. acks outside -1, 0, 1 is
//     INVALID_REQUIRED_ACKS for every partition.
//   - Each partition's records must be exactly one RecordBatch v2, checked
//     as Kafka's ProduceRequest.validateRecords and LogValidator do: no
//     batch, more than one, magic below 2, no records, a control batch:
//     INVALID_RECORD; a truncated or malformed batch or a CRC mismatch:
//     CORRUPT_MESSAGE; zstd before v7: UNSUPPORTED_COMPRESSION_TYPE. The
//     batch then passes through as bytes: the DataBackend assigns offsets.
//   - The appends are started in request order on the connection's reader
//     (so pipelined produces reach each partition in order), run
//     concurrently, and the response is written once all have answered:
//     per partition its error code, base offset, log append time (-1 for
//     CreateTime) and log start offset (v5+), error message (v8+).
//   - acks=0: no response is written, but the answers are still awaited in
//     turn, and any partition error closes the connection, as Kafka does,
//     so the client refreshes its metadata.
//
// Error codes: UNSUPPORTED_VERSION (35), TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (53), INVALID_REQUIRED_ACKS (21), INVALID_RECORD (87), CORRUPT_MESSAGE (2),
// UNSUPPORTED_COMPRESSION_TYPE (76), and whatever the DataBackend reports
// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT,
// NOT_ENOUGH_REPLICAS, OUT_OF_ORDER_SEQUENCE_NUMBER, ...).

package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/storage/record"
)

// reasonAcksZeroError closes a connection whose acks=0 produce failed.
const reasonAcksZeroError = "acks0_produce_error"

func init() {
	register(api{key: 0, servedMin: 3, servedMax: 12, advertisedMin: 0, advertisedMax: 12,
		handle: handleProduce, unsupported: produceUnsupported, enabled: dataEnabled})
}

// produceUnsupported answers Produce v0-2: UNSUPPORTED_VERSION for every
// partition. With acks=0 the client reads no answer (one would be taken
// for the answer to its next request), so the connection closes instead,
// as for any acks=0 produce that fails.
func produceUnsupported(r *request) reply {
	req := r.kreq.(*kmsg.ProduceRequest)
	if req.Acks == 0 {
		return failed(reasonAcksZeroError, fmt.Errorf("acks=0 Produce v%d: versions 0-2 are not supported", req.Version))
	}
	plan := make([]producePart, 0)
	for ti, t := range req.Topics {
		for _, p := range t.Partitions {
			plan = append(plan, producePart{topic: ti, partition: p.Partition, code: kerr.UnsupportedVersion.Code})
		}
	}
	return respond(produceResponse(req, plan, nil))
}

// producePart is one partition of a Produce request: refused now (code set)
// or to append.
type producePart struct {
	topic     int // index in the request's topics
	partition int32
	code      int16
	msg       string
	batch     []byte
}

// planProduce checks req and returns, in request order, each partition's
// refusal or batch to append. Pure: no I/O.
func planProduce(req *kmsg.ProduceRequest) []producePart {
	var plan []producePart
	all := func(code int16, msg string) []producePart {
		plan = plan[:0]
		for ti, t := range req.Topics {
			for _, p := range t.Partitions {
				plan = append(plan, producePart{topic: ti, partition: p.Partition, code: code, msg: msg})
			}
		}
		return plan
	}
	if req.TransactionID != nil {
		return all(kerr.TransactionalIDAuthorizationFailed.Code, "transactions are not supported")
	}
	switch req.Acks {
	case -1, 0, 1:
	default:
		return all(kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks %d: want -1, 0 or 1", req.Acks))
	}
	for ti, t := range req.Topics {
		for _, p := range t.Partitions {
			part := producePart{topic: ti, partition: p.Partition, batch: p.Records}
			part.code, part.msg = checkProducedBatch(req.Version, p.Records)
			if part.code == transactionalBatch {
				return all(kerr.TransactionalIDAuthorizationFailed.Code, "transactions are not supported")
			}
			if part.code != 0 {
				part.batch = nil
			}
			plan = append(plan, part)
		}
	}
	return plan
}

// transactionalBatch is checkProducedBatch's answer for a valid batch with
// the transactional bit (the whole request is refused).
const transactionalBatch = -2

// checkProducedBatch vets one partition's records as Kafka does before an
// append; 0 means the batch may be appended.
func checkProducedBatch(version int16, b []byte) (int16, string) {
	const magicOffset = 16 // the same in message sets v0/v1 and batches v2
	switch {
	case len(b) == 0:
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d must have at least one record batch per partition", version)
	case len(b) > magicOffset && b[magicOffset] != record.Magic:
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d are only allowed to contain record batches with magic version 2", version)
	}
	size, err := record.FrameSize(b)
	switch {
	case err != nil || size > len(b):
		return kerr.CorruptMessage.Code, "the record batch is truncated or malformed"
	case size < len(b):
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d are only allowed to contain exactly one record batch per partition", version)
	}
	h, err := record.Validate(b)
	switch {
	case errors.Is(err, record.ErrEmptyBatch):
		return kerr.InvalidRecord.Code, "the record batch has no records"
	case errors.Is(err, record.ErrMagic):
		return kerr.InvalidRecord.Code, "the record batch is not magic 2"
	case err != nil:
		return kerr.CorruptMessage.Code, err.Error()
	case h.Control():
		return kerr.InvalidRecord.Code, "clients may not send control batches"
	case h.Compression() == record.CompressionZstd && version < 7:
		return kerr.UnsupportedCompressionType.Code, fmt.Sprintf("Produce requests with version %d are not allowed to use ZStandard compression", version)
	case h.Transactional():
		return transactionalBatch, ""
	}
	return 0, ""
}

func handleProduce(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.ProduceRequest)
	plan := planProduce(req)
	// Start every append now, in request order, on the reader goroutine.
	pending := make([]<-chan AppendResult, len(plan))
	n := 0
	for i, p := range plan {
		if p.code != 0 {
			continue
		}
		pending[i] = c.srv.cfg.Data.Append(c.ctx, AppendRequest{
			Topic:     req.Topics[p.topic].Topic,
			Partition: p.partition,
			Acks:      req.Acks,
			Timeout:   time.Duration(req.TimeoutMillis) * time.Millisecond,
			Batch:     p.batch,
		})
		n++
	}
	finish := func(results []AppendResult) outcome {
		resp := produceResponse(req, plan, results)
		if req.Acks != 0 {
			return outcome{resp: resp}
		}
		if err := produceError(resp); err != nil {
			return outcome{reason: reasonAcksZeroError, err: err}
		}
		return outcome{none: true}
	}
	if n == 0 {
		return reply{now: finish(nil)}
	}
	guard := time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond + appendGrace
	return c.asyncOutcome(r, func(ctx context.Context) outcome {
		results := make([]AppendResult, len(plan))
		timer := time.NewTimer(guard)
		defer timer.Stop()
		expired := false
		for i, ch := range pending {
			if ch == nil {
				continue
			}
			if expired { // take what has arrived, wait no more
				select {
				case results[i] = <-ch:
				default:
					results[i] = unanswered()
				}
				continue
			}
			select {
			case results[i] = <-ch:
			case <-timer.C:
				expired = true
				results[i] = unanswered()
				c.srv.log.WithFields(c.fields(&r.header)).WithFields(logrus.Fields{
					"topic": req.Topics[plan[i].topic].Topic, "partition": plan[i].partition, "waited": guard,
				}).Warn("Kafka produce: the backend did not answer an append; answering REQUEST_TIMED_OUT")
			case <-ctx.Done():
				return outcome{reason: reasonHandler, err: fmt.Errorf("produce: %w", ctx.Err())}
			}
		}
		return finish(results)
	})
}

// appendGrace is how long past the request's timeout_ms the listener waits
// for an append the DataBackend never answers (a bug: it must answer
// REQUEST_TIMED_OUT itself) before answering REQUEST_TIMED_OUT for it, so a
// client is never left waiting forever. A variable for tests.
var appendGrace = 5 * time.Second

// unanswered is the result of an append the backend did not answer in time.
func unanswered() AppendResult {
	return AppendResult{ErrorCode: kerr.RequestTimedOut.Code, ErrorMessage: "the partition did not answer in time"}
}

// produceResponse answers req from plan and, for the partitions appended,
// results (indexed like plan). Pure.
func produceResponse(req *kmsg.ProduceRequest, plan []producePart, results []AppendResult) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti, t := range req.Topics {
		resp.Topics[ti] = kmsg.NewProduceResponseTopic()
		resp.Topics[ti].Topic = t.Topic
		resp.Topics[ti].TopicID = t.TopicID
	}
	for i, p := range plan {
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition = p.partition
		code, msg := p.code, p.msg
		if code == 0 && results != nil {
			res := results[i]
			code, msg = res.ErrorCode, res.ErrorMessage
			if code == 0 {
				sp.BaseOffset = res.BaseOffset
				sp.LogAppendTime = res.LogAppendTime
				sp.LogStartOffset = res.LogStartOffset
			}
		}
		sp.ErrorCode = code
		if code != 0 && msg != "" && req.Version >= 8 {
			sp.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics[p.topic].Partitions = append(resp.Topics[p.topic].Partitions, sp)
	}
	return resp
}

// produceError is the first partition error of resp, nil if none.
func produceError(resp *kmsg.ProduceResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("acks=0 produce to %s/%d failed: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
