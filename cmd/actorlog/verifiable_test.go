// verifiable_test.go: the verifiable producer's loop and output against a
// fake producer: round-robin values, one JSON line per outcome, the done
// line, and stopping on the first and second signal.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlog/actorlog/actors/producer"
)

// fakeProducer assigns offsets per partition and fails the values in
// fail. With async it reports from a goroutine after a short delay; with
// hold it reports nothing.
type fakeProducer struct {
	fail  map[string]bool
	async bool
	hold  bool

	mu     sync.Mutex
	next   map[int32]int64
	sent   int
	closed bool
	wg     sync.WaitGroup
}

func (f *fakeProducer) ProduceAsync(msg *producer.Send) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		panic("ProduceAsync after Close")
	}
	f.sent++
	if f.hold {
		return
	}
	d := producer.Delivered{Topic: msg.Topic, Partition: msg.Partition, Offset: -1}
	if f.fail[string(msg.Value)] {
		d.Err = errors.New("producer: delivery timeout expired")
	} else {
		if f.next == nil {
			f.next = map[int32]int64{}
		}
		d.Offset = f.next[msg.Partition]
		f.next[msg.Partition]++
	}
	if !f.async {
		msg.Callback(d)
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		time.Sleep(2 * time.Millisecond) // the fake's delivery latency
		msg.Callback(d)
	}()
}

func (f *fakeProducer) Close(context.Context) error {
	f.wg.Wait()
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// event is any output line, as a reader of the output decodes it.
type event struct {
	Event     string `json:"event"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
	Error     string `json:"error"`
	Sent      int64  `json:"sent"`
	Acked     int64  `json:"acked"`
	Failed    int64  `json:"failed"`
}

// parseEvents decodes the output, one JSON object per line, refusing
// unknown fields.
func parseEvents(t *testing.T, out string) []event {
	t.Helper()
	var evs []event
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var e event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestVerifiableProduceOutput(t *testing.T) {
	f := &fakeProducer{fail: map[string]bool{"1-1": true}}
	var out bytes.Buffer
	done, err := verifiableProduce(f, verifiableOptions{topic: "t", partitions: 3, maxRecords: 7, maxOutstanding: 4}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"ack","partition":0,"offset":0,"value":"0-0"}
{"event":"ack","partition":1,"offset":0,"value":"1-0"}
{"event":"ack","partition":2,"offset":0,"value":"2-0"}
{"event":"ack","partition":0,"offset":1,"value":"0-1"}
{"event":"error","partition":1,"value":"1-1","error":"producer: delivery timeout expired"}
{"event":"ack","partition":2,"offset":1,"value":"2-1"}
{"event":"ack","partition":0,"offset":2,"value":"0-2"}
{"event":"done","sent":7,"acked":6,"failed":1}
`
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if done != (verifiableDone{Event: "done", Sent: 7, Acked: 6, Failed: 1}) {
		t.Fatalf("done = %+v", done)
	}
	evs := parseEvents(t, out.String())
	if e := evs[4]; e.Event != "error" || e.Partition != 1 || e.Value != "1-1" || e.Error == "" {
		t.Fatalf("error line decodes to %+v", e)
	}
}

func TestVerifiableValue(t *testing.T) {
	for _, tc := range []struct {
		part int32
		seq  int64
		want string
	}{{0, 0, "0-0"}, {2, 17, "2-17"}, {11, 1234567890123, "11-1234567890123"}} {
		if got := verifiableValue(tc.part, tc.seq); got != tc.want {
			t.Errorf("verifiableValue(%d, %d) = %q, want %q", tc.part, tc.seq, got, tc.want)
		}
	}
}

// TestVerifiableProduceStops: the first signal stops sending and every
// record sent still gets its line; the second gives up waiting.
func TestVerifiableProduceStops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       *fakeProducer
		signals int
		wantErr error
	}{
		{"first signal drains", &fakeProducer{async: true}, 1, nil},
		{"second signal interrupts", &fakeProducer{hold: true}, 2, errInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan os.Signal, 2)
			go func() {
				// Signals arrive while the command is producing, and a
				// second one apart from the first, as from a person
				// pressing ^C twice: timing is what is tested.
				time.Sleep(50 * time.Millisecond)
				for range tc.signals {
					stop <- syscall.SIGTERM
					time.Sleep(20 * time.Millisecond)
				}
			}()
			var out bytes.Buffer
			done, err := verifiableProduce(tc.f, verifiableOptions{topic: "t", partitions: 2, maxRecords: -1,
				throughput: 1000, maxOutstanding: 1 << 10}, stop, &out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			evs := parseEvents(t, out.String())
			last := evs[len(evs)-1]
			if last.Event != "done" || last.Sent != done.Sent || last.Acked != done.Acked || last.Failed != done.Failed {
				t.Fatalf("last line %+v, done %+v", last, done)
			}
			if done.Sent == 0 || int(done.Sent) != tc.f.sent {
				t.Fatalf("done %+v, the producer got %d records", done, tc.f.sent)
			}
			if got := int64(len(evs) - 1); got != done.Acked+done.Failed {
				t.Fatalf("%d outcome lines, done %+v", got, done)
			}
			if tc.wantErr == nil && done.Acked != done.Sent {
				t.Fatalf("stopped with records unreported: %+v", done)
			}
			if tc.wantErr != nil && done.Acked != 0 {
				t.Fatalf("held records reported: %+v", done)
			}
		})
	}
}
