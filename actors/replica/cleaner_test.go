// cleaner_test.go: a replica of a compacted topic and the host's log
// cleaner (storage.Cleaner). The replica registers its log when it opens
// it, and the cleaner cleans it up to the checkpointed high watermark
// (fetching from 0 then gives one record per key, at increasing offsets
// with gaps); a replica of a delete topic is not registered; and a
// replica stopped while the cleaner is inside a cleaning of its log (held
// there by a tiny I/O bound) stops promptly, with no warning or error
// logged, no cleaned file left behind and its log as it was.

package replica

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/storage"
	"github.com/actorlog/actorlog/storage/record"
)

// cleanerLogConfig is the compacted log config of these tests: small
// segments.
func cleanerLogConfig(p storage.CleanupPolicy) storage.Config {
	return storage.Config{CleanupPolicy: p, SegmentBytes: 1024}
}

// fillCompacted writes rounds batches of one record for each of keys keys
// into a new log at dir (closed segments all but the last), checkpoints
// its high watermark at its end and closes it. It returns the log end.
func fillCompacted(t *testing.T, dir string, p storage.CleanupPolicy, keys, rounds int) int64 {
	t.Helper()
	cfg := cleanerLogConfig(p)
	cfg.Logger = quiet()
	l, err := storage.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			b, err := record.BuildBatch(record.CompressionNone, record.Record{
				Key: []byte(fmt.Sprintf("k%02d", k)), Value: []byte(fmt.Sprintf("v%04d-%s", r, strings.Repeat("x", 40))), Timestamp: 1000,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(b, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := l.LogEndOffset()
	if err := l.WriteHighWatermark(end); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return end
}

// cleanerHarness spawns a leader replica of dir with the cleaner c,
// logging to logger (its log's lines too).
func cleanerHarness(t *testing.T, dir string, p storage.CleanupPolicy, c LogCleaner, logger *logrus.Entry) *harness {
	t.Helper()
	h := &harness{t: t, system: actor.NewActorSystem(), dir: dir}
	h.pid = h.system.Root.Spawn(Props(Config{Topic: "t", Partition: 0, Dir: dir, LeaderEpoch: 3, Logger: logger,
		Log: cleanerLogConfig(p), Cleaner: c}))
	t.Cleanup(h.stop)
	return h
}

// hookedLogger is a logger at debug level whose entries the hook keeps.
func hookedLogger() (*logrus.Entry, *logtest.Hook) {
	logger, hook := logtest.NewNullLogger()
	logger.SetOutput(io.Discard)
	logger.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(logger), hook
}

func newTestCleaner(t *testing.T, ioBytesPerSecond int64, logger *logrus.Entry) *storage.Cleaner {
	t.Helper()
	c, err := storage.NewCleaner(storage.CleanerConfig{Backoff: 10 * time.Millisecond, DedupeBufferBytes: 1 << 16,
		IOBytesPerSecond: ioBytesPerSecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(c.Stop)
	return c
}

// countingCleaner counts registrations.
type countingCleaner struct {
	LogCleaner
	n int
}

func (c *countingCleaner) Register(topic string, partition int32, l *storage.Log, hw func() int64) func() {
	c.n++
	return c.LogCleaner.Register(topic, partition, l, hw)
}

func TestReplicaLogCleaned(t *testing.T) {
	dir := t.TempDir()
	end := fillCompacted(t, dir, storage.CleanupCompact, 5, 30)
	c := &countingCleaner{LogCleaner: newTestCleaner(t, 0, quiet())}
	h := cleanerHarness(t, dir, storage.CleanupCompact, c, quiet())
	var recs []record.Record
	poll.Until(t, 10*time.Second, func() error {
		recs = recs[:0]
		for off := int64(0); off < end; {
			f := h.fetch(off, 0)
			if f.ErrorCode != 0 {
				return fmt.Errorf("fetch at %d: %v", off, f.ErrorCode)
			}
			rs := decode(t, f.Records)
			if len(rs) == 0 {
				return fmt.Errorf("nothing at %d below %d", off, end)
			}
			recs = append(recs, rs...)
			off = rs[len(rs)-1].Offset + 1
		}
		// The active segment keeps its records; the rest is one per key.
		if len(recs) > 5+30 || len(recs) >= int(end) {
			return fmt.Errorf("%d records of %d: not cleaned yet", len(recs), end)
		}
		return nil
	})
	latest := map[string]string{}
	for i, r := range recs {
		if i > 0 && r.Offset <= recs[i-1].Offset {
			t.Fatalf("offset %d after %d", r.Offset, recs[i-1].Offset)
		}
		latest[string(r.Key)] = string(r.Value)
	}
	for k := 0; k < 5; k++ {
		if v := latest[fmt.Sprintf("k%02d", k)]; !strings.HasPrefix(v, "v0029-") {
			t.Errorf("k%02d = %q, want its last value", k, v)
		}
	}
	if c.n != 1 {
		t.Errorf("%d registrations, want 1", c.n)
	}

	// A delete topic's replica is not registered.
	d := &countingCleaner{LogCleaner: newTestCleaner(t, 0, quiet())}
	del := cleanerHarness(t, t.TempDir(), storage.CleanupDelete, d, quiet())
	if st := del.request(GetState).(State); st.LogEndOffset != 0 || d.n != 0 {
		t.Fatalf("delete topic: state %+v, %d registrations", st, d.n)
	}
}

func TestReplicaStopsDuringCleaning(t *testing.T) {
	dir := t.TempDir()
	fillCompacted(t, dir, storage.CleanupCompact, 7, 40)
	quietCfg := cleanerLogConfig(storage.CleanupCompact)
	quietCfg.Logger = quiet()
	before, err := storage.Open(dir, quietCfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := before.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}
	// 64 bytes a second: the cleaning crawls, so it surely runs when the
	// replica stops.
	logger, hook := hookedLogger()
	c := newTestCleaner(t, 64, logger)
	h := cleanerHarness(t, dir, storage.CleanupCompact, c, logger)
	poll.Until(t, 5*time.Second, func() error {
		if c.Busy() != 1 {
			return fmt.Errorf("no cleaning in progress")
		}
		return nil
	})
	start := time.Now()
	h.stop()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the replica took %v to stop", took)
	}
	if n := c.Busy(); n != 0 {
		t.Fatalf("%d cleanings in progress after the stop", n)
	}
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			t.Errorf("logged at %v: %s %v", e.Level, e.Message, e.Data)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	after, err := storage.Open(dir, quietCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	got, err := after.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the log changed under an aborted cleaning: %d bytes, want %d", len(got), len(want))
	}
	aborted := false
	for _, e := range hook.AllEntries() {
		aborted = aborted || strings.Contains(e.Message, "cleaning aborted")
	}
	if !aborted {
		t.Errorf("no debug line says the cleaning was aborted")
	}
}
