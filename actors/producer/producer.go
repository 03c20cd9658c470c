// This file holds the package documentation, the producer's Config with its
// defaults and validation, the package's sentinel errors, TopicPartition, and
// Core, which ties the Partitioner to the Accumulator.

// Package producer is the client-side producer of actorlog.
//
// The producer's pure core is a state machine with no I/O, no goroutines
// and no timers of its own (as etcd-io/raft's raft.go). The producer actor
// (the shell, actor.go) owns one Core, feeds it events stamped with the
// current time and carries out what it returns:
//
//	// An app's record arrives:
//	tp, res, err := core.Send(now, topic, numPartitions, producer.AnyPartition, rec, replyTo)
//	// err wrapping ErrBufferFull: hold the request (back-pressure) and try
//	// again after the next Complete; other errors go back to the app.
//	// res.BatchFull: call Ready now. res.NewBatch: re-arm the timer.
//
//	// Whenever the shell wakes up (after Send, a response, or its timer):
//	for _, d := range core.Accumulator.Expire(now) { reply(d) }
//	if core.Accumulator.NeedProducerID() { ask InitProducerID; on its answer SetProducerID(id, epoch) }
//	for _, b := range core.Accumulator.Ready(now) { send ProduceRequest{b.Bytes, correlation_id: int64(b.ID)} to b.TopicPartition's leader }
//	if at, ok := core.Accumulator.NextDeadline(); ok { schedule a tick message to self at `at` }
//
//	// A ProduceResponse arrives:
//	//   success:         deliveries := Complete(id, baseOffset, nil)
//	//   retriable error: deliveries := Retry(id, now, err)  (usually nil: requeued)
//	//   OUT_OF_ORDER_SEQUENCE_NUMBER: deliveries := OutOfOrderSequence(id, now, err)
//	//   UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH: deliveries := ProducerRejected(id, now, err)
//	//   other error:     deliveries := Complete(id, -1, err)
//	// then reply to each Delivery.Report, and wake up as above.
//
//	// The partition's leader is unknown or moving: Pause(tp) until metadata
//	// names a new leader, then Resume(tp).
//
// Nothing in the core is safe for concurrent use: it belongs to the producer
// actor, and only that actor's Receive may touch it.
package producer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/actorlog/actorlog/storage/record"
)

// Defaults filled in by NewAccumulator for zero Config fields. They follow
// the Java client's producer defaults, except the batch size and when a
// batch lingers, which follow franz-go (see DefaultBatchSize and
// DefaultLinger).
const (
	// DefaultBatchSize is the most (uncompressed) record data one
	// partition batch holds: 1 MiB, as franz-go's ProducerBatchMaxBytes
	// (1,000,012 bytes, Kafka's max.message.bytes), not Kafka's 16 KiB
	// batch.size. It is a ceiling, not a target: batches are only this
	// big when records arrive faster than the leader answers (see
	// Config.Linger), so it costs no latency at low rates. At high rates
	// a 16 KiB batch holds 15 records of 1 KiB, and the 5 in flight per
	// partition bound throughput to 75 records per partition per round
	// trip. Memory stays bounded by BufferMemory whatever the partition
	// count. A topic whose max.message.bytes is below BatchSize refuses a
	// full batch (MESSAGE_TOO_LARGE; this producer does not split it, as
	// Kafka's does): give its producers a smaller BatchSize.
	DefaultBatchSize = 1 << 20
	// DefaultLinger is Kafka's linger.ms since Kafka 4.0 (KIP-1030); it was
	// 0 before. Unlike Kafka, a batch lingers only while the producer has
	// a batch in flight (see Config.LingerWhenIdle): an idle producer
	// sends at once, as Nagle's algorithm does, so a low rate pays no
	// linger, and a busy producer gathers what arrives during the round
	// trip, up to BatchSize.
	DefaultLinger = 5 * time.Millisecond
	// DefaultMaxRequestSize is Kafka's max.request.size: 1 MiB. It is also
	// the largest record (plus batch header) the producer accepts.
	DefaultMaxRequestSize = 1 << 20
	// DefaultMaxInFlight is how many batches of one partition a producer
	// keeps in flight. Kafka's max.in.flight.requests.per.connection is 5,
	// but a Kafka request carries one batch for every partition of its
	// broker, while here every batch is a request of its own to its
	// partition's leader actor. With 5, a run of small batches (16 KiB at
	// 1 KiB records) waited on the round trip with the CPU a quarter idle;
	// 10 took `perf produce --batch-size 16384` from 337–372 k to 418–454 k
	// records/s and left the default 1 MiB batches as they were (issue 15;
	// 16 gave little more, with each request's round trip averaging ~1.5 ms
	// instead of ~1 ms).
	DefaultMaxInFlight = 10
	// DefaultBufferMemory is Kafka's buffer.memory: 32 MiB of buffered,
	// not yet acknowledged record data.
	DefaultBufferMemory = 32 << 20
	// DefaultRetryBackoff is Kafka's retry.backoff.ms.
	DefaultRetryBackoff = 100 * time.Millisecond
	// DefaultDeliveryTimeout is Kafka's delivery.timeout.ms: 2 minutes.
	DefaultDeliveryTimeout = 2 * time.Minute
	// DefaultRequestTimeout is Kafka's request.timeout.ms: 30 seconds.
	DefaultRequestTimeout = 30 * time.Second
	// MaxInFlightIdempotent is the largest MaxInFlight an idempotent
	// producer allows: a leader remembers a producer's last 16 batches per
	// partition (storage.ProducerBatchesRetained; Kafka's broker remembers
	// 5, hence its limit of 5), so a retry of any batch in flight is still
	// recognised as a duplicate.
	MaxInFlightIdempotent = 16
)

// Idempotence says whether a producer is idempotent (Kafka's
// enable.idempotence): every batch carries the producer id, epoch and a
// per-partition sequence, so that a partition leader appends a retried
// batch once and refuses one that would leave a gap. The zero value is
// IdempotenceDefault.
type Idempotence int8

const (
	// IdempotenceDefault is idempotent unless the rest of the
	// configuration conflicts (MaxInFlight above MaxInFlightIdempotent,
	// or acks other than all), in which case the producer is not
	// idempotent, as Kafka >= 3.2 does when enable.idempotence is left
	// unset.
	IdempotenceDefault Idempotence = iota
	// IdempotenceOn is idempotent; a conflicting configuration is an
	// error wrapping ErrInvalidConfig (Kafka's enable.idempotence=true
	// set explicitly).
	IdempotenceOn
	// IdempotenceOff is not idempotent: batches carry no producer id, and
	// a retried batch can be appended twice or (with MaxInFlight above 1)
	// after a later batch.
	IdempotenceOff
)

// String returns "default", "on" or "off".
func (i Idempotence) String() string {
	switch i {
	case IdempotenceDefault:
		return "default"
	case IdempotenceOn:
		return "on"
	case IdempotenceOff:
		return "off"
	}
	return "Idempotence(" + strconv.Itoa(int(i)) + ")"
}

// AnyPartition passed as the explicit partition means "none: let the
// partitioner choose".
const AnyPartition int32 = -1

var (
	// ErrInvalidConfig means a Config field is out of range.
	ErrInvalidConfig = errors.New("producer: invalid config")
	// ErrInvalidPartition means an explicit partition is not in
	// [0, numPartitions).
	ErrInvalidPartition = errors.New("producer: invalid partition")
	// ErrNoPartitions means the topic's partition count is not positive
	// (for example, metadata not yet known).
	ErrNoPartitions = errors.New("producer: topic has no partitions")
	// ErrRecordTooLarge means a single record (with a batch header) exceeds
	// MaxRequestSize or BufferMemory: it can never be sent. Kafka's
	// RecordTooLargeException.
	ErrRecordTooLarge = errors.New("producer: record too large")
	// ErrBufferFull means appending the record would exceed BufferMemory.
	// It is transient: the shell should apply back-pressure and append
	// again once a Complete (or Expire) has freed memory.
	ErrBufferFull = errors.New("producer: buffer memory full")
	// ErrDeliveryTimeout means a record was not acknowledged within
	// DeliveryTimeout of its batch's creation. Kafka's TimeoutException for
	// delivery.timeout.ms.
	ErrDeliveryTimeout = errors.New("producer: delivery timeout expired")
	// ErrRequestTimeout is the cause recorded when an in-flight batch had
	// no answer within RequestTimeout (see Accumulator.Expire).
	ErrRequestTimeout = errors.New("producer: request timed out")
	// ErrAborted is the error of records failed by Accumulator.Abort with
	// a nil cause.
	ErrAborted = errors.New("producer: aborted")
)

// TopicPartition names one partition of one topic. It is a comparable value.
type TopicPartition struct {
	// Topic is the topic's name.
	Topic string
	// Partition is the partition's index in the topic, from 0.
	Partition int32
}

// String returns "topic-partition", as Kafka prints a TopicPartition.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// Config configures an Accumulator (and a Core). Zero fields take the
// defaults above, so Config{} is Kafka's default producer (with linger 5ms)
// but for the batch size (1 MiB) and the linger of idle partitions (none).
// Where zero is itself a meaningful setting (Linger, RetryBackoff), a
// negative value asks for zero.
type Config struct {
	// BatchSize is the largest size in bytes of one partition batch: the
	// uncompressed size of the records plus the 61-byte batch header, as
	// record.Builder.EstimatedSize counts it. A batch is closed when it
	// reaches BatchSize or the next record would take it past BatchSize;
	// a record bigger than BatchSize gets a batch of its own. Kafka
	// estimates the compression ratio to pack compressed batches fuller;
	// this core does not, so compressed batches come out smaller than
	// BatchSize. Default DefaultBatchSize; at most MaxRequestSize.
	BatchSize int
	// Linger is how long a batch that is not full waits for more records
	// after its first one (Kafka's linger.ms) while the producer has a
	// batch in flight (to any partition). Default DefaultLinger (5ms, Kafka >= 4.0); negative
	// means no wait (Kafka 3.x's 0). Either way a batch also waits while
	// its partition cannot send it at once (MaxInFlight batches in flight,
	// a batch queued ahead of it, paused, no producer id yet), filling up
	// to BatchSize meanwhile.
	Linger time.Duration
	// LingerWhenIdle makes a batch wait Linger even when the producer has
	// nothing in flight, as Kafka's linger.ms does. Default false: then
	// the batches are sent at once (Nagle's algorithm), so records
	// produced at a low rate are not delayed by Linger, while under load,
	// when requests are always in flight, batches still linger and fill.
	LingerWhenIdle bool
	// RecycleSent lets the accumulator reuse the bytes of an uncompressed
	// batch for a later batch once Complete reports it delivered after a
	// single send: the send's response came, so the request was encoded
	// (or, to a replica in this process, appended) and nothing holds the
	// bytes any more. A batch sent more than once is never reused (an
	// earlier send may still wait in a queue). The producer actor sets it
	// unless acks=0, where Complete comes before the request is even
	// encoded. Reuse spares a fresh batch-sized allocation per batch
	// (page faults and zeroing: a fifth of the client's CPU at 1 KiB
	// records, issue 15).
	RecycleSent bool
	// Compression is the codec of every batch (default none).
	Compression record.Compression
	// MaxRequestSize bounds one record plus the batch header: larger
	// records fail at once with ErrRecordTooLarge. Keep it below the
	// transport's message limit (DESIGN §8). Default DefaultMaxRequestSize.
	MaxRequestSize int
	// MaxInFlight is how many batches of one partition may be sent and not
	// yet answered. Default DefaultMaxInFlight; at most
	// MaxInFlightIdempotent when idempotent. An idempotent producer keeps
	// per-partition order under retries with any MaxInFlight; without
	// idempotence, a failed and retried batch can land after a later
	// batch of the same partition when more than one is in flight: set 1
	// for strict order then.
	MaxInFlight int
	// Idempotence: see Idempotence. Default IdempotenceDefault, which is
	// idempotent unless MaxInFlight exceeds MaxInFlightIdempotent (or the
	// actor's acks are not all). An idempotent Accumulator sends nothing
	// until it has a producer id (see Accumulator.SetProducerID).
	Idempotence Idempotence
	// BufferMemory bounds the bytes buffered (appended and not yet
	// completed, counted uncompressed): an append beyond it fails with
	// ErrBufferFull. Default DefaultBufferMemory; at least MaxRequestSize.
	BufferMemory int
	// RetryBackoff is how long a retried batch waits before it is sent
	// again. Default DefaultRetryBackoff; negative means no wait.
	RetryBackoff time.Duration
	// DeliveryTimeout bounds the time from a batch's creation to its
	// acknowledgement, retries included; then its records fail with
	// ErrDeliveryTimeout. A batch in flight is only failed once its request
	// is answered or times out. Default DefaultDeliveryTimeout; at least
	// Linger + RequestTimeout, as Kafka requires.
	DeliveryTimeout time.Duration
	// RequestTimeout is how long a sent batch may go unanswered before
	// Expire treats it as failed and retries it (the actor may be gone).
	// Default DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// withDefaults returns c with its zero fields set to the defaults and its
// negative Linger and RetryBackoff set to zero.
func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	switch {
	case c.Linger == 0:
		c.Linger = DefaultLinger
	case c.Linger < 0:
		c.Linger = 0
	}
	if c.MaxRequestSize == 0 {
		c.MaxRequestSize = DefaultMaxRequestSize
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.BufferMemory == 0 {
		c.BufferMemory = DefaultBufferMemory
	}
	switch {
	case c.RetryBackoff == 0:
		c.RetryBackoff = DefaultRetryBackoff
	case c.RetryBackoff < 0:
		c.RetryBackoff = 0
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Idempotence == IdempotenceDefault {
		c.Idempotence = IdempotenceOn
		if c.MaxInFlight > MaxInFlightIdempotent {
			c.Idempotence = IdempotenceOff
		}
	}
	return c
}

// withAcks settles Idempotence for a producer whose acks are all
// (acksAll) or not: idempotence needs acks=all, so IdempotenceDefault
// becomes IdempotenceOff without it, and IdempotenceOn fails with an error
// wrapping ErrInvalidConfig.
func (c Config) withAcks(acksAll bool) (Config, error) {
	if acksAll {
		return c, nil
	}
	switch c.Idempotence {
	case IdempotenceOn:
		return c, fmt.Errorf("%w: an idempotent producer needs acks=all", ErrInvalidConfig)
	case IdempotenceDefault:
		c.Idempotence = IdempotenceOff
	}
	return c, nil
}

// idempotent reports whether c, defaults filled in, is idempotent.
func (c Config) idempotent() bool { return c.Idempotence == IdempotenceOn }

// validate checks a Config whose defaults are filled in. Errors wrap
// ErrInvalidConfig.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.BatchSize < 0:
		return bad("batch size %d is negative", c.BatchSize)
	case c.MaxRequestSize < record.HeaderSize+1 || c.MaxRequestSize > math.MaxInt32:
		return bad("max request size %d not in [%d, %d]", c.MaxRequestSize, record.HeaderSize+1, math.MaxInt32)
	case c.BatchSize > c.MaxRequestSize:
		return bad("batch size %d exceeds max request size %d", c.BatchSize, c.MaxRequestSize)
	case c.BufferMemory < c.MaxRequestSize:
		return bad("buffer memory %d is below max request size %d", c.BufferMemory, c.MaxRequestSize)
	case c.MaxInFlight < 0:
		return bad("max in flight %d is negative", c.MaxInFlight)
	case c.Idempotence < IdempotenceDefault || c.Idempotence > IdempotenceOff:
		return bad("idempotence %v is not default, on or off", c.Idempotence)
	case c.idempotent() && c.MaxInFlight > MaxInFlightIdempotent:
		return bad("max in flight %d exceeds %d, the most an idempotent producer allows", c.MaxInFlight, MaxInFlightIdempotent)
	case c.RequestTimeout < 0:
		return bad("request timeout %v is negative", c.RequestTimeout)
	case c.DeliveryTimeout < c.Linger+c.RequestTimeout:
		return bad("delivery timeout %v is below linger %v + request timeout %v", c.DeliveryTimeout, c.Linger, c.RequestTimeout)
	}
	// A trial build checks the codec (and initialises it) once, so that
	// closing a batch later cannot fail.
	b := record.NewBuilder(record.BuilderOptions{Compression: c.Compression})
	b.Append(record.Record{})
	if _, err := b.Build(); err != nil {
		return bad("compression %v: %v", c.Compression, err)
	}
	return nil
}

// Core is the producer's whole pure core: a Partitioner and an Accumulator,
// joined by Send, which applies KIP-480's rule that a keyless record moves
// to a new sticky partition rather than open a new batch on the old one.
// The shell uses the Accumulator directly for everything after Send.
//
// A Core is not safe for concurrent use: it is owned by the producer actor.
type Core struct {
	// Partitioner picks partitions for Send.
	Partitioner *Partitioner
	// Accumulator holds the batches; the shell calls its Ready, Expire,
	// NextDeadline, Complete, Retry, Flush, Pause and Resume directly.
	Accumulator *Accumulator
}

// NewCore returns a Core with cfg (see NewAccumulator) whose partitioner
// draws keyless partitions from rnd (nil: a randomly seeded source).
func NewCore(cfg Config, rnd *rand.Rand) (*Core, error) {
	acc, err := NewAccumulator(cfg)
	if err != nil {
		return nil, err
	}
	return &Core{Partitioner: NewPartitioner(rnd), Accumulator: acc}, nil
}

// Send partitions rec among the topic's numPartitions (see
// Partitioner.Partition; partition is an explicit partition or
// AnyPartition) and appends it with Accumulator.Append, returning the
// partition chosen and the append's result.
//
// For a keyless record without an explicit partition, if the record would
// open a new batch on the sticky partition (the previous batch was sent or
// flushed, or the record does not fit in it, in which case that batch is
// closed and BatchFull is set), Send first moves the topic's sticky
// partition with OnNewBatch and appends there, as Kafka 2.4-3.2's producer
// does (KIP-480), so that no batch is opened just to hold one record on the
// old partition. Unlike Kafka 2.4, keyed records never move the sticky
// partition.
//
// A zero rec.Timestamp is set to now (see Accumulator.Append). Errors are
// those of Partition and Append; a record too large fails before it moves
// anything.
func (c *Core) Send(now time.Time, topic string, numPartitions int, partition int32, rec record.Record, report any) (TopicPartition, AppendResult, error) {
	p, err := c.Partitioner.Partition(topic, rec.Key, partition, numPartitions)
	if err != nil {
		return TopicPartition{}, AppendResult{}, err
	}
	tp := TopicPartition{Topic: topic, Partition: p}
	a := c.Accumulator
	if rec.Timestamp == 0 {
		rec.Timestamp = now.UnixMilli()
	}
	if err := a.checkSize(tp, &rec); err != nil {
		return tp, AppendResult{}, err
	}
	closed := false
	if rec.Key == nil && partition == AnyPartition {
		var join bool
		if join, closed = a.joinOrClose(tp, &rec); !join {
			c.Partitioner.OnNewBatch(topic, p, numPartitions)
			if tp.Partition, err = c.Partitioner.Partition(topic, nil, AnyPartition, numPartitions); err != nil {
				return tp, AppendResult{}, err
			}
		}
	}
	res, err := a.append(now, a.partition(tp), &rec, report)
	res.BatchFull = res.BatchFull || closed
	return tp, res, err
}
