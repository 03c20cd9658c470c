// Command groups shows consumer groups from Go: several consumer actors in
// one group share a topic's partitions, and the example prints which
// partitions each member owns as members join and leave, while a producer
// keeps publishing. At the end it checks that every record was processed
// exactly once (no member failed, so none was processed twice).
//
// Run it against a local host:
//
//	go run ./cmd/actorlog host                      # in one terminal
//	go run ./examples/groups                         # in another
//	go run ./examples/groups -members 4 -step 3s -bootstrap 127.0.0.1:7070
//
// or self-contained, with a host started in this process:
//
//	go run ./examples/groups -bootstrap ""
//
// Members 1..N join one by one; once the partitions are shared evenly and
// `step` has passed, the next one joins. Then all but the first leave one
// by one the same way (Close: they commit and leave the group, so their
// partitions move at once, without waiting for a session timeout).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/actors/consumer"
	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/messages"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:7070", `host to connect to ("": start one in this process)`)
	topic := flag.String("topic", "groups-demo", "topic to use (created with 6 partitions if missing)")
	groupID := flag.String("group", "", "consumer group (default: a new one per run)")
	members := flag.Int("members", 3, "members that join, one by one")
	step := flag.Duration("step", 2*time.Second, "time to wait, once the partitions are shared, before the next member joins or leaves")
	flag.Parse()
	if *groupID == "" {
		*groupID = "groups-demo-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	}
	if err := run(*bootstrap, *topic, *groupID, *members, *step); err != nil {
		log.Fatalf("groups: %v", err)
	}
}

// tally counts what the members processed, by record value, and what
// each owns.
type tally struct {
	mu        sync.Mutex
	processed map[string]int
	byMember  map[string]int
	owned     map[string]int
}

func (t *tally) own(member string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.owned[member] = n
}

// balanced reports whether members share the 6 partitions evenly (none
// owns more than one above another) and all of them are owned.
func (t *tally) balanced(members []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	total, lo, hi := 0, 6, 0
	for _, m := range members {
		n := t.owned[m]
		total, lo, hi = total+n, min(lo, n), max(hi, n)
	}
	return total == 6 && hi-lo <= 1
}

func (t *tally) add(member string, msgs []consumer.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		t.processed[string(m.Value)]++
		t.byMember[member]++
	}
}

// worker is a group member's actor: the consumer actor hands it records
// and tells it which partitions it gained and lost.
func worker(name string, t *tally) actor.ReceiveFunc {
	return func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *consumer.Records:
			t.add(name, msg.Messages)
			ctx.Respond(true) // handled: the consumer may commit past them
		case *consumer.Assigned:
			t.own(name, len(msg.Owned))
			fmt.Printf("%-9s owns %v (generation %d; gained %v)\n", name, names(msg.Owned), msg.Generation, names(msg.Partitions))
		case *consumer.Revoked:
			t.own(name, len(msg.Owned))
			fmt.Printf("%-9s owns %v (gave up %v)\n", name, names(msg.Owned), names(msg.Partitions))
		}
	}
}

// names returns partition indexes, e.g. [0 3].
func names(tps []consumer.TopicPartition) []int32 {
	out := []int32{}
	for _, tp := range tps {
		out = append(out, tp.Partition)
	}
	return out
}

func run(bootstrap, topic, groupID string, members int, step time.Duration) error {
	logger := logrus.New()
	logger.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if bootstrap == "" {
		h, err := startLocalHost(ctx, logger)
		if err != nil {
			return err
		}
		defer h.Shutdown(context.Background())
		bootstrap = h.Address()
	}
	c, err := client.New(client.Config{Bootstrap: []string{bootstrap}, Logger: logrus.NewEntry(logger)})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CreateTopic(ctx, topic, 6, 1, nil); err != nil && !errors.Is(err, messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS.Err("")) {
		return fmt.Errorf("create topic: %w", err)
	}
	root := c.System().Root
	t := &tally{processed: map[string]int{}, byMember: map[string]int{}, owned: map[string]int{}}
	// settle waits until the live members share the partitions evenly,
	// then step more.
	settle := func(live []string) error {
		for !t.balanced(live) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("the members %v never shared the partitions evenly", live)
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(step)
		return nil
	}

	// A producer publishes a keyed record every 10 ms until stopped.
	p, err := producer.New(c, producer.ActorConfig{})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	produced := map[string]bool{}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			v := fmt.Sprintf("%s-%06d", groupID, i)
			p.ProduceAsync(&producer.Send{Topic: topic, Partition: producer.AnyPartition, Key: []byte("key-" + strconv.Itoa(i%50)), Value: []byte(v),
				Callback: func(d producer.Delivered) {
					if d.Err == nil {
						mu.Lock()
						produced[v] = true
						mu.Unlock()
					}
				}})
		}
	}()

	// The members: a consumer actor each, delivering to a worker actor.
	start := time.Now().UnixMilli()
	var pids []*actor.PID
	var live []string
	for i := 1; i <= members; i++ {
		name := fmt.Sprintf("member-%d", i)
		target := root.Spawn(actor.PropsFromFunc(worker(name, t)))
		props, err := consumer.Props(consumer.Config{
			Client: c, GroupID: groupID, Topics: []string{topic}, Target: target,
			// Where the group has no committed offset: the records
			// produced from this run's start.
			Start:             consumer.AtTimestamp(start),
			HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 10 * time.Second,
			AutoCommitInterval: time.Second, ClientID: name,
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-9s joins\n", name)
		pids = append(pids, root.Spawn(props))
		live = append(live, name)
		if err := settle(live); err != nil {
			return err
		}
	}
	for i := members; i > 1; i-- {
		fmt.Printf("member-%d leaves\n", i)
		if err := consumer.CloseAndStop(ctx, root, pids[i-1]); err != nil {
			return fmt.Errorf("member-%d: close: %w", i, err)
		}
		live = live[:len(live)-1]
		if err := settle(live); err != nil {
			return err
		}
	}

	// Stop producing; the remaining member processes the rest.
	close(stop)
	<-stopped
	if err := p.Close(ctx); err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	mu.Lock()
	want := len(produced)
	mu.Unlock()
	for {
		t.mu.Lock()
		missing, twice := 0, 0
		for v := range produced {
			switch n := t.processed[v]; {
			case n == 0:
				missing++
			case n > 1:
				twice++
			}
		}
		t.mu.Unlock()
		if missing == 0 {
			if err := consumer.CloseAndStop(ctx, root, pids[0]); err != nil {
				return fmt.Errorf("member-1: close: %w", err)
			}
			var per []string
			for i := 1; i <= members; i++ {
				name := fmt.Sprintf("member-%d", i)
				per = append(per, fmt.Sprintf("%s %d", name, t.byMember[name]))
			}
			fmt.Printf("all %d records processed (%s); %d processed twice\n", want, strings.Join(per, ", "), twice)
			if twice > 0 {
				return fmt.Errorf("%d records processed twice without any failure", twice)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d records never processed", missing, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startLocalHost starts a host in this process on free loopback ports with
// a temporary data directory.
func startLocalHost(ctx context.Context, logger *logrus.Logger) (*host.Host, error) {
	dir, err := os.MkdirTemp("", "actorlog-groups")
	if err != nil {
		return nil, err
	}
	base, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	return host.Start(ctx, host.Config{
		DataDir: dir,
		Listen:  "127.0.0.1:" + strconv.Itoa(base),
		HTTP:    "127.0.0.1:" + strconv.Itoa(base+3),
		Logger:  logger,
		// A small offsets topic: created faster on first use.
		OffsetsTopicPartitions: 4,
	})
}

// freePorts finds n consecutive free loopback ports.
func freePorts(n int) (int, error) {
	for base := 30000 + os.Getpid()%20000; base < 65000; base += n {
		ok := true
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free ports")
}
