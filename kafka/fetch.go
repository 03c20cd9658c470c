// fetch.go: Fetch (key 1), served and advertised v4-12; needs Config.Data.
//
// Behaviour:
//   - Every partition is read from the DataBackend concurrently, from its
//     fetch offset, at most min(partition_max_bytes, max_bytes) (the
//     backend always returns the first batch). The response then keeps
//     whole batches in request order while they fit partition_max_bytes
//     and, across partitions, max_bytes — except the very first batch of
//     the response, kept however large (KIP-74), as Kafka does.
//   - min_bytes and max_wait_ms apply to the whole request: the answer is
//     written at once when the partitions hold at least min_bytes between
//     them (each counted up to its partition_max_bytes), when any partition
//     has an error or a divergence, or when max_wait_ms is 0; otherwise the
//     handler asks the DataBackend to wake it when any partition's high
//     watermark passes what it read (WatchHighWatermarks), reads again when
//     woken, and answers when enough has arrived or max_wait_ms has passed
//     — no polling: it sleeps until a write or the deadline.
//   - isolation_level 1 (read_committed) is passed on: the backend reads
//     below the last stable offset; the aborted transactions list is empty
//     (no transactions are served).
//   - Fetch sessions (v7+, KIP-227) are not kept: a full fetch (epoch 0 or
//     -1) is answered sessionless, with session id 0, which clients take as
//     "no session" and keep sending full fetches (what Kafka answers when
//     its session cache is full or disabled); an incremental one (epoch >
//     0) names a session this server never gave and gets
//     FETCH_SESSION_ID_NOT_FOUND. forgotten_topics_data is ignored.
//   - current_leader_epoch (v9+) and last_fetched_epoch (v12+) are passed
//     on; the backend fences and reports divergence. rack_id (v11+) is
//     ignored: no preferred read replica (-1).
//   - A DataBackend error, or records that are not whole batches, close
//     the connection (a local fault).
//
// Error codes: FETCH_SESSION_ID_NOT_FOUND (70, top level), and per
// partition what the DataBackend reports (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, ...).

package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/storage/record"
)

func init() {
	register(api{key: 1, servedMin: 4, servedMax: 12, advertisedMin: 4, advertisedMax: 12,
		handle: handleFetch, enabled: dataEnabled})
}

// fetchPart is one partition of a Fetch request.
type fetchPart struct {
	topic int // index in the request's topics
	// partMax is the partition's partition_max_bytes.
	partMax int32
	q       ReadQuery
}

// planFetch returns the partitions of req in request order and, for an
// incremental fetch session, the top-level error code. Pure.
func planFetch(req *kmsg.FetchRequest) ([]fetchPart, int16) {
	if req.Version >= 7 && req.SessionEpoch > 0 {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	var parts []fetchPart
	for ti, t := range req.Topics {
		for _, p := range t.Partitions {
			q := ReadQuery{Topic: t.Topic, Partition: p.Partition, Offset: p.FetchOffset,
				MaxBytes: min(p.PartitionMaxBytes, req.MaxBytes), CurrentLeaderEpoch: -1, LastFetchedEpoch: -1,
				ReadCommitted: req.IsolationLevel == 1}
			if req.Version >= 9 {
				q.CurrentLeaderEpoch = p.CurrentLeaderEpoch
			}
			if req.Version >= 12 {
				q.LastFetchedEpoch = p.LastFetchedEpoch
			}
			parts = append(parts, fetchPart{topic: ti, partMax: p.PartitionMaxBytes, q: q})
		}
	}
	return parts, 0
}

// fetchAnswer is a fetch response built from one round of reads.
type fetchAnswer struct {
	resp *kmsg.FetchResponse
	// available is what the partitions hold between them, each counted up
	// to its partition_max_bytes: what min_bytes is measured against.
	available int
	// now: a partition has an error or a divergence, so the fetch must be
	// answered without waiting.
	now bool
}

// fetchResponse builds req's response from one round of reads (results
// indexed like parts), keeping whole batches within partition_max_bytes
// and max_bytes, the response's first batch excepted. Pure. An error means
// the backend returned records that are not whole batches.
func fetchResponse(req *kmsg.FetchRequest, parts []fetchPart, results []ReadResult) (fetchAnswer, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti, t := range req.Topics {
		resp.Topics[ti] = kmsg.NewFetchResponseTopic()
		resp.Topics[ti].Topic = t.Topic
		resp.Topics[ti].TopicID = t.TopicID
	}
	a := fetchAnswer{resp: resp}
	total, kept := 0, false // bytes kept so far; whether any batch is
	for i, part := range parts {
		res := results[i]
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = part.q.Partition
		// librdkafka reads a null record set as an invalid size: send an
		// empty one.
		sp.RecordBatches = []byte{}
		if part.q.ReadCommitted {
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		sp.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			sp.HighWatermark = -1 // as Kafka answers an errored partition
			a.now = true
			resp.Topics[part.topic].Partitions = append(resp.Topics[part.topic].Partitions, sp)
			continue
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		if d := res.Diverging; d != nil && req.Version >= 12 {
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = d.LeaderEpoch, d.EndOffset
			a.now = true
		}
		a.available += min(len(res.Records), int(max(part.partMax, 0)))
		pbytes := 0
		for pbytes < len(res.Records) {
			size, err := record.FrameSize(res.Records[pbytes:])
			if err != nil || size > len(res.Records)-pbytes {
				return a, fmt.Errorf("%s/%d: the backend returned records that are not whole batches (%d of %d bytes read): %v",
					part.q.Topic, part.q.Partition, pbytes, len(res.Records), err)
			}
			if kept && (total+size > int(req.MaxBytes) || pbytes+size > int(part.partMax)) {
				break
			}
			pbytes += size
			total += size
			kept = true
		}
		if pbytes > 0 {
			// Else the empty, non-null set above stays: a nil slice would
			// encode as a null record set (length -1), which librdkafka
			// refuses ("invalid MessageSetSize -1").
			sp.RecordBatches = res.Records[:pbytes]
		}
		resp.Topics[part.topic].Partitions = append(resp.Topics[part.topic].Partitions, sp)
	}
	return a, nil
}

// fetchWatches are the marks a waiting fetch watches: each partition's
// high watermark (last stable offset for read_committed) as read, or its
// fetch offset when that is ahead.
func fetchWatches(parts []fetchPart, results []ReadResult) []WatchPartition {
	ws := make([]WatchPartition, len(parts))
	for i, part := range parts {
		mark := results[i].HighWatermark
		if part.q.ReadCommitted {
			mark = results[i].LastStableOffset
		}
		ws[i] = WatchPartition{Topic: part.q.Topic, Partition: part.q.Partition, Above: max(mark, part.q.Offset)}
	}
	return ws
}

func handleFetch(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.FetchRequest)
	start := time.Now()
	parts, code := planFetch(req)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return respond(resp)
	}
	data := c.srv.cfg.Data
	deadline := start.Add(min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, c.srv.cfg.MaxFetchWait))
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		results := make([]ReadResult, len(parts))
		for {
			err := fanOut(ctx, len(parts), func(ctx context.Context, i int) error {
				res, err := data.Read(ctx, parts[i].q)
				results[i] = res
				return err
			})
			if err != nil {
				return nil, err
			}
			a, err := fetchResponse(req, parts, results)
			if err != nil {
				return nil, err
			}
			if a.now || len(parts) == 0 || a.available >= int(req.MinBytes) || !time.Now().Before(deadline) {
				return a.resp, nil
			}
			if err := waitForData(ctx, data, fetchWatches(parts, results), deadline); err != nil {
				return nil, err
			}
		}
	})
}

// waitForData returns when a watched partition's high watermark passes
// its mark (or its state changes), or at the deadline; an error only when
// ctx is done (the connection is closing).
func waitForData(ctx context.Context, data ReadBackend, ws []WatchPartition, deadline time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel() // ends the watch: the backend forgets it
	woke := make(chan struct{})
	var once sync.Once
	data.WatchHighWatermarks(wctx, ws, func() { once.Do(func() { close(woke) }) })
	select {
	case <-woke:
	case <-wctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	return nil
}
