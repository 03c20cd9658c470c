// produce.go: `actorlog produce TOPIC` — one record per stdin line.

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/producer"
	"github.com/actorlog/actorlog/messages"
)

// parseAcks reads "0", "1" or "all" (also "-1").
func parseAcks(s string) (messages.Acks, error) {
	switch strings.ToLower(s) {
	case "0":
		return messages.Acks_ACKS_NONE, nil
	case "1":
		return messages.Acks_ACKS_LEADER, nil
	case "all", "-1":
		return messages.Acks_ACKS_ALL, nil
	}
	return 0, fmt.Errorf("--acks %q: want 0, 1 or all", s)
}

func newProduceCmd(g *globals) *cobra.Command {
	var (
		keySep    string
		acksFlag  string
		partition int32
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of standard input",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			acks, err := parseAcks(acksFlag)
			if err != nil {
				return err
			}
			c, err := g.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			part := producer.AnyPartition
			var parts []int32
			if cmd.Flags().Changed("partition") {
				part, parts = partition, []int32{partition}
			}
			if err := checkTopicPartition(c, topic, parts); err != nil {
				return err
			}
			p, err := producer.New(c, producer.ActorConfig{Acks: acks})
			if err != nil {
				return err
			}
			var (
				mu       sync.Mutex
				firstErr error
				failed   int
			)
			cb := func(d producer.Delivered) {
				if d.Err != nil {
					mu.Lock()
					failed++
					if firstErr == nil {
						firstErr = d.Err
					}
					mu.Unlock()
				}
			}
			progress := newCounter("producing")
			defer progress.done()
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			sent := 0
			for sc.Scan() {
				line := sc.Bytes()
				msg := &producer.Send{Topic: topic, Partition: part, Callback: cb}
				if keySep != "" {
					k, v, ok := bytes.Cut(line, []byte(keySep))
					if !ok {
						return fmt.Errorf("line %d has no key separator %q", sent+1, keySep)
					}
					msg.Key, msg.Value = bytes.Clone(k), bytes.Clone(v)
				} else {
					msg.Value = bytes.Clone(line)
				}
				p.ProduceAsync(msg)
				sent++
				progress.add(1)
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := p.Close(ctx); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if firstErr != nil {
				return fmt.Errorf("%d of %d records failed; first error: %w", failed, sent, firstErr)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keySep, "key-separator", "", "split each line into key<SEP>value")
	f.StringVar(&acksFlag, "acks", "all", "acknowledgements: 0, 1 or all")
	f.Int32Var(&partition, "partition", 0, "produce to this partition (default: by key, or sticky)")
	return cmd
}
