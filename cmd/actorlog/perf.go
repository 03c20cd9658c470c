// perf.go: `actorlog perf produce|consume`, after Kafka's
// kafka-producer-perf-test and kafka-consumer-perf-test: a progress line
// every 5 s and a summary in their formats.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/storage/record"
)

func newPerfCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "perf", Short: "Measure produce and consume throughput"}
	cmd.AddCommand(newPerfProduceCmd(g), newPerfConsumeCmd(g), newVerifiableProduceCmd(g), newPerfInProcessCmd(g))
	// --cpu-profile FILE writes a Go CPU profile of the client's run (the
	// host's comes from its --pprof endpoint): where the client's time goes.
	// --mem-profile FILE writes the allocation profile at the end of the
	// run (go tool pprof -sample_index=alloc_space): what it allocated.
	var profile, memProfile string
	cmd.PersistentFlags().StringVar(&profile, "cpu-profile", "", "write a Go CPU profile of this command to FILE")
	cmd.PersistentFlags().StringVar(&memProfile, "mem-profile", "", "write a Go allocation profile of this command to FILE")
	for _, name := range []string{"cpu-profile", "mem-profile"} {
		if err := cmd.PersistentFlags().MarkHidden(name); err != nil {
			panic(err)
		}
	}
	for _, sub := range cmd.Commands() {
		run := sub.RunE
		sub.RunE = func(c *cobra.Command, args []string) (err error) {
			if memProfile != "" {
				defer func() {
					if merr := writeAllocProfile(memProfile); merr != nil && err == nil {
						err = merr
					}
				}()
			}
			if profile == "" {
				return run(c, args)
			}
			f, err := os.Create(profile)
			if err != nil {
				return fmt.Errorf("cpu profile: %w", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return errors.Join(fmt.Errorf("cpu profile: %w", err), f.Close())
			}
			defer func() {
				pprof.StopCPUProfile()
				if cerr := f.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("cpu profile: %w", cerr)
				}
			}()
			return run(c, args)
		}
	}
	return cmd
}

// writeAllocProfile writes the process's allocation profile (every
// allocation since start, sampled) to path, after a GC so that it is
// complete, and prints the exact bytes allocated to stderr.
func writeAllocProfile(path string) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "allocated %d bytes in %d objects\n", ms.TotalAlloc, ms.Mallocs)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("mem profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return errors.Join(fmt.Errorf("mem profile: %w", err), f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mem profile: %w", err)
	}
	return nil
}

// latencies collects per-record latencies in ms (as Kafka's tool samples).
type latencies struct {
	mu      sync.Mutex
	samples []float64
	// every: keep one sample in every this many (Kafka's tool keeps at
	// most 500,000 the same way); 0 or 1: all.
	every int64
	sum   float64
	max   float64
	n     int64
	// window for progress lines
	wn   int64
	wsum float64
	wmax float64
}

func (l *latencies) add(ms float64) {
	l.mu.Lock()
	if l.every <= 1 || l.n%l.every == 0 {
		l.samples = append(l.samples, ms)
	}
	l.sum += ms
	l.n++
	l.max = max(l.max, ms)
	l.wn++
	l.wsum += ms
	l.wmax = max(l.wmax, ms)
	l.mu.Unlock()
}

func (l *latencies) window() (n int64, avg, mx float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, mx = l.wn, l.wmax
	if n > 0 {
		avg = l.wsum / float64(n)
	}
	l.wn, l.wsum, l.wmax = 0, 0, 0
	return n, avg, mx
}

// printTotal prints Kafka's tool's summary line of the latencies (label
// " steady state" for the records after a warm-up), with the throughput
// over elapsed.
func (l *latencies) printTotal(out io.Writer, label string, elapsed time.Duration, recordSize int) {
	l.mu.Lock()
	sorted := slices.Clone(l.samples)
	n, sum, mx := l.n, l.sum, l.max
	l.mu.Unlock()
	slices.Sort(sorted)
	avg := 0.0
	if n > 0 {
		avg = sum / float64(n)
	}
	rps := float64(n) / elapsed.Seconds()
	fmt.Fprintf(out, "%d%s records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.0f ms 50th, %.0f ms 95th, %.0f ms 99th, %.0f ms 99.9th.\n",
		n, label, rps, rps*float64(recordSize)/(1024*1024), avg, mx,
		percentile(sorted, 0.5), percentile(sorted, 0.95), percentile(sorted, 0.99), percentile(sorted, 0.999))
}

// perfSampling is the stride of latency samples for n records: all of
// them up to 500,000, then as many as Kafka's ProducerPerformance keeps.
func perfSampling(n int64) int64 {
	return max(1, n/min(n, 500_000))
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// perfProduceRun is one `perf produce` run's settings, shared by its
// producers.
type perfProduceRun struct {
	topic      string
	recordSize int
	throughput float64 // records/s of one producer; <= 0: as fast as possible
	cfg        producer.ActorConfig
	keys       perfKeyTable
	payload    []byte
	lat        *latencies
	// steady collects the latencies of the records after the warm-up
	// (--warmup-records; nil without one), as Kafka's tool's steady-state
	// statistics; steadyStart is when the first of them was handed to a
	// producer (UnixNano; 0 until then).
	steady      *latencies
	steadyStart atomic.Int64
	failed      atomic.Int64
	firstErr    atomic.Value
	// requests merges the producers' request timings (ProducerStats).
	reqMu    sync.Mutex
	requests producer.RequestLatency
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// validatePerfProduce checks perf produce's numeric flags before anything
// connects.
func validatePerfProduce(numRecords, warmup int64, recordSize, numKeys, producers int) error {
	if numRecords <= 0 || recordSize <= 0 {
		return fmt.Errorf("--num-records and --record-size must be positive")
	}
	if warmup < 0 || warmup >= numRecords {
		return fmt.Errorf("--warmup-records must be at least 0 and fewer than --num-records (%d), got %d", numRecords, warmup)
	}
	if numKeys < 0 {
		return fmt.Errorf("--keys must not be negative")
	}
	if producers < 1 || producers > maxPerfProducers {
		return fmt.Errorf("--producers must be between 1 and %d, got %d", maxPerfProducers, producers)
	}
	if int64(producers) > numRecords {
		return fmt.Errorf("--producers %d is more than --num-records %d", producers, numRecords)
	}
	return nil
}

// maxPerfProducers bounds --producers: each is a client with its own
// actor system and connections.
const maxPerfProducers = 64

// perfShare is producer j's part of n records over k producers: the
// indices [first, first+count), the first n mod k producers taking one
// more, so the records' keys (record i has key i mod --keys) are those a
// single producer would have used.
func perfShare(n int64, k, j int) (first, count int64) {
	q, r := n/int64(k), n%int64(k)
	first = int64(j)*q + min(int64(j), r)
	count = q
	if int64(j) < r {
		count++
	}
	return first, count
}

// perfPaced is how many records a producer paced at throughput records/s
// sends now, elapsed after its start with sent sent: every record due by
// now (record i is due at i/throughput), at least one and at most limit,
// in one message. One record per message, each in a fresh chunk-sized
// slice while the earlier ones were in flight, was ~40 KB allocated per
// record at 50,000 records/s: ~35,000 page faults a run, most of them the
// GC scanning those slices, and pauses of the tool's own goroutines that
// showed in the latency it reports.
func perfPaced(elapsed time.Duration, throughput float64, sent, limit int64) int64 {
	due := int64(elapsed.Seconds()*throughput) + 1
	return max(min(due-sent, limit), 1)
}

// perfPacingStep is how far ahead of time a paced producer hands records
// over, so that it sleeps at least this long between hand-overs, as
// Kafka's ThroughputThrottler sleeps 2 ms at least (MIN_SLEEP_NS). Waking
// for every record that fell due, 5,700 times a second at 50,000
// records/s (9 records each), the tool's own sleeps and wake-ups took
// cores away from the hosts it measures.
const perfPacingStep = 2 * time.Millisecond

// produce sends records [first, first+count) through p, adding each
// acknowledged record's latency to run.lat, and that of every record after
// the first warm to run.steady too, and closes p.
func (run *perfProduceRun) produce(p *producer.Producer, first, count, warm int64) error {
	start := time.Now()
	// Records go to the producer in chunks (one mailbox message each),
	// with at most maxOutstanding unacknowledged, so memory stays bounded
	// and latency includes the wait for buffer space, as in Kafka's tool.
	const chunk = 500
	maxOutstanding := int64(max(run.cfg.BufferMemory/(run.recordSize+16), 2*chunk))
	var outstanding atomic.Int64
	space := make(chan struct{}, 1)
	// Chunk slices are reused once every record of theirs was delivered
	// (the producer is then done with them): a fresh []Send per chunk was
	// 136 bytes allocated per record, more than a 100-byte record itself,
	// and its page faults and GC were ~15 % of this tool's CPU at 100 B.
	free := make(chan []producer.Send, maxOutstanding/chunk+2)
	for sent := int64(0); sent < count; {
		if run.throughput > 0 {
			if ahead := time.Duration(float64(sent)/run.throughput*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		for outstanding.Load() > maxOutstanding-chunk {
			<-space
		}
		n := min(int64(chunk), count-sent)
		if sent < warm {
			n = min(n, warm-sent) // a chunk is all warm-up or all steady state
		}
		if run.throughput > 0 {
			// Every record due within the next perfPacingStep goes now;
			// the next due one is then a step away, worth a sleep.
			n = perfPaced(time.Since(start)+perfPacingStep, run.throughput, sent, n)
		}
		var steady *latencies
		if sent >= warm && run.steady != nil {
			steady = run.steady
			run.steadyStart.CompareAndSwap(0, time.Now().UnixNano())
		}
		var recs []producer.Send
		select {
		case recs = <-free:
		default:
			recs = make([]producer.Send, chunk)
		}
		recs = recs[:n]
		for i := range recs {
			recs[i] = producer.Send{Topic: run.topic, Partition: producer.AnyPartition, Key: run.keys.key(first + sent + int64(i)), Value: run.payload}
		}
		outstanding.Add(n)
		var undelivered atomic.Int64
		undelivered.Store(n)
		p.ProduceMany(recs, func(d producer.Delivered) {
			if d.Err != nil {
				run.failed.Add(1)
				run.firstErr.CompareAndSwap(nil, d.Err)
			} else {
				// From ProduceMany to the delivery report, as Kafka's tool
				// measures from send().
				ms := float64(d.Latency.Microseconds()) / 1000
				run.lat.add(ms)
				if steady != nil {
					steady.add(ms)
				}
			}
			if undelivered.Add(-1) == 0 && cap(recs) == chunk {
				select {
				case free <- recs[:0]:
				default:
				}
			}
			if outstanding.Add(-1) <= maxOutstanding-chunk {
				select {
				case space <- struct{}{}:
				default:
				}
			}
		})
		sent += n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Every record delivered, the producer's request timings are complete.
	if err := p.Flush(ctx); err != nil {
		return errors.Join(err, p.Close(ctx))
	}
	st, err := p.Stats()
	if err != nil {
		return errors.Join(err, p.Close(ctx))
	}
	run.reqMu.Lock()
	run.requests.Add(st.Requests)
	run.reqMu.Unlock()
	return p.Close(ctx)
}

func newPerfProduceCmd(g *globals) *cobra.Command {
	var (
		topic       string
		numRecords  int64
		recordSize  int
		throughput  float64
		acksFlag    string
		batchSize   int
		linger      time.Duration
		compression string
		numKeys     int
		producers   int
		warmup      int64
	)
	cmd := &cobra.Command{
		Use:   "produce --topic T --num-records N --record-size S",
		Short: "Produce N records of S bytes as fast as allowed and report throughput and latency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validatePerfProduce(numRecords, warmup, recordSize, numKeys, producers); err != nil {
				return err
			}
			acks, err := parseAcks(acksFlag)
			if err != nil {
				return err
			}
			codec, err := record.ParseCompression(compression)
			if err != nil {
				return err
			}
			// One producer (its own accumulator, producer id and sequences)
			// per --producers, sharing one client: protoactor's remote
			// start-up swaps gRPC's global logger under the connections
			// of a client already running (a data race in the library),
			// so one process runs one client.
			c, err := g.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			if err := checkTopicPartition(c, topic, nil); err != nil {
				return err
			}
			run := &perfProduceRun{topic: topic, recordSize: recordSize, lat: &latencies{}}
			run.cfg = producer.ActorConfig{Acks: acks}
			run.cfg.BatchSize, run.cfg.Linger, run.cfg.Compression = batchSize, linger, codec
			run.cfg.BufferMemory = max(producer.DefaultBufferMemory, 4*batchSize)
			run.cfg.MaxRequestSize = max(producer.DefaultMaxRequestSize, batchSize)
			if throughput > 0 {
				run.throughput = throughput / float64(producers)
			}
			ps := make([]*producer.Producer, 0, producers)
			for range producers {
				p, err := producer.New(c, run.cfg)
				if err != nil {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					for _, q := range ps {
						err = errors.Join(err, q.Close(ctx))
					}
					return err
				}
				ps = append(ps, p)
			}
			run.payload = make([]byte, recordSize)
			for i := range run.payload {
				run.payload[i] = byte('A' + rand.IntN(26))
			}
			run.keys = perfKeys(numKeys, numRecords)
			out := cmd.OutOrStdout()
			run.lat.every = perfSampling(numRecords)
			run.lat.samples = make([]float64, 0, numRecords/run.lat.every+1)
			if warmup > 0 {
				run.steady = &latencies{every: perfSampling(numRecords - warmup)}
				run.steady.samples = make([]float64, 0, (numRecords-warmup)/run.steady.every+1)
				fmt.Fprintf(out, "Warmup first %d records. Steady state results will print after the complete test summary.\n", warmup)
			}
			start := time.Now()
			stopProgress := progress(out, start, run.lat, recordSize)
			errs := make([]error, producers)
			var wg sync.WaitGroup
			for j, p := range ps {
				first, count := perfShare(numRecords, producers, j)
				_, warm := perfShare(warmup, producers, j)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[j] = run.produce(p, first, count, warm)
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			stopProgress()
			if err := errors.Join(errs...); err != nil {
				return err
			}
			run.lat.printTotal(out, "", elapsed, recordSize)
			if run.steady != nil {
				// From the first steady-state record's hand-over, as Kafka's
				// tool starts its steady-state statistics at that send.
				run.steady.printTotal(out, " steady state", start.Add(elapsed).Sub(time.Unix(0, run.steadyStart.Load())), recordSize)
			}
			// Not Kafka's tool's: the round trip of a produce request, from
			// its send to its answer (request-latency-avg and -max).
			fmt.Fprintf(out, "%d produce requests answered, %.2f ms avg, %.2f ms max request latency.\n",
				run.requests.Count, msOf(run.requests.Avg()), msOf(run.requests.Max))
			if f := run.failed.Load(); f > 0 {
				return fmt.Errorf("%d of %d records failed; first error: %v", f, numRecords, run.firstErr.Load())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to produce to")
	f.Int64Var(&numRecords, "num-records", 0, "number of records")
	f.IntVar(&recordSize, "record-size", 100, "record value size in bytes")
	f.Float64Var(&throughput, "throughput", -1, "records/sec to aim for, over all producers (-1: as fast as possible)")
	f.StringVar(&acksFlag, "acks", "all", "acknowledgements: 0, 1 or all")
	f.IntVar(&batchSize, "batch-size", producer.DefaultBatchSize, "producer batch size in bytes")
	f.DurationVar(&linger, "linger", producer.DefaultLinger, "producer linger")
	f.StringVar(&compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	f.IntVar(&numKeys, "keys", 0, "give record i the key key-%08d of i mod N, e.g. for a compacted topic (0: keyless)")
	f.Int64Var(&warmup, "warmup-records", 0, "treat the first N records as warm-up: a second summary line gives the steady-state statistics of the records after them (Kafka's --warmup-records; with --producers, each producer's first share of N)")
	f.IntVar(&producers, "producers", 1, "independent producers (each its own accumulator and producer id, sharing one client), sharing the records (and --throughput); latencies are merged")
	if err := cmd.MarkFlagRequired("topic"); err != nil {
		panic(err)
	}
	return cmd
}

// perfKeyTable holds the keys of `perf produce --keys N`: record i gets
// key-%08d of i mod N. The keys are built once, slices of one buffer, and
// shared by every record that has them (the producer only reads a key, as
// it does the shared payload).
type perfKeyTable [][]byte

// perfKeys returns the key table for n keys (nil for n = 0: keyless
// records), holding only the keys that numRecords records use.
func perfKeys(n int, numRecords int64) perfKeyTable {
	if n <= 0 {
		return nil
	}
	n = int(min(int64(n), numRecords))
	buf := make([]byte, 0, n*len("key-00000000"))
	t := make(perfKeyTable, n)
	for i := range t {
		start := len(buf)
		buf = fmt.Appendf(buf, "key-%08d", i)
		t[i] = buf[start:len(buf):len(buf)]
	}
	return t
}

// key is record i's key (nil when the table is empty).
func (t perfKeyTable) key(i int64) []byte {
	if len(t) == 0 {
		return nil
	}
	return t[i%int64(len(t))]
}

// progress prints a Kafka-style progress line every 5 s until stopped.
func progress(out io.Writer, start time.Time, lat *latencies, recordSize int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n, avg, mx := lat.window()
				rps := float64(n) / now.Sub(last).Seconds()
				last = now
				fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
					n, rps, rps*float64(recordSize)/(1024*1024), avg, mx)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func newPerfConsumeCmd(g *globals) *cobra.Command {
	var (
		topic     string
		messages  int64
		timeout   time.Duration
		fetchSize int32
		reuse     bool
	)
	cmd := &cobra.Command{
		Use:   "consume --topic T --messages N",
		Short: "Consume N records from the beginning and report throughput",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if messages <= 0 {
				return fmt.Errorf("--messages must be positive")
			}
			if fetchSize <= 0 {
				return fmt.Errorf("--fetch-size must be positive")
			}
			c, err := g.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			if err := checkTopicPartition(c, topic, nil); err != nil {
				return err
			}
			var count, bytes atomic.Int64
			done := make(chan struct{})
			var once sync.Once
			start := time.Now()
			props, err := consumer.Props(consumer.Config{Client: c, Topic: topic, Start: consumer.Earliest(), MaxBytes: fetchSize,
				ReuseBuffers: reuse,
				Handler: func(msgs []consumer.Message) {
					var b int64
					for _, m := range msgs {
						b += int64(len(m.Value) + len(m.Key))
					}
					bytes.Add(b)
					if count.Add(int64(len(msgs))) >= messages {
						once.Do(func() { close(done) })
					}
				}})
			if err != nil {
				return err
			}
			pid := c.System().Root.Spawn(props)
			defer c.System().Root.Stop(pid)
			out := cmd.OutOrStdout()
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			idle := time.NewTimer(timeout)
			defer idle.Stop()
			last := int64(0)
		wait:
			for {
				select {
				case <-done:
					break wait
				case <-t.C:
					n := count.Load()
					fmt.Fprintf(out, "%d records consumed so far (%.1f records/sec)\n", n, float64(n)/time.Since(start).Seconds())
					if n != last {
						idle.Reset(timeout)
						last = n
					}
				case <-idle.C:
					return fmt.Errorf("timed out after %v with %d of %d records", timeout, count.Load(), messages)
				}
			}
			elapsed := time.Since(start)
			n, b := count.Load(), bytes.Load()
			mb := float64(b) / (1024 * 1024)
			fmt.Fprintln(out, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec")
			fmt.Fprintf(out, "%s, %s, %.4f, %.4f, %d, %.4f\n", kafkaTime(start), kafkaTime(time.Now()),
				mb, mb/elapsed.Seconds(), n, float64(n)/elapsed.Seconds())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to consume")
	f.Int64Var(&messages, "messages", 0, "number of records to consume")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "fail after this long without progress")
	// 1 MiB: the consumer's own default, and Kafka's perf consumer's. A
	// larger fetch was slower here, not faster: 4 MiB (this command's
	// setting until 2026-12-05) gave 2.6-3.0 M records/s at 100 B where
	// 1 MiB gave 3.2-3.4 M (perf inprocess, 5 rounds alternated), level at
	// 1 KiB. Every fetch answer is received into a fresh buffer and
	// decoded into a fresh []Message that the records alias; the larger
	// those are, the more the heap swings between collections and the
	// more of it the runtime hands back to the kernel and faults in again
	// (47,000 minor faults for 5 M records at 4 MiB, 25,000 at 1 MiB).
	f.Int32Var(&fetchSize, "fetch-size", consumer.DefaultMaxBytes, "bytes to fetch per partition per request")
	// Off by default, so that the figure is what a consumer gets with its
	// defaults; the handler here keeps nothing, so it may reuse.
	f.BoolVar(&reuse, "reuse-buffers", false, "let the consumer reuse fetch buffers (consumer.Config.ReuseBuffers: records valid only inside the handler)")
	if err := cmd.MarkFlagRequired("topic"); err != nil {
		panic(err)
	}
	return cmd
}

// kafkaTime formats t as Kafka's perf tools do: "2006-01-02 15:04:05:000".
func kafkaTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/1e6)
}
