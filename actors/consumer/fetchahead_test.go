// fetchahead_test.go: with a Handler, the consumer sends the next fetch of
// a partition before it decodes and handles the records it got, so the
// leader reads on while the application works; every record is still
// handled once, in order.

package consumer

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

func TestHandlerModeFetchesAheadWhileHandling(t *testing.T) {
	fc := newFakeCluster(t)
	fetched := make(chan int64, 1000)
	fc.onFetch = func(r *messages.FetchRequest) { fetched <- r.FetchOffset }
	fc.addTopic("t", 1)
	var values []string
	for i := range 120 {
		values = append(values, "v"+strconv.Itoa(i))
	}
	fc.produce("t", 0, values...)

	release := make(chan struct{})
	var mu sync.Mutex
	var handled []int64
	calls := 0
	handler := func(msgs []Message) {
		mu.Lock()
		calls++
		first := calls == 1
		for _, m := range msgs {
			handled = append(handled, m.Offset)
		}
		mu.Unlock()
		if first {
			<-release // the first records stay in the handler a while
		}
	}
	props, err := Props(Config{Cluster: fc, Topic: "t", Start: Earliest(), Handler: handler, MaxWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pid := fc.sys.Root.Spawn(props)
	t.Cleanup(func() { _ = fc.sys.Root.StopFuture(pid).Wait() })
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs first: a failed test does not leave the handler blocked

	next := func() int64 {
		t.Helper()
		select {
		case off := <-fetched:
			return off
		case <-time.After(5 * time.Second):
			t.Fatal("no fetch request")
			return -1
		}
	}
	if off := next(); off != 0 {
		t.Fatalf("first fetch from %d, want 0", off)
	}
	// The handler gets records 0..49 and holds them until released. The
	// fetch ahead may leave before or after the handler is entered; what
	// matters is that it leaves while the handler holds them. A consumer
	// that fetched only after handling would send nothing until release,
	// and next() would time out.
	poll.Until(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if calls != 1 {
			return fmt.Errorf("handler called %d times, want 1", calls)
		}
		return nil
	})
	// The fake leader answers 50 records per fetch.
	if off := next(); off != 50 {
		t.Fatalf("second fetch from %d, want 50 (the end of the first answer)", off)
	}
	mu.Lock()
	inHandler := calls == 1 && len(handled) == 50
	mu.Unlock()
	if !inHandler {
		t.Fatal("the handler was called again before release: records handled out of turn")
	}
	unblock()
	poll.Until(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(handled) < 120 {
			return fmt.Errorf("%d records handled", len(handled))
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for i, off := range handled {
		if off != int64(i) {
			t.Fatalf("record %d handled as offset %d (handled %v)", i, off, handled)
		}
	}
}
