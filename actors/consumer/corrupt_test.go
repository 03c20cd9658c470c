// corrupt_test.go: a consumer that fetches a batch it cannot decode hands
// over the records before it, reports a *CorruptBatchError (topic,
// partition, offset) to OnError and logs it at error level once, stops the
// partition there instead of fetching the same bytes forever, and goes on
// after a Seek past it.

package consumer

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/storage/record"
)

// corruptReader records what a consumer outside any group handled and
// reported.
type corruptReader struct {
	mu      sync.Mutex
	handled []string
	errs    []error
}

func (r *corruptReader) handle(msgs []Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.handled = append(r.handled, fmt.Sprintf("%d:%s", m.Offset, m.Value))
	}
}

func (r *corruptReader) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *corruptReader) state() ([]string, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.handled), slices.Clone(r.errs)
}

// actorProps is a PID target that hands each Records to handle and answers.
func actorProps(handle func(*Records)) *actor.Props {
	return actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*Records); ok {
			handle(m)
			ctx.Respond(true)
		}
	})
}

// corrupted returns the errors wrapping ErrCorruptBatch.
func corrupted(errs []error) []*CorruptBatchError {
	var out []*CorruptBatchError
	for _, err := range errs {
		if ce := (*CorruptBatchError)(nil); errors.As(err, &ce) && errors.Is(err, ErrCorruptBatch) {
			out = append(out, ce)
		}
	}
	return out
}

func TestUndecodableBatchIsReportedAndStopsThePartition(t *testing.T) {
	for _, target := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler", true: "target"}[target], func(t *testing.T) {
			testUndecodableBatch(t, target)
		})
	}
}

func testUndecodableBatch(t *testing.T, target bool) {
	fc := newFakeCluster(t)
	fc.addTopic("t", 1)
	fc.produce("t", 0, "v0", "v1", corruptValue, "v3")
	logger, hook := logtest.NewNullLogger()
	r := &corruptReader{}
	cfg := Config{Cluster: fc, Topic: "t", Start: Earliest(), Handler: r.handle, OnError: r.onError,
		MaxWait: 50 * time.Millisecond, RetryBackoff: 10 * time.Millisecond, Logger: logrus.NewEntry(logger)}
	if target {
		// A PID target answers each Records after handling it.
		cfg.Handler = nil
		cfg.Target = fc.sys.Root.Spawn(actorProps(func(m *Records) { r.handle(m.Messages) }))
	}
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := fc.sys.Root.Spawn(props)
	t.Cleanup(func() { _ = fc.sys.Root.StopFuture(pid).Wait() })

	// The records before the bad batch are delivered, and the batch is
	// reported with its partition and offsets.
	poll.Until(t, 5*time.Second, func() error {
		handled, errs := r.state()
		if !slices.Equal(handled, []string{"0:v0", "1:v1"}) || len(corrupted(errs)) == 0 {
			first := error(nil)
			if len(errs) > 0 {
				first = errs[0]
			}
			return fmt.Errorf("handled %v; %d errors, the first %v", handled, len(errs), first)
		}
		return nil
	})
	// Many fetch rounds later: nothing more delivered, and the report
	// came once (the partition is not fetched again).
	poll.Never(t, 300*time.Millisecond, func() error {
		if handled, errs := r.state(); len(corrupted(errs)) != 1 || !slices.Equal(handled, []string{"0:v0", "1:v1"}) {
			return fmt.Errorf("handled %v, undecodable-batch reports %v", handled, corrupted(errs))
		}
		return nil
	})
	handled, errs := r.state()
	ces := corrupted(errs)
	if len(ces) != 1 || !slices.Equal(handled, []string{"0:v0", "1:v1"}) {
		t.Fatalf("handled %v, undecodable-batch reports %v", handled, ces)
	}
	ce := ces[0]
	if ce.Partition != (TopicPartition{"t", 0}) || ce.Offset != 2 || ce.NextOffset != 3 || !errors.Is(ce, record.ErrUndecodable) {
		t.Fatalf("report %+v (%v)", *ce, ce)
	}
	var logged *logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.ErrorLevel {
			logged = e
		}
	}
	if logged == nil || logged.Data["topic"] != "t" || logged.Data["partition"] != int32(0) || logged.Data["offset"] != int64(2) {
		t.Fatalf("no error-level log with topic, partition and offset: %+v", logged)
	}

	// A Seek past the batch resumes the partition.
	fc.sys.Root.Send(pid, &Seek{Partition: TopicPartition{"t", 0}, Offset: ce.NextOffset})
	poll.Until(t, 5*time.Second, func() error {
		if handled, _ := r.state(); !slices.Equal(handled, []string{"0:v0", "1:v1", "3:v3"}) {
			return fmt.Errorf("handled %v", handled)
		}
		return nil
	})
}
