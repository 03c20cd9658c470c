package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPubSubExampleRuns runs the example as a user would (go run), in its
// self-contained mode, and checks that every record flowed through.
func TestPubSubExampleRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", ".", "-records", "25").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/pubsub: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "all 25 records flowed through pubsub-demo") || strings.Count(s, "consumed pubsub-demo") != 25 || strings.Count(s, "produced pubsub-demo") != 25 {
		t.Fatalf("unexpected output:\n%s", s)
	}
}
