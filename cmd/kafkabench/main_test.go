// main_test.go: a smoke test so CI exercises kafkabench — every workload
// at a tiny size against the in-process disk-mode kfake only (no host
// process), asserting the record counts each run reports; plus the flag
// parsers. Runs in about 2 s.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSmokeKfake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config{
		kfake:       true,
		kfakeDir:    t.TempDir(),
		n:           3000,
		sizes:       []int{100, 1024},
		partitions:  3,
		rounds:      2,
		rate:        2000,
		duration:    500 * time.Millisecond,
		latencySize: 100,
		linger:      -1,
		latLingers:  []time.Duration{0},
		timeout:     20 * time.Second,
		skip:        map[string]bool{},
		topicPrefix: "smoke",
	}
	var out bytes.Buffer
	results, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := map[string]int64{
		"produce 100B": 3000, "consume 100B": 3000, "produce 1KiB": 3000, "consume 1KiB": 3000,
		"latency 100B@2000/s linger=0s": 1000,
	}
	runs := map[string]int{}
	for _, r := range results {
		n, ok := want[r.Workload]
		if !ok {
			t.Errorf("unexpected workload %q", r.Workload)
			continue
		}
		runs[r.Workload]++
		if r.Target != "kfake" || r.Records != n || r.RecPerS <= 0 {
			t.Errorf("%s round %d: target %s, %d records at %.0f rec/s; want kfake, %d", r.Workload, r.Round, r.Target, r.Records, r.RecPerS, n)
		}
		if strings.HasPrefix(r.Workload, "latency") && (r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99) {
			t.Errorf("%s: latencies p50 %v p99 %v max %v out of order", r.Workload, r.P50, r.P99, r.Max)
		}
		if strings.HasPrefix(r.Workload, "consume 1KiB") && r.Bytes != 3000*1024 {
			t.Errorf("%s: %d bytes consumed, want %d", r.Workload, r.Bytes, 3000*1024)
		}
	}
	for w := range want {
		if runs[w] != 2 {
			t.Errorf("%s: %d runs, want 2 (one per round)", w, runs[w])
		}
	}
	if !strings.Contains(out.String(), "| produce 1KiB") || !strings.Contains(out.String(), "1.00×") {
		t.Errorf("report lacks the table:\n%s", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	tg, err := parseTarget("actorlog-3/3=127.0.0.1:1, 127.0.0.1:2")
	if err != nil || tg.Name != "actorlog-3" || tg.RF != 3 || len(tg.Addrs) != 2 || tg.Addrs[1] != "127.0.0.1:2" {
		t.Errorf("parseTarget: %+v, %v", tg, err)
	}
	if tg, err := parseTarget("a=h:1"); err != nil || tg.RF != 1 {
		t.Errorf("parseTarget default RF: %+v, %v", tg, err)
	}
	for _, bad := range []string{"noaddr", "a/0=h:1", "=h:1", "a="} {
		if _, err := parseTarget(bad); err == nil {
			t.Errorf("parseTarget(%q) accepted", bad)
		}
	}
	if s, err := parseSizes("100, 1024"); err != nil || len(s) != 2 || s[1] != 1024 {
		t.Errorf("parseSizes: %v, %v", s, err)
	}
	if _, err := parseSizes("100,x"); err == nil {
		t.Error("parseSizes accepted x")
	}
	if l, err := parseLingers("0,default,5ms"); err != nil || len(l) != 3 || l[0] != 0 || l[1] >= 0 || l[2] != 5*time.Millisecond {
		t.Errorf("parseLingers: %v, %v", l, err)
	}
	if _, err := parseLingers("soon"); err == nil {
		t.Error("parseLingers accepted soon")
	}
	var pl pidList
	if err := pl.Set("a=12,34"); err != nil || len(pl["a"]) != 2 || pl["a"][1] != 34 {
		t.Errorf("pidList: %v, %v", pl, err)
	}
	if err := pl.Set("b=x"); err == nil {
		t.Error("pidList accepted b=x")
	}
}

// TestHostCPU: withCPU reports the CPU time its target's processes (here
// this test's own) spent during the run.
func TestHostCPU(t *testing.T) {
	self := target{Name: "self", PIDs: []int{os.Getpid()}}
	r, err := withCPU(self, func() (result, error) {
		start, err := cpuTime(self.PIDs)
		if err != nil {
			return result{}, err
		}
		deadline := time.Now().Add(5 * time.Second)
		for x := 0; time.Now().Before(deadline); x++ { // spin ≥ 3 clock ticks
			if x%100000 == 0 {
				if now, err := cpuTime(self.PIDs); err != nil || now-start >= 30*time.Millisecond {
					return result{Records: 1}, err
				}
			}
		}
		return result{Records: 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.HostCPU < 30*time.Millisecond || r.HostCPU > 10*time.Second {
		t.Errorf("host CPU of a ≥30ms spin: %v", r.HostCPU)
	}
	if _, err := cpuTime([]int{1 << 30}); err == nil {
		t.Error("cpuTime of a missing pid: no error")
	}
}

// TestRecordValuesAreIncompressible: the values of a batch's worth of
// consecutive records do not shrink under snappy, kgo's default codec
// (its encoder, s2.EncodeSnappy, finds matches across the whole batch), so
// kfake stores and serves as many bytes as actorlog does. (With the old
// 64 KiB pool 1 KiB records compressed about 5 times.)
func TestRecordValuesAreIncompressible(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pool := make([]byte, 1024+payloadSpan)
	rng.Read(pool)
	for _, size := range []int{100, 1024, 10 << 10} {
		var batch []byte
		for i := 0; len(batch) < 1<<20; i++ {
			batch = append(batch, recordValue(pool, i, size)...)
		}
		z := s2.EncodeSnappy(nil, batch) // kgo's snappy encoder
		if ratio := float64(len(z)) / float64(len(batch)); ratio < 0.99 {
			t.Errorf("%d-byte values: snappy keeps %.2f of a 1 MiB batch, want incompressible", size, ratio)
		}
	}
}

// TestBatchSizeBoundsKgoBatches: --batch-size reaches kgo as
// ProducerBatchMaxBytes: with 4 KiB batches of 1 KiB records every batch
// kfake receives holds at most 4 KiB, so 60 records take at least 20
// batches (kgo's ~1 MB default would send them in a few); a negative size
// is refused.
func TestBatchSizeBoundsKgoBatches(t *testing.T) {
	c, stop, err := startKfake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var mu sync.Mutex
	batches, largest := 0, 0
	c.KeepControl()
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				for raw := p.Records; len(raw) >= 12; {
					n := 12 + int(binary.BigEndian.Uint32(raw[8:12])) // baseOffset, batchLength
					if n > len(raw) {
						break
					}
					batches++
					largest = max(largest, n)
					raw = raw[n:]
				}
			}
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := target{Name: "kfake", Addrs: c.ListenAddrs(), RF: 1}
	if err := createAndWait(ctx, tg, "batches", 3); err != nil {
		t.Fatal(err)
	}
	cfg := config{linger: -1, timeout: 20 * time.Second, batchSize: 4096}
	pool := make([]byte, 64<<10)
	if _, err := produceN(ctx, cfg, tg, "batches", 60, 1024, pool); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if batches < 20 || largest > 4096 {
		t.Errorf("kfake got %d batches, the largest %d bytes; want >= 20 of <= 4096", batches, largest)
	}
	cfg.batchSize = -1
	if _, err := producerOpts(cfg, tg); err == nil {
		t.Error("producerOpts accepted --batch-size -1")
	}
}
