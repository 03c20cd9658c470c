// verifiable.go: `actorlog perf verifiable-produce TOPIC`, after Kafka's
// kafka-verifiable-producer.sh (the producer of its system tests): it
// produces numbered records and prints, one JSON object per line on
// stdout, exactly which were acknowledged (with their offsets) and which
// failed, so that a test can compare the acknowledged records with the log.
//
// Records go round-robin over the topic's partitions, by explicit
// partition (record i to partition i mod N, N read once at start; no
// keys), and record number s of partition p has the value "<p>-<s>" (s
// from 0), so a value names its partition and its place in that
// partition's produce order. Output, one line per record outcome, then one
// last line:
//
//	{"event":"ack","partition":0,"offset":41,"value":"0-41"}
//	{"event":"error","partition":1,"value":"1-7","error":"..."}
//	{"event":"done","sent":120,"acked":119,"failed":1}
//
// An ack's offset is -1 with --acks 0. It stops after --max-messages
// records, or at SIGINT or SIGTERM; either way it stops sending, waits for
// the outcome of every record sent (the producer's delivery timeout bounds
// that wait), closes the producer and prints "done", exiting 0 whatever
// the records' fate. A second signal gives up waiting: "done" is printed
// with acked + failed < sent and the command fails.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/producer"
)

// verifiableMaxOutstanding bounds the records sent and not yet reported,
// so memory stays bounded when the cluster stalls; sending pauses at the
// bound.
const verifiableMaxOutstanding = 1 << 15

// verifiableCloseTimeout bounds closing the producer once every record's
// outcome is known (nothing is left to flush by then).
const verifiableCloseTimeout = 30 * time.Second

// errInterrupted means a second signal ended the wait for outstanding
// records.
var errInterrupted = errors.New("verifiable-produce: interrupted while waiting for outstanding records")

// Output lines. Field order is the output's.
type (
	verifiableAck struct {
		Event     string `json:"event"` // "ack"
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Value     string `json:"value"`
	}
	verifiableError struct {
		Event     string `json:"event"` // "error"
		Partition int32  `json:"partition"`
		Value     string `json:"value"`
		Error     string `json:"error"`
	}
	// verifiableDone is the last line; acked + failed < sent only when
	// the wait for outcomes was interrupted.
	verifiableDone struct {
		Event  string `json:"event"` // "done"
		Sent   int64  `json:"sent"`
		Acked  int64  `json:"acked"`
		Failed int64  `json:"failed"`
	}
)

// verifiableValue is the value of record seq (from 0) of partition.
func verifiableValue(partition int32, seq int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(seq, 10)
}

// asyncProducer is what the verifiable producer uses of
// *producer.Producer (a seam for its tests).
type asyncProducer interface {
	ProduceAsync(msg *producer.Send)
	Close(ctx context.Context) error
}

// verifiableOptions are verifiableProduce's settings.
type verifiableOptions struct {
	topic      string
	partitions int32   // > 0
	maxRecords int64   // < 0: until stopped
	throughput float64 // records per second; <= 0: as fast as accepted
	// maxOutstanding bounds records sent and not yet reported (> 0).
	maxOutstanding int
}

// outcome is one record's delivery, passed from the producer's callback
// to verifiableProduce's loop.
type outcome struct {
	partition int32
	value     string
	offset    int64
	err       error
}

// verifiableProduce produces records to p as verifiableOptions say and
// writes one JSON line per outcome, then the done line, to w. It returns
// when maxRecords (or, after the first value on stop, every record sent)
// have their outcome; a second value on stop ends the wait early with
// errInterrupted. Errors writing w are returned after the producer is
// closed.
//
// Threading: everything runs on the caller's goroutine; the producer's
// callbacks only send to a channel with room for every outstanding
// record, so they never block the producer actor.
func verifiableProduce(p asyncProducer, o verifiableOptions, stop <-chan os.Signal, w io.Writer) (verifiableDone, error) {
	out := bufio.NewWriter(w)
	outcomes := make(chan outcome, o.maxOutstanding)
	seqs := make([]int64, o.partitions)
	done := verifiableDone{Event: "done"}
	var writeErr error
	emit := func(v any) {
		b, err := json.Marshal(v)
		if err == nil {
			_, err = out.Write(append(b, '\n'))
		}
		if err != nil && writeErr == nil {
			writeErr = fmt.Errorf("verifiable-produce: write output: %w", err)
		}
	}
	send := func() {
		part := int32(done.Sent % int64(o.partitions))
		v := verifiableValue(part, seqs[part])
		seqs[part]++
		done.Sent++
		p.ProduceAsync(&producer.Send{Topic: o.topic, Partition: part, Value: []byte(v),
			Callback: func(d producer.Delivered) {
				outcomes <- outcome{partition: part, value: v, offset: d.Offset, err: d.Err}
			}})
	}
	report := func(r outcome) {
		if r.err != nil {
			done.Failed++
			emit(verifiableError{Event: "error", Partition: r.partition, Value: r.value, Error: r.err.Error()})
			return
		}
		done.Acked++
		emit(verifiableAck{Event: "ack", Partition: r.partition, Offset: r.offset, Value: r.value})
	}

	var loopErr error
	stopped := false
	start := time.Now()
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	defer pace.Stop()
loop:
	for writeErr == nil {
		outstanding := done.Sent - done.Acked - done.Failed
		more := !stopped && (o.maxRecords < 0 || done.Sent < o.maxRecords)
		if !more && outstanding == 0 {
			break
		}
		var paced <-chan time.Time
		if more && outstanding < int64(o.maxOutstanding) {
			var wait time.Duration
			if o.throughput > 0 {
				wait = time.Until(start.Add(time.Duration(float64(done.Sent) / o.throughput * float64(time.Second))))
			}
			if wait <= 0 {
				select {
				case r := <-outcomes:
					report(r)
				case <-stop:
					stopped = true
				default:
					send()
				}
				continue
			}
			pace.Reset(wait) // Go >= 1.23: no stale tick survives Reset
			paced = pace.C
		}
		if len(outcomes) == 0 {
			// About to block: let readers see what is known so far.
			if err := out.Flush(); err != nil && writeErr == nil {
				writeErr = fmt.Errorf("verifiable-produce: write output: %w", err)
			}
		}
		select {
		case r := <-outcomes:
			report(r)
		case <-paced:
		case <-stop:
			if stopped {
				loopErr = fmt.Errorf("%w: %d of %d records have no outcome", errInterrupted, outstanding, done.Sent)
				break loop
			}
			stopped = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifiableCloseTimeout)
	defer cancel()
	closeErr := p.Close(ctx)
	// Outcomes reported while closing (after an interrupted wait, or a
	// write error) still count.
	for len(outcomes) > 0 {
		report(<-outcomes)
	}
	emit(done)
	if err := out.Flush(); err != nil && writeErr == nil {
		writeErr = fmt.Errorf("verifiable-produce: write output: %w", err)
	}
	switch {
	case writeErr != nil:
		return done, writeErr
	case loopErr != nil:
		return done, loopErr
	case closeErr != nil:
		return done, fmt.Errorf("verifiable-produce: close producer: %w", closeErr)
	}
	return done, nil
}

// topicPartitionCount returns how many partitions topic has.
func topicPartitionCount(c *client.Client, topic string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.RequestTimeout())
	defer cancel()
	md, err := c.Metadata(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("topic %q: metadata: %w", topic, err)
	}
	if len(md.Topics) != 1 {
		return 0, fmt.Errorf("topic %q: no metadata returned", topic)
	}
	t := md.Topics[0]
	if err := t.ErrorCode.Err("topic " + topic); err != nil {
		return 0, err
	}
	if len(t.Partitions) == 0 {
		return 0, fmt.Errorf("topic %q has no partitions", topic)
	}
	return int32(len(t.Partitions)), nil
}

func newVerifiableProduceCmd(g *globals) *cobra.Command {
	var (
		maxMessages int64
		throughput  float64
		acksFlag    string
	)
	cmd := &cobra.Command{
		Use:   "verifiable-produce TOPIC",
		Short: "Produce numbered records round-robin over partitions and print each one's outcome as JSON (Kafka's verifiable producer)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			acks, err := parseAcks(acksFlag)
			if err != nil {
				return err
			}
			// Signals from now on: one arriving while connecting still
			// stops the run cleanly, before the first record.
			sig := make(chan os.Signal, 2)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sig)
			c, err := g.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			parts, err := topicPartitionCount(c, topic)
			if err != nil {
				return err
			}
			// Default producer settings otherwise: whatever a user of the
			// library gets (idempotent where the defaults make it so).
			p, err := producer.New(c, producer.ActorConfig{Acks: acks})
			if err != nil {
				return fmt.Errorf("verifiable-produce: %w", err)
			}
			_, err = verifiableProduce(p, verifiableOptions{topic: topic, partitions: parts, maxRecords: maxMessages,
				throughput: throughput, maxOutstanding: verifiableMaxOutstanding}, sig, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.Int64Var(&maxMessages, "max-messages", -1, "stop after this many records (-1: until SIGINT or SIGTERM)")
	f.Float64Var(&throughput, "throughput", -1, "records/sec to aim for, over all partitions (-1: as fast as possible)")
	f.StringVar(&acksFlag, "acks", "all", "acknowledgements: 0, 1 or all")
	return cmd
}
