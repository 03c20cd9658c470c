// lanes_test.go: the job lanes (lanes.go), step by step, without actors.

package controller

import (
	"fmt"
	"slices"
	"testing"
)

// laneStep is one step of a lanes history: add (or addFront) a job, or
// end the running job of a lane; then the jobs next starts, as
// "lane:name".
type laneStep struct {
	add   *namedJob
	front bool
	done  lane
	want  []string
}

// namedJob is a job of lane ln writing topic ("" for several), with a
// name for the test.
type namedJob struct {
	ln          lane
	topic, name string
}

func named(ln lane, topic, name string) *namedJob { return &namedJob{ln, topic, name} }

func TestLanes(t *testing.T) {
	const none = lane(-1)
	cases := []struct {
		name  string
		steps []laneStep
		left  []string // queued at the end (drain), in order
	}{
		{"each lane runs one job at a time, in order", []laneStep{
			{add: named(laneAdmin, "a", "create-a"), want: []string{"admin:create-a"}},
			{add: named(laneAdmin, "b", "create-b")},
			{add: named(laneISR, "c", "alter-c"), want: []string{"isr:alter-c"}},
			{add: named(laneISR, "d", "alter-d")},
			{done: laneAdmin, want: []string{"admin:create-b"}},
			{done: laneISR, want: []string{"isr:alter-d"}},
		}, nil},
		{"an ISR change never waits for admin work on another topic", []laneStep{
			{add: named(laneAdmin, "a", "slow-create"), want: []string{"admin:slow-create"}},
			{add: named(laneAdmin, "b", "queued-create")},
			{add: named(laneISR, "x", "alter-x"), want: []string{"isr:alter-x"}},
		}, []string{"admin:queued-create"}},
		{"one topic: the other lane waits", []laneStep{
			{add: named(laneAdmin, "t", "add-partitions"), want: []string{"admin:add-partitions"}},
			{add: named(laneISR, "t", "alter-t")},
			{add: named(laneISR, "u", "alter-u"), want: []string{"isr:alter-u"}}, // passes alter-t
			{done: laneISR},
			{done: laneAdmin, want: []string{"isr:alter-t"}},
		}, nil},
		{"one topic, one lane: in order", []laneStep{
			{add: named(laneISR, "t", "first"), want: []string{"isr:first"}},
			{add: named(laneAdmin, "t", "admin")},
			{add: named(laneISR, "t", "second")},
			{done: laneISR, want: []string{"admin:admin"}},
			{done: laneAdmin, want: []string{"isr:second"}},
		}, nil},
		{"several-topic jobs keep their place and never wait for a topic", []laneStep{
			{add: named(laneISR, "t", "alter-t"), want: []string{"isr:alter-t"}},
			{add: named(laneAdmin, "t", "alter-configs-t")},
			{add: named(laneAdmin, "", "reconcile")}, // behind the blocked job
			{add: named(laneAdmin, "u", "create-u")}, // passes it, not the reconcile
			{done: laneISR, want: []string{"admin:alter-configs-t"}},
			{done: laneAdmin, want: []string{"admin:reconcile"}},
			{add: named(laneISR, "t", "alter-t-again"), want: []string{"isr:alter-t-again"}},
			{done: laneAdmin, want: []string{"admin:create-u"}},
		}, nil},
		{"the next step of a job goes first", []laneStep{
			{add: named(laneAdmin, "", "shutdown-check"), want: []string{"admin:shutdown-check"}},
			{add: named(laneAdmin, "a", "create")},
			{add: named(laneAdmin, "", "shutdown-elect"), front: true},
			{done: laneAdmin, want: []string{"admin:shutdown-elect"}},
		}, []string{"admin:create"}},
		{"drain returns the queued jobs only", []laneStep{
			{add: named(laneAdmin, "a", "running"), want: []string{"admin:running"}},
			{add: named(laneAdmin, "b", "q1")},
			{add: named(laneISR, "a", "q2")},
			{done: none},
		}, []string{"admin:q1", "isr:q2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l lanes
			names := map[*job]string{}
			jobName := func(j *job) string { return fmt.Sprintf("%s:%s", j.lane, names[j]) }
			for i, s := range c.steps {
				var j *job
				if s.add != nil {
					j = &job{lane: s.add.ln, topic: s.add.topic}
					names[j] = s.add.name
				}
				switch {
				case j != nil && s.front:
					l.addFront(j)
				case j != nil:
					l.add(j)
				case s.done != none:
					l.done(s.done)
				}
				var got []string
				for _, j := range l.next() {
					got = append(got, jobName(j))
				}
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d: started %v, want %v", i, got, s.want)
				}
			}
			var left []string
			for _, j := range l.drain() {
				left = append(left, jobName(j))
			}
			if !slices.Equal(left, c.left) {
				t.Fatalf("queued at the end %v, want %v", left, c.left)
			}
			if got := l.next(); len(got) != 0 {
				t.Fatalf("after drain, next started %d jobs", len(got))
			}
		})
	}
}
