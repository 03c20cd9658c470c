// Command kafkaclient shows an ordinary Kafka client, franz-go, using
// actorlog as its broker: nothing in it knows it is not talking to Kafka.
// It starts a host in this process with a Kafka listener on a free
// loopback port (or uses the brokers given with -brokers), creates a topic
// with kadm, produces keyed records idempotently with acks=all, and reads
// them back in a consumer group that commits what it has processed.
//
//	go run ./examples/kafkaclient                         # self-contained
//	go run ./examples/kafkaclient -brokers 127.0.0.1:9092 # a running `actorlog host`
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
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/actorlog/actorlog/host"
)

func main() {
	brokers := flag.String("brokers", "", "comma-separated Kafka addresses (default: start a host in this process)")
	topic := flag.String("topic", "kafkaclient-demo", "topic to use")
	group := flag.String("group", "kafkaclient-demo", "consumer group to read in")
	n := flag.Int("records", 10, "records to produce")
	flag.Parse()
	if err := run(*brokers, *topic, *group, *n); err != nil {
		log.Fatalf("kafkaclient: %v", err)
	}
}

func run(brokers, topic, group string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if brokers == "" {
		h, err := startLocalHost(ctx)
		if err != nil {
			return err
		}
		defer h.Shutdown(context.Background())
		brokers = h.KafkaAddress()
	}
	seeds := strings.Split(brokers, ",")

	// Create the topic as with any Kafka cluster: 3 partitions, the
	// cluster's default replication factor (-1).
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	created, err := kadm.NewClient(admin).CreateTopic(ctx, 3, -1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if created.Err != nil && !errors.Is(created.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, created.Err)
	}

	// Produce: franz-go's defaults are acks=all and idempotent, so a
	// retried batch is written once. Records with the same key land on the
	// same partition (murmur2, as Kafka's Java client).
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer prod.Close()
	for i := range n {
		r := &kgo.Record{Key: []byte("user-" + strconv.Itoa(i%3)), Value: []byte(fmt.Sprintf("hello #%d", i))}
		res := prod.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			return fmt.Errorf("produce record %d: %w", i, err)
		}
		fmt.Printf("produced %s-%d@%d\n", r.Topic, r.Partition, r.Offset)
	}

	// Consume in a group from the start of the log, committing after each
	// poll's records are processed (auto-commit off: nothing is marked
	// committed before it was printed).
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer cons.Close()
	received := 0
	for received < n {
		fetches := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("only %d of %d records arrived: %w", received, n, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			fmt.Printf("consumed %s-%d@%d key=%s value=%s\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
			received++
		})
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	fmt.Printf("all %d records flowed through %s over the Kafka protocol\n", n, topic)
	return nil
}

// startLocalHost starts a host in this process on free loopback ports
// (remote, HTTP and Kafka) with a temporary data directory.
func startLocalHost(ctx context.Context) (*host.Host, error) {
	logger := logrus.New()
	logger.SetLevel(logrus.WarnLevel)
	dir, err := os.MkdirTemp("", "actorlog-kafkaclient")
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	base, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	h, err := host.Start(ctx, host.Config{
		DataDir:     dir,
		Listen:      "127.0.0.1:" + strconv.Itoa(base),
		HTTP:        "127.0.0.1:" + strconv.Itoa(base+3),
		KafkaListen: "127.0.0.1:" + strconv.Itoa(base+4),
		Logger:      logger,
	})
	if err != nil {
		return nil, fmt.Errorf("start host: %w", err)
	}
	return h, nil
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
