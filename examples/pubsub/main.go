// Command pubsub shows actorlog from Go: it starts a host in this process
// (or connects to one with -bootstrap), creates a topic, and then a
// publisher actor sends records through a producer actor while a consumer
// actor delivers them to a printer actor.
//
//	go run ./examples/pubsub                 # self-contained
//	go run ./examples/pubsub -bootstrap 127.0.0.1:7070 -records 100
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
	bootstrap := flag.String("bootstrap", "", "host to connect to (default: start one in this process)")
	topic := flag.String("topic", "pubsub-demo", "topic to use")
	n := flag.Int("records", 10, "records to publish")
	flag.Parse()
	if err := run(*bootstrap, *topic, *n); err != nil {
		log.Fatalf("pubsub: %v", err)
	}
}

func run(bootstrap, topic string, n int) error {
	logger := logrus.New()
	logger.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	if _, err := c.CreateTopic(ctx, topic, 3, 1, nil); err != nil && !errors.Is(err, messages.ErrorCode_ERROR_CODE_TOPIC_ALREADY_EXISTS.Err("")) {
		return fmt.Errorf("create topic: %w", err)
	}
	root := c.System().Root

	// The printer: an ordinary actor that receives consumed records.
	done := make(chan struct{})
	received := 0
	printer := root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if recs, ok := ctx.Message().(*consumer.Records); ok {
			for _, m := range recs.Messages {
				fmt.Printf("consumed %s-%d@%d key=%s value=%s\n", m.Topic, m.Partition, m.Offset, m.Key, m.Value)
				if received++; received == n {
					close(done)
				}
			}
			ctx.Respond(true) // handled: the consumer may fetch more
		}
	}))

	// The consumer actor reads every partition from the first record
	// produced from now on, and hands records to the printer.
	start := time.Now().UnixMilli()
	cprops, err := consumer.Props(consumer.Config{Client: c, Topic: topic, Start: consumer.AtTimestamp(start), Target: printer,
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "consumer:", err) }})
	if err != nil {
		return err
	}
	root.Spawn(cprops)

	// The producer actor, and a publisher actor that sends it records and
	// receives a Delivered report for each.
	pprops, err := producer.ActorProps(producer.ActorConfig{Client: c})
	if err != nil {
		return err
	}
	prod := root.Spawn(pprops)
	root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			for i := 0; i < n; i++ {
				ctx.Request(prod, &producer.Send{
					Topic: topic, Partition: producer.AnyPartition,
					Key:   []byte("user-" + strconv.Itoa(i%3)),
					Value: []byte(fmt.Sprintf("hello #%d", i)),
				})
			}
		case *producer.Delivered:
			if msg.Err != nil {
				fmt.Fprintf(os.Stderr, "delivery failed: %v\n", msg.Err)
				return
			}
			fmt.Printf("produced %s-%d@%d\n", msg.Topic, msg.Partition, msg.Offset)
		}
	}))

	select {
	case <-done:
		fmt.Printf("all %d records flowed through %s\n", n, topic)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("only %d of %d records arrived", received, n)
	}
}

// startLocalHost starts a host in this process on free loopback ports with
// a temporary data directory.
func startLocalHost(ctx context.Context, logger *logrus.Logger) (*host.Host, error) {
	dir, err := os.MkdirTemp("", "actorlog-pubsub")
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
