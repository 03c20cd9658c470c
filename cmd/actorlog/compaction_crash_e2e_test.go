// compaction_crash_e2e_test.go: a host process SIGKILLed while its log
// cleaner runs (issue 14). One host serves a compacted topic with tiny
// segments, a short cleaner backoff and a slow I/O budget (cleanings that
// take a while). In each of 22 lives the host is started, checked,
// written to by an acks=all producer (updates of a bounded key set and
// tombstones), and killed: at a named step of a cleaning (the hidden
// --unsafe-crash-point flag makes the host SIGKILL itself the n-th time a
// cleaning passes it: after the cleaned .log is written, before the swap,
// between the .swap renames and the commit, at the commit, after the
// replaced segments are removed, after the swap, after the checkpoint —
// each at its first and second pass), or by the test at a random moment
// after the writes. After every restart, reading the partition from the
// start gives exactly the newest acknowledged value of every live key and
// no deleted key; each key's values come in the order they were written
// (never an older value after a newer one: no mix of old and cleaned
// segments); the partition directory holds no .cleaned or .swap file
// written before the kill once the host is up; and the host takes new
// writes.

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/storage"
)

// ccTopic is the compacted topic of the crash test.
const ccTopic = "crash-compacted"

// ccState is what the producer got acknowledged: each key's newest value
// (absent: never written or deleted) and the sequence of every write.
// pending holds the writes of a batch whose produce failed because the
// host killed itself meanwhile: each may or may not have landed ("" a
// tombstone); the next read settles them.
type ccState struct {
	latest  map[string]string
	pending map[string][]string
	seq     int
}

// ccValue encodes a write: its key and global sequence number, padded so
// that a few batches fill a segment.
func ccValue(key string, seq int) string {
	return fmt.Sprintf("%s|%08d|%s", key, seq, strings.Repeat("v", 60))
}

// ccSeq parses the sequence number out of a value.
func ccSeq(v string) (int, error) {
	f := strings.SplitN(v, "|", 3)
	if len(f) != 3 {
		return 0, fmt.Errorf("value %.30q is not key|seq|pad", v)
	}
	return strconv.Atoi(f[1])
}

// ccProduce writes one round: every key three times (three batches), then
// tombstones for a few keys and fresh values for a few deleted ones, each
// batch acknowledged (acks=all) before the next; it records what was
// acknowledged. A failed batch ends the round: its writes are pending.
func ccProduce(t *testing.T, addr string, st *ccState, rng *rand.Rand) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(ccTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(10*time.Second), kgo.RecordRetries(3),
		// Not idempotent: an idempotent kgo producer never fails a batch
		// it sent to a broker that died (it would break the sequence), so
		// a write in flight when the host kills itself would block until
		// the host is back. A retried batch may land twice: the reader
		// allows a value after the same one.
		kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const keys = 32
	var failed error
	send := func(recs []*kgo.Record) {
		t.Helper()
		if failed != nil {
			return
		}
		if failed = cl.ProduceSync(ctx, recs...).FirstErr(); failed != nil {
			for _, r := range recs {
				st.pending[string(r.Key)] = append(st.pending[string(r.Key)], string(r.Value))
			}
			return
		}
		for _, r := range recs {
			if r.Value == nil {
				delete(st.latest, string(r.Key))
			} else {
				st.latest[string(r.Key)] = string(r.Value)
			}
		}
	}
	write := func(key string) *kgo.Record {
		st.seq++
		return &kgo.Record{Key: []byte(key), Value: []byte(ccValue(key, st.seq))}
	}
	for range 3 {
		var recs []*kgo.Record
		for k := range keys {
			recs = append(recs, write(fmt.Sprintf("key-%02d", k)))
		}
		send(recs)
	}
	var recs []*kgo.Record
	for range 4 {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%02d", rng.IntN(keys)))}) // a tombstone
	}
	for range 4 {
		recs = append(recs, write(fmt.Sprintf("gone-%02d", rng.IntN(8)))) // keys mostly deleted
	}
	send(recs)
	recs = nil
	for k := range 8 {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("gone-%02d", k))})
	}
	send(recs)
	if failed != nil {
		return fmt.Errorf("produce: %w", failed)
	}
	return nil
}

// ccVerify reads the partition from the start to its end and checks it
// against st: exactly the newest value of each live key, no deleted key,
// offsets increasing, and each key's values in the order written. A host
// that dies meanwhile (an armed crash point reached by a cleaning that
// started before any write of this life: dead reports it) ends the read
// with an error and checks nothing; any other failure fails the test.
func ccVerify(t *testing.T, addr string, st *ccState, dead func() bool) (read int, end int64, err error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	fail := func(format string, args ...any) error {
		t.Helper()
		err := fmt.Errorf(format, args...)
		if !dead() {
			t.Fatal(err)
		}
		return err
	}
	adm := foAdmin(t, addr)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, ccTopic)
	if err != nil {
		return 0, 0, fail("list end offsets: %w", err)
	}
	o, ok := ends.Lookup(ccTopic, 0)
	if !ok || o.Err != nil {
		return 0, 0, fail("end offset of %s-0: %+v", ccTopic, o)
	}
	end = o.Offset
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ccTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]string{}
	lastSeq := map[string]int{}
	prev := int64(-1)
	for prev < end-1 {
		pctx, pcancel := context.WithTimeout(ctx, time.Second) // to look at dead between polls
		fs := cl.PollFetches(pctx)
		pcancel()
		if dead() || ctx.Err() != nil {
			return read, end, fail("read %d records up to offset %d of %d: %v", read, prev, end, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return read, end, fail("fetch: %w", ferr)
		}
		for _, r := range fs.Records() {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			read++
			k := string(r.Key)
			if r.Value == nil {
				delete(got, k)
				continue
			}
			seq, err := ccSeq(string(r.Value))
			if err != nil {
				t.Fatalf("offset %d: %v", r.Offset, err)
			}
			if seq < lastSeq[k] {
				t.Fatalf("key %s: write %d at offset %d after write %d: an older value after a newer one", k, seq, r.Offset, lastSeq[k])
			}
			lastSeq[k] = seq
			got[k] = string(r.Value)
		}
	}
	for k, v := range st.latest {
		if got[k] != v && !slices.Contains(st.pending[k], got[k]) {
			t.Errorf("key %s reads %.20q, want its newest acknowledged value %.20q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := st.latest[k]; !ok && !slices.Contains(st.pending[k], got[k]) {
			t.Errorf("key %s reads %.20q, but it was deleted", k, got[k])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// What was read of the pending writes is the truth from now on.
	for k := range st.pending {
		if v, ok := got[k]; ok {
			st.latest[k] = v
		} else {
			delete(st.latest, k)
		}
	}
	clear(st.pending)
	return read, end, nil
}

// ccLeftovers lists the files of an unfinished cleaning in dir, with their
// modification times.
func ccLeftovers(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	out := map[string]time.Time{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".cleaned") && !strings.HasSuffix(e.Name(), ".swap") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile by a running cleaning
		}
		out[e.Name()] = info.ModTime()
	}
	return out
}

// ccKill is one death of the host: at a named step's n-th pass, or (point
// "") at a random moment after the writes.
type ccKill struct {
	point string
	pass  int
}

func (k ccKill) String() string {
	if k.point == "" {
		return "random"
	}
	return fmt.Sprintf("%s:%d", k.point, k.pass)
}

func TestCompactionSIGKILLMidCleaning(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var kills []ccKill
	for _, p := range storage.CrashPoints {
		kills = append(kills, ccKill{p, 1}, ccKill{p, 2})
	}
	for range 8 {
		kills = append(kills, ccKill{})
	}
	rng.Shuffle(len(kills), func(i, j int) { kills[i], kills[j] = kills[j], kills[i] })

	kafkaAddr := "127.0.0.1:" + strconv.Itoa(freeBase(t))
	base := freeBase(t)
	flags := []string{"--kafka-listen", kafkaAddr, "--unsafe-min-segment-bytes", "1024",
		"--log-cleaner-backoff", "50ms", "--log-cleaner-io-max-bytes-per-second", "262144"}
	h := &hostProc{t: t, dir: t.TempDir(), base: base, logPath: hostLogPath(t, base)}
	t.Cleanup(func() { h.stop(syscall.SIGKILL) }) // a no-op once stopped
	partDir := filepath.Join(h.dir, ccTopic+"-0")
	st := &ccState{latest: map[string]string{}, pending: map[string][]string{}}
	mustProduce := func() {
		t.Helper()
		if err := ccProduce(t, kafkaAddr, st, rng); err != nil {
			t.Fatalf("%v; log:\n%s", err, h.log())
		}
	}
	leftAfterCrash := 0
	var killedAt time.Time // when the host last died
	const crashed = "--unsafe-crash-point reached"
	for i, k := range append(kills, ccKill{point: "-"}) { // the last life is checked, not killed
		h.extra = flags
		if k.point != "" && k.point != "-" {
			h.extra = append(append([]string(nil), flags...), "--unsafe-crash-point", k.point+":"+strconv.Itoa(k.pass))
		}
		crashes := strings.Count(h.log(), crashed) // the log is appended to in every life
		reached := func() bool { return strings.Count(h.log(), crashed) > crashes }
		h.start()
		if i == 0 {
			adm := foAdmin(t, kafkaAddr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{
				"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("2048"),
				"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "delete.retention.ms": kadm.StringPtr("1"),
			}, ccTopic)
			cancel()
			if err != nil || r[ccTopic].Err != nil {
				t.Fatalf("create %s: %+v %v", ccTopic, r, err)
			}
		} else {
			read, end, err := ccVerify(t, kafkaAddr, st, reached)
			if err != nil {
				// The host died at its crash point before it could be
				// read: this life's kill happened; the next one reads.
				t.Logf("life %d: killed (%v) before the read, at startup: %v", i, k, err)
				h.stop(syscall.SIGKILL)
				killedAt = time.Now()
				continue
			}
			// The host is up: recovery ran before it served, so the
			// files of the killed cleaning are gone; a cleaning since may
			// have written new ones (renames keep a file's time).
			for name, mod := range ccLeftovers(t, partDir) {
				if mod.Before(killedAt) {
					t.Fatalf("life %d: %s (written %v, before the kill at %v) in %s after the restart", i, name, mod, killedAt, partDir)
				}
			}
			t.Logf("life %d: after the kill (%v): %d records read up to offset %d, %d live keys", i, kills[i-1], read, end, len(st.latest))
		}
		if k.point == "-" {
			mustProduce() // still takes writes
			if _, _, err := ccVerify(t, kafkaAddr, st, func() bool { return false }); err != nil {
				t.Fatal(err)
			}
			break
		}
		if k.point == "" {
			mustProduce()
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			h.stop(syscall.SIGKILL)
		} else {
			// Cleanings follow the writes within the backoff; a second
			// pass may need another cleaning, so write on until the host
			// kills itself (a round it dies in is pending).
			for round := 0; !reached(); round++ {
				if round == 10 {
					t.Fatalf("life %d: the host did not reach %v in %d rounds of writes; log:\n%s", i, k, round, h.log())
				}
				if err := ccProduce(t, kafkaAddr, st, rng); err != nil && !reached() {
					t.Fatalf("life %d: %v; log:\n%s", i, err, h.log())
				}
				for wait := time.Now().Add(2 * time.Second); !reached() && time.Now().Before(wait); {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if code := h.stop(syscall.SIGKILL); code != -int(syscall.SIGKILL) {
				t.Fatalf("life %d: host exited with %d, want killed by SIGKILL", i, code)
			}
		}
		killedAt = time.Now()
		if left := ccLeftovers(t, partDir); len(left) > 0 {
			leftAfterCrash++
			t.Logf("life %d: killed (%v) with %v on disk", i, k, slices.Sorted(maps.Keys(left)))
		}
	}
	t.Logf("%d kills, %d left .cleaned or .swap files for recovery; %d writes", len(kills), leftAfterCrash, st.seq)
	if leftAfterCrash == 0 {
		t.Errorf("no kill landed inside a cleaning (no .cleaned or .swap file was ever left)")
	}
}
