package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGroupsExampleRuns runs the example as a user would (go run), in its
// self-contained mode, and checks that the members shared the partitions
// (at one point three members owned two each), that the last member ended
// up with all six, and that every record was processed exactly once.
func TestGroupsExampleRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", ".", "-bootstrap", "", "-members", "3", "-step", "2s").CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("go run ./examples/groups: %v\n%s", err, s)
	}
	for _, name := range []string{"member-1", "member-2", "member-3"} {
		if !regexp.MustCompile(`(?m)^` + name + ` +owns \[\d+ \d+\] `).MatchString(s) {
			t.Errorf("%s never owned two of the six partitions:\n%s", name, s)
		}
	}
	if !strings.Contains(s, "member-1  owns [0 1 2 3 4 5]") {
		t.Errorf("member-1 never owned all six partitions:\n%s", s)
	}
	if !regexp.MustCompile(`all \d+ records processed \(member-1 \d+, member-2 \d+, member-3 \d+\); 0 processed twice`).MatchString(s) {
		t.Fatalf("unexpected summary:\n%s", s)
	}
}
