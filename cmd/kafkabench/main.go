// kafkabench: the Kafka-listener benchmark of issue 13. It measures Kafka
// brokers through franz-go's kgo with the client's default settings
// (acks=all, idempotent, kgo's default linger and compression) and reports
// each target's figures and their ratio to a baseline target:
//
//   - produce N records of each --sizes to a fresh --partitions topic,
//     rec/s and MB/s (from the first Produce to the end of Flush);
//   - consume them all from the start with a fresh kgo consumer, rec/s;
//   - produce --rate records/s of --latency-size bytes for --duration,
//     produce-ack latency (Produce call to promise) p50/p99/max.
//
// Targets are measured alternately (round r starts with target r mod T),
// each workload on every target before the next workload, so machine
// noise falls on all of them alike; a figure is the median of --rounds.
//
// --kfake starts franz-go's kfake in this process in disk mode (DataDir,
// one broker) as the baseline. kfake is imported here only: the actorlog
// product binary does not link it. --serve-kfake ADDR-FILE runs only that
// kfake (writing its address to the file) until SIGINT/SIGTERM, for
// scripts/kafka-bench.sh's kcat timings; --create-topic makes a topic on
// every target and exits.
//
// Usage (scripts/kafka-bench.sh starts the hosts and runs it):
//
//	kafkabench --kfake --target actorlog=127.0.0.1:9092 \
//	    --target actorlog-3/3=127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// target is one broker (or cluster) under test.
type target struct {
	Name  string   `json:"name"`
	Addrs []string `json:"addrs"`
	RF    int16    `json:"replication_factor"`
	PIDs  []int    `json:"pids,omitempty"` // the target's processes, for HostCPU
	// TLS, when set, is how clients reach the target (--tls-target).
	TLS *tls.Config `json:"-"`
}

// opts are a client's options to reach t: its seeds and, when it speaks
// TLS, the TLS config; then more.
func (t target) opts(more ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(t.Addrs...)}
	if t.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(t.TLS.Clone()))
	}
	return append(opts, more...)
}

// config is everything a run takes from its flags.
type config struct {
	targets     []target
	kfake       bool
	kfakeDir    string
	base        string
	n           int
	sizes       []int
	partitions  int32
	rounds      int
	rate        int
	duration    time.Duration
	latencySize int
	linger      time.Duration   // <0: the client's default
	latLingers  []time.Duration // the latency run's lingers, <0: the client's default
	compression string          // "": the client's default
	batchSize   int             // producer batch max bytes, 0: the client's default
	timeout     time.Duration   // per workload
	skip        map[string]bool
	topicPrefix string
	keepTopics  bool
	// payloadLive keeps the value pool (64 MiB) reachable while the
	// consumers run, as kafkabench did until 2026-12-06 (see runAll).
	payloadLive bool
}

// result is one measurement of one workload on one target.
type result struct {
	Target   string        `json:"target"`
	Workload string        `json:"workload"`
	Round    int           `json:"round"`
	Records  int64         `json:"records"`
	Bytes    int64         `json:"bytes"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	RecPerS  float64       `json:"rec_per_s"`
	MBPerS   float64       `json:"mb_per_s"`
	P50      time.Duration `json:"p50_ns,omitempty"`
	P99      time.Duration `json:"p99_ns,omitempty"`
	Max      time.Duration `json:"max_ns,omitempty"`
	// HostCPU is the CPU time (user+system) the target's --pid processes
	// used during the run: robust to a loaded machine where wall-clock
	// rates are not. 0 when the target has no --pid.
	HostCPU time.Duration `json:"host_cpu_ns,omitempty"`
	// SelfCPU is this process's CPU time during the run: the client's,
	// plus the broker's for the in-process kfake (so kfake's own cost is
	// about its SelfCPU less another target's).
	SelfCPU time.Duration `json:"self_cpu_ns"`
}

// targetList is the repeatable --target flag: NAME[/RF]=HOST:PORT[,HOST:PORT...].
type targetList []target

func (l *targetList) String() string {
	var s []string
	for _, t := range *l {
		s = append(s, fmt.Sprintf("%s/%d=%s", t.Name, t.RF, strings.Join(t.Addrs, ",")))
	}
	return strings.Join(s, " ")
}

func (l *targetList) Set(v string) error {
	t, err := parseTarget(v)
	if err != nil {
		return err
	}
	*l = append(*l, t)
	return nil
}

func parseTarget(v string) (target, error) {
	name, addrs, ok := strings.Cut(v, "=")
	if !ok || name == "" || addrs == "" {
		return target{}, fmt.Errorf("target %q: want NAME[/RF]=HOST:PORT[,HOST:PORT...]", v)
	}
	t := target{Name: name, RF: 1}
	if n, rf, ok := strings.Cut(name, "/"); ok {
		r, err := strconv.ParseInt(rf, 10, 16)
		if err != nil || r < 1 {
			return target{}, fmt.Errorf("target %q: bad replication factor %q", v, rf)
		}
		t.Name, t.RF = n, int16(r)
	}
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			t.Addrs = append(t.Addrs, a)
		}
	}
	if len(t.Addrs) == 0 {
		return target{}, fmt.Errorf("target %q: no address", v)
	}
	return t, nil
}

// pidList is the repeatable --pid flag: NAME=PID[,PID...].
type pidList map[string][]int

func (l *pidList) String() string { return fmt.Sprint(map[string][]int(*l)) }

func (l *pidList) Set(v string) error {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("pid %q: want NAME=PID[,PID...]", v)
	}
	if *l == nil {
		*l = pidList{}
	}
	for _, f := range strings.Split(list, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			return fmt.Errorf("pid %q: bad pid %q", v, f)
		}
		(*l)[name] = append((*l)[name], p)
	}
	return nil
}

// cpuTime is the user+system CPU time of pids so far, from /proc/PID/stat
// (clock ticks, taken as 100 Hz, Linux's USER_HZ).
func cpuTime(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return 0, fmt.Errorf("cpu time of pid %d: %w", p, err)
		}
		// Fields after the command's closing parenthesis: state is 3,
		// utime 14 and stime 15 of the whole line.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 13 {
			return 0, fmt.Errorf("cpu time of pid %d: unexpected /proc/%d/stat", p, p)
		}
		for _, s := range f[11:13] {
			ticks, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu time of pid %d: %w", p, err)
			}
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total, nil
}

// withCPU runs fn and sets its result's SelfCPU, and HostCPU from t's
// processes.
func withCPU(t target, fn func() (result, error)) (result, error) {
	self := []int{os.Getpid()}
	hostBefore, err := cpuTime(t.PIDs)
	if err != nil {
		return result{}, err
	}
	selfBefore, err := cpuTime(self)
	if err != nil {
		return result{}, err
	}
	r, err := fn()
	if err != nil {
		return r, err
	}
	selfAfter, err := cpuTime(self)
	if err != nil {
		return result{}, err
	}
	hostAfter, err := cpuTime(t.PIDs)
	if err != nil {
		return result{}, err
	}
	r.HostCPU, r.SelfCPU = hostAfter-hostBefore, selfAfter-selfBefore
	return r, nil
}

func parseSizes(v string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("size %q: want a positive byte count", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseLingers(v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "default" {
			out = append(out, -1)
			continue
		}
		if s == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("linger %q: want a duration or \"default\"", s)
		}
		out = append(out, d)
	}
	return out, nil
}

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var cfg config
	var targets targetList
	var sizes, skip, jsonOut, serveKfake, createTopic string
	fs := flag.NewFlagSet("kafkabench", flag.ContinueOnError)
	fs.Var(&targets, "target", "a broker under test, NAME[/RF]=HOST:PORT[,HOST:PORT...] (repeatable; RF is the topics' replication factor, default 1)")
	fs.BoolVar(&cfg.kfake, "kfake", false, "start franz-go's kfake in this process (disk mode, 1 broker) as target \"kfake\"")
	fs.StringVar(&cfg.kfakeDir, "kfake-dir", "", "kfake's DataDir (default a temporary directory, removed at exit)")
	fs.StringVar(&cfg.base, "base", "", "target the ratios are to (default kfake with --kfake, else the first --target)")
	fs.IntVar(&cfg.n, "n", 1_000_000, "records per produce/consume run")
	fs.StringVar(&sizes, "sizes", "100,1024", "record value sizes in bytes, comma-separated")
	var partitions int
	fs.IntVar(&partitions, "partitions", 3, "partitions of every benchmark topic")
	fs.IntVar(&cfg.rounds, "rounds", 2, "rounds of every workload on every target (figures are medians)")
	fs.IntVar(&cfg.rate, "rate", 50_000, "records/s of the fixed-rate latency run (0: skip it)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of the fixed-rate latency run")
	fs.IntVar(&cfg.latencySize, "latency-size", 100, "record value size of the fixed-rate latency run")
	fs.DurationVar(&cfg.linger, "linger", -1, "producer linger of the throughput runs (default: kgo's own default, 10ms in kgo v1.22)")
	var latLingers string
	fs.StringVar(&latLingers, "latency-linger", "0,default", "producer lingers of the fixed-rate run, one run each, comma-separated (\"default\": kgo's own)")
	fs.IntVar(&cfg.batchSize, "batch-size", 0, "producer batch size in bytes, kgo.ProducerBatchMaxBytes (default: kgo's own, 1,000,012)")
	fs.StringVar(&cfg.compression, "compression", "", "producer compression: none, snappy, lz4, zstd, gzip (default: kgo's own default)")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "bound on every single workload run")
	fs.StringVar(&skip, "skip", "", "workload kinds to skip, comma-separated: produce (and its consume), consume, latency")
	fs.StringVar(&cfg.topicPrefix, "topic-prefix", "kbench", "prefix of the benchmark topics' names")
	fs.BoolVar(&cfg.keepTopics, "keep-topics", false, "do not delete the benchmark topics after each run")
	fs.BoolVar(&cfg.payloadLive, "payload-live", false, "keep the 64 MiB value pool reachable while consumers run (a GC ballast for them: the old behaviour, for A/B runs)")
	var tlsCA, tlsTargets string
	fs.StringVar(&tlsCA, "tls-ca", "", "PEM CA file the --tls-target targets' certificates are verified against")
	fs.StringVar(&tlsTargets, "tls-target", "", "targets (comma-separated names) whose Kafka listener speaks TLS, verified with --tls-ca")
	var pids pidList
	fs.Var(&pids, "pid", "NAME=PID[,PID...]: processes of target NAME whose CPU time each run reports (repeatable; Linux /proc)")
	fs.StringVar(&jsonOut, "json", "", "also write every raw result to this file as JSON")
	fs.StringVar(&serveKfake, "serve-kfake", "", "only run the disk-mode kfake, write its address to this file, serve until SIGINT/SIGTERM")
	fs.StringVar(&createTopic, "create-topic", "", "only create this topic (--partitions, each target's RF) on every target, then exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	var err error
	if cfg.sizes, err = parseSizes(sizes); err != nil {
		return err
	}
	if cfg.latLingers, err = parseLingers(latLingers); err != nil {
		return err
	}
	cfg.partitions = int32(partitions)
	for i := range targets {
		targets[i].PIDs = pids[targets[i].Name]
	}
	for name := range pids {
		found := false
		for _, t := range targets {
			found = found || t.Name == name
		}
		if !found {
			return fmt.Errorf("--pid %s: no such --target", name)
		}
	}
	if err := targetsTLS(targets, tlsTargets, tlsCA); err != nil {
		return err
	}
	cfg.targets = targets
	cfg.skip = map[string]bool{}
	for _, s := range strings.Split(skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.skip[s] = true
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if serveKfake != "" {
		return serveKfakeUntil(ctx, cfg.kfakeDir, serveKfake)
	}
	if createTopic != "" {
		for _, t := range cfg.targets {
			if err := createAndWait(ctx, t, createTopic, cfg.partitions); err != nil {
				return err
			}
			fmt.Printf("created %s on %s\n", createTopic, t.Name)
		}
		return nil
	}
	results, err := run(ctx, cfg, os.Stdout)
	if jsonOut != "" && len(results) > 0 {
		b, jerr := json.MarshalIndent(results, "", "  ")
		if jerr != nil {
			return fmt.Errorf("encode results: %w", jerr)
		}
		if werr := os.WriteFile(jsonOut, b, 0o644); werr != nil {
			return fmt.Errorf("write %s: %w", jsonOut, werr)
		}
	}
	return err
}

// startKfake starts a one-broker kfake in disk mode under dir (a new
// temporary directory when dir is ""); stop closes it and removes a
// temporary directory.
func startKfake(dir string) (c *kfake.Cluster, stop func(), err error) {
	tmp := ""
	if dir == "" {
		if tmp, err = os.MkdirTemp("", "kafkabench-kfake-"); err != nil {
			return nil, nil, fmt.Errorf("kfake data dir: %w", err)
		}
		dir = tmp
	}
	c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, nil, fmt.Errorf("start kfake: %w", err)
	}
	return c, func() {
		c.Close()
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}, nil
}

func serveKfakeUntil(ctx context.Context, dir, addrFile string) error {
	c, stop, err := startKfake(dir)
	if err != nil {
		return err
	}
	defer stop()
	if err := os.WriteFile(addrFile, []byte(strings.Join(c.ListenAddrs(), ",")+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", addrFile, err)
	}
	<-ctx.Done()
	return nil
}

// run measures every workload on every target and prints the report.
func run(ctx context.Context, cfg config, out io.Writer) ([]result, error) {
	targets := append([]target(nil), cfg.targets...)
	if cfg.kfake {
		c, stop, err := startKfake(cfg.kfakeDir)
		if err != nil {
			return nil, err
		}
		defer stop()
		targets = append([]target{{Name: "kfake", Addrs: c.ListenAddrs(), RF: 1}}, targets...)
	}
	if len(targets) == 0 {
		return nil, errors.New("no target: give --kfake and/or --target")
	}
	if cfg.n < 1 || cfg.rounds < 1 || cfg.partitions < 1 {
		return nil, errors.New("--n, --rounds and --partitions must be positive")
	}
	base := cfg.base
	if base == "" {
		base = targets[0].Name
	}
	for _, t := range targets {
		fmt.Fprintf(out, "target %-12s rf=%d %s\n", t.Name, t.RF, strings.Join(t.Addrs, ","))
	}
	// One random buffer all records' values are windows of, without an
	// allocation each: consecutive records take consecutive windows, so
	// no batch repeats a byte sequence and the values are incompressible
	// (kgo compresses with snappy by default). The buffer used to be
	// 64 KiB with records 7,919 bytes apart: every batch repeated the same
	// 64 KiB, snappy shrank kgo's 1 KiB batches about 5 times, and kfake
	// wrote and served a fifth of the bytes the actorlog runs did.
	//
	// The pool exists only while records are produced: a consumer run
	// starts with it unreachable and collected. Kept live, its 64 MiB set
	// the consumers' GC goal at ~134 MB in a process whose own live heap
	// is a few MB, so kgo's consumer hardly collected while a consumer in
	// a process of its own (actorlog perf consume, a service) collects
	// every ~15 MB; a benchmark's buffer is not the client's to count.
	maxSize := cfg.latencySize
	for _, s := range cfg.sizes {
		maxSize = max(maxSize, s)
	}
	var pool []byte
	payload := func() []byte {
		if pool == nil {
			pool = make([]byte, maxSize+payloadSpan)
			rand.New(rand.NewSource(1)).Read(pool)
		}
		return pool
	}
	dropPayload := func() {
		if !cfg.payloadLive {
			pool = nil
			runtime.GC()
		}
	}

	var results []result
	seq := 0
	// each runs fn on every target in turn, rounds times, the first target
	// of round r being r mod T.
	each := func(fn func(t target, round int, topic string) error) error {
		for r := 0; r < cfg.rounds; r++ {
			for i := range targets {
				t := targets[(r+i)%len(targets)]
				seq++
				topic := fmt.Sprintf("%s-%d-%d", cfg.topicPrefix, time.Now().Unix(), seq)
				if err := createAndWait(ctx, t, topic, cfg.partitions); err != nil {
					return err
				}
				err := fn(t, r, topic)
				if !cfg.keepTopics {
					deleteTopic(ctx, t, topic)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, size := range cfg.sizes {
		if cfg.skip["produce"] {
			break
		}
		pw := fmt.Sprintf("produce %s", sizeName(size))
		cw := fmt.Sprintf("consume %s", sizeName(size))
		err := each(func(t target, round int, topic string) error {
			values := payload()
			p, err := withCPU(t, func() (result, error) { return produceN(ctx, cfg, t, topic, cfg.n, size, values) })
			if err != nil {
				return fmt.Errorf("%s on %s: %w", pw, t.Name, err)
			}
			p.Target, p.Workload, p.Round = t.Name, pw, round
			results = append(results, p)
			fmt.Fprintf(out, "%-8s %-16s round %d: %10.0f rec/s %8.1f MB/s (%v)%s\n", t.Name, pw, round, p.RecPerS, p.MBPerS, p.Elapsed.Round(time.Millisecond), cpuNote(p))
			if cfg.skip["consume"] {
				return nil
			}
			dropPayload()
			c, err := withCPU(t, func() (result, error) { return consumeN(ctx, cfg, t, topic, int64(cfg.n)) })
			if err != nil {
				return fmt.Errorf("%s on %s: %w", cw, t.Name, err)
			}
			c.Target, c.Workload, c.Round = t.Name, cw, round
			results = append(results, c)
			fmt.Fprintf(out, "%-8s %-16s round %d: %10.0f rec/s %8.1f MB/s (%v)%s\n", t.Name, cw, round, c.RecPerS, c.MBPerS, c.Elapsed.Round(time.Millisecond), cpuNote(c))
			return nil
		})
		if err != nil {
			report(out, results, targets, base)
			return results, err
		}
	}
	for _, linger := range cfg.latLingers {
		if cfg.rate <= 0 || cfg.skip["latency"] {
			break
		}
		ln := "default"
		if linger >= 0 {
			ln = linger.String()
		}
		lw := fmt.Sprintf("latency %s@%d/s linger=%s", sizeName(cfg.latencySize), cfg.rate, ln)
		lcfg := cfg
		lcfg.linger = linger
		err := each(func(t target, round int, topic string) error {
			values := payload()
			l, err := withCPU(t, func() (result, error) { return produceAtRate(ctx, lcfg, t, topic, values) })
			if err != nil {
				return fmt.Errorf("%s on %s: %w", lw, t.Name, err)
			}
			l.Target, l.Workload, l.Round = t.Name, lw, round
			results = append(results, l)
			fmt.Fprintf(out, "%-8s %-16s round %d: %10.0f rec/s p50 %v p99 %v max %v\n", t.Name, lw, round, l.RecPerS,
				l.P50.Round(time.Microsecond), l.P99.Round(time.Microsecond), l.Max.Round(time.Microsecond))
			return nil
		})
		if err != nil {
			report(out, results, targets, base)
			return results, err
		}
	}
	report(out, results, targets, base)
	return results, nil
}

func cpuNote(r result) string {
	note := fmt.Sprintf(" bench CPU %.2f µs/rec", selfPerRec(r))
	if r.HostCPU == 0 {
		return note
	}
	return note + fmt.Sprintf(", host CPU %.2f µs/rec", cpuPerRec(r))
}

func cpuPerRec(r result) float64 {
	return float64(r.HostCPU.Nanoseconds()) / 1e3 / float64(r.Records)
}

func selfPerRec(r result) float64 {
	return float64(r.SelfCPU.Nanoseconds()) / 1e3 / float64(r.Records)
}

func sizeName(size int) string {
	if size%1024 == 0 {
		return fmt.Sprintf("%dKiB", size/1024)
	}
	return fmt.Sprintf("%dB", size)
}

// producerOpts are kgo's defaults plus --linger/--batch-size/--compression
// when given.
func producerOpts(cfg config, t target) ([]kgo.Opt, error) {
	opts := t.opts()
	if cfg.linger >= 0 {
		opts = append(opts, kgo.ProducerLinger(cfg.linger))
	}
	if cfg.batchSize < 0 {
		return nil, fmt.Errorf("--batch-size %d: must not be negative", cfg.batchSize)
	}
	if cfg.batchSize > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(cfg.batchSize, 1<<30))))
	}
	if cfg.compression != "" {
		var c kgo.CompressionCodec
		switch cfg.compression {
		case "none":
			c = kgo.NoCompression()
		case "snappy":
			c = kgo.SnappyCompression()
		case "lz4":
			c = kgo.Lz4Compression()
		case "zstd":
			c = kgo.ZstdCompression()
		case "gzip":
			c = kgo.GzipCompression()
		default:
			return nil, fmt.Errorf("unknown --compression %q", cfg.compression)
		}
		opts = append(opts, kgo.ProducerBatchCompression(c))
	}
	return opts, nil
}

// createAndWait creates topic on t and waits until every partition has a
// leader and a full ISR, so no run times the election.
func createAndWait(ctx context.Context, t target, topic string, partitions int32) error {
	cl, err := kgo.NewClient(t.opts()...)
	if err != nil {
		return fmt.Errorf("%s: client: %w", t.Name, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, t.RF, nil, topic)
	if err != nil {
		return fmt.Errorf("%s: create topic %s: %w", t.Name, topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("%s: create topic %s: %w", t.Name, topic, resp.Err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if ready(md, topic, partitions, t.RF) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: topic %s not ready: %w (last metadata error: %v)", t.Name, topic, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ready(md kadm.Metadata, topic string, partitions int32, rf int16) bool {
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || int32(len(td.Partitions)) != partitions {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < int(rf) {
			return false
		}
	}
	return true
}

func deleteTopic(ctx context.Context, t target, topic string) {
	cl, err := kgo.NewClient(t.opts()...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafkabench: %s: delete %s: %v\n", t.Name, topic, err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafkabench: %s: delete %s: %v\n", t.Name, topic, err)
	}
}

// payloadSpan is how much random data beyond the largest value the
// payload pool holds: values repeat only every payloadSpan bytes, far
// beyond a batch (kgo's default maximum is ~1 MB).
const payloadSpan = 64 << 20

// recordValue is record i's value of size bytes: the i-th consecutive
// window of pool, wrapping around after payloadSpan bytes.
func recordValue(pool []byte, i, size int) []byte {
	off := (i * size) % (len(pool) - size)
	return pool[off : off+size : off+size]
}

// produceN produces n records of size bytes as fast as the client takes
// them and times the run from the first Produce to the end of Flush.
func produceN(ctx context.Context, cfg config, t target, topic string, n, size int, pool []byte) (result, error) {
	opts, err := producerOpts(cfg, t)
	if err != nil {
		return result{}, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return result{}, fmt.Errorf("ping: %w", err)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	promise := func(_ *kgo.Record, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: recordValue(pool, i, size)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, fmt.Errorf("flush: %w", err)
	}
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		return result{}, fmt.Errorf("%d of %d records failed, first: %v", f, n, firstErr.Load())
	}
	return rate(int64(n), int64(n)*int64(size), el), nil
}

// consumeN reads topic from the start with a fresh consumer until it has n
// records.
func consumeN(ctx context.Context, cfg config, t target, topic string, n int64) (result, error) {
	cl, err := kgo.NewClient(t.opts(kgo.ConsumeTopics(topic))...)
	if err != nil {
		return result{}, fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	var got, bytes int64
	start := time.Now()
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return result{}, fmt.Errorf("consumed %d of %d: %w", got, n, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return result{}, fmt.Errorf("consumed %d of %d: fetch %s/%d: %w", got, n, errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	el := time.Since(start)
	if got != n {
		return result{}, fmt.Errorf("consumed %d records, want %d", got, n)
	}
	return rate(got, bytes, el), nil
}

// produceAtRate produces cfg.rate records/s for cfg.duration, paced by
// elapsed time (a late pacer catches up in a burst), and records each
// record's produce-ack latency: from its Produce call to its promise.
func produceAtRate(ctx context.Context, cfg config, t target, topic string, pool []byte) (result, error) {
	opts, err := producerOpts(cfg, t)
	if err != nil {
		return result{}, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.duration+cfg.timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return result{}, fmt.Errorf("ping: %w", err)
	}
	total := int(float64(cfg.rate) * cfg.duration.Seconds())
	if total < 1 {
		return result{}, errors.New("--rate × --duration is under one record")
	}
	lat := make([]time.Duration, total)
	var failed atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	size := cfg.latencySize
	start := time.Now()
	perNs := float64(cfg.rate) / 1e9
	for i := 0; i < total; {
		due := int(float64(time.Since(start).Nanoseconds()) * perNs)
		if due > total {
			due = total
		}
		for ; i < due; i++ {
			idx := i
			sent := time.Now()
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: recordValue(pool, i, size)}, func(_ *kgo.Record, err error) {
				d := time.Since(sent)
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err)
				}
				mu.Lock()
				lat[idx] = d
				mu.Unlock()
			})
		}
		if i < total {
			time.Sleep(200 * time.Microsecond)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, fmt.Errorf("flush: %w", err)
	}
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		return result{}, fmt.Errorf("%d of %d records failed, first: %v", f, total, firstErr.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	r := rate(int64(total), int64(total)*int64(size), el)
	r.P50 = lat[total/2]
	r.P99 = lat[min(total-1, total*99/100)]
	r.Max = lat[total-1]
	return r, nil
}

func rate(recs, bytes int64, el time.Duration) result {
	s := el.Seconds()
	return result{Records: recs, Bytes: bytes, Elapsed: el, RecPerS: float64(recs) / s, MBPerS: float64(bytes) / s / 1e6}
}

// report prints, per workload, every target's median figure and its ratio
// to base, as a markdown table.
func report(out io.Writer, results []result, targets []target, base string) {
	var workloads []string
	seen := map[string]bool{}
	for _, r := range results {
		if !seen[r.Workload] {
			seen[r.Workload] = true
			workloads = append(workloads, r.Workload)
		}
	}
	med := func(target, workload string, f func(result) float64) (float64, int) {
		var v []float64
		for _, r := range results {
			if r.Target == target && r.Workload == workload {
				v = append(v, f(r))
			}
		}
		return median(v), len(v)
	}
	fmt.Fprintf(out, "\nmedians; ratio = target ÷ %s (for latency, lower is better); host CPU: the target's --pid processes;\n"+
		"bench CPU: this process (the client, plus the broker for the in-process kfake)\n\n", base)
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| workload\t| target\t| runs\t| rec/s\t| MB/s\t| p50\t| p99\t| max\t| ratio\t| host CPU µs/rec\t| bench CPU µs/rec\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, w := range workloads {
		isLat := strings.HasPrefix(w, "latency")
		for _, t := range targets {
			rps, runs := med(t.Name, w, func(r result) float64 { return r.RecPerS })
			if runs == 0 {
				continue
			}
			mbs, _ := med(t.Name, w, func(r result) float64 { return r.MBPerS })
			cpu := "-"
			if len(t.PIDs) > 0 {
				v, _ := med(t.Name, w, cpuPerRec)
				cpu = fmt.Sprintf("%.2f", v)
			}
			sv, _ := med(t.Name, w, selfPerRec)
			cpu += fmt.Sprintf("\t| %.2f", sv)
			ratio := "-"
			if isLat {
				p99, _ := med(t.Name, w, func(r result) float64 { return float64(r.P99) })
				p50, _ := med(t.Name, w, func(r result) float64 { return float64(r.P50) })
				mx, _ := med(t.Name, w, func(r result) float64 { return float64(r.Max) })
				if b, n := med(base, w, func(r result) float64 { return float64(r.P99) }); n > 0 && b > 0 {
					ratio = fmt.Sprintf("p99 %.2f×", p99/b)
				}
				fmt.Fprintf(tw, "| %s\t| %s\t| %d\t| %.0f\t| %.1f\t| %v\t| %v\t| %v\t| %s\t| %s\t|\n", w, t.Name, runs, rps, mbs,
					dur(p50), dur(p99), dur(mx), ratio, cpu)
				continue
			}
			if b, n := med(base, w, func(r result) float64 { return r.RecPerS }); n > 0 && b > 0 {
				ratio = fmt.Sprintf("%.2f×", rps/b)
			}
			fmt.Fprintf(tw, "| %s\t| %s\t| %d\t| %.0f\t| %.1f\t| -\t| -\t| -\t| %s\t| %s\t|\n", w, t.Name, runs, rps, mbs, ratio, cpu)
		}
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench: report:", err)
	}
}

func dur(ns float64) time.Duration {
	return time.Duration(ns).Round(10 * time.Microsecond)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// targetsTLS sets the TLS config of the named targets: TLS 1.2+, the
// server verified against caFile.
func targetsTLS(targets []target, names, caFile string) error {
	if names == "" {
		return nil
	}
	if caFile == "" {
		return errors.New("--tls-target needs --tls-ca")
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--tls-ca %s: no PEM certificate", caFile)
	}
	for _, name := range strings.Split(names, ",") {
		found := false
		for i := range targets {
			if targets[i].Name == strings.TrimSpace(name) {
				targets[i].TLS, found = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, true
			}
		}
		if !found {
			return fmt.Errorf("--tls-target %s: no such --target", name)
		}
	}
	return nil
}
