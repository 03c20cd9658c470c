package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKafkaClientExampleRuns runs the example as a user would (go run), in
// its self-contained mode, and checks that every record went through the
// Kafka listener and back in the consumer group.
func TestKafkaClientExampleRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", ".", "-records", "25").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/kafkaclient: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "all 25 records flowed through kafkaclient-demo") || strings.Count(s, "consumed kafkaclient-demo") != 25 || strings.Count(s, "produced kafkaclient-demo") != 25 {
		t.Fatalf("unexpected output:\n%s", s)
	}
}
