// groups_test.go: the pure parts of the group calls — the coordinator
// cache and the retry loop. (The calls themselves run against real hosts
// in cmd/actorlog's groups e2e test: a second client here would start a
// second protoactor remote in this test process.)

package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/messages"
)

func TestCoordinatorCache(t *testing.T) {
	var cc coordinatorCache
	if _, ok := cc.get("g"); ok {
		t.Fatal("empty cache has g")
	}
	a := Coordinator{Group: "g", HostID: 1, Address: "h1:1", ActorID: messages.CoordinatorActorID(3), Partition: 3, LeaderEpoch: 0}
	b := a
	b.HostID, b.Address, b.LeaderEpoch = 2, "h2:1", 1
	cc.put(a)
	cc.put(b) // found again after a move
	// A request that failed against the old coordinator does not drop
	// the new one.
	cc.forget(a)
	if got, ok := cc.get("g"); !ok || got != b {
		t.Fatalf("cache has %+v, %v; want %+v", got, ok, b)
	}
	cc.forget(b)
	if _, ok := cc.get("g"); ok {
		t.Fatal("forgotten coordinator still cached")
	}
	if pid := b.PID(); pid.Address != "h2:1" || pid.Id != "broker/coordinator/3" {
		t.Fatalf("PID %v", pid)
	}
}

func TestRetryGroup(t *testing.T) {
	notAvailable := messages.ErrorCode_ERROR_CODE_COORDINATOR_NOT_AVAILABLE.Err("creating")
	tests := []struct {
		name     string
		outcomes []error // what each try returns; retried while retriableFind
		timeout  time.Duration
		tries    int
		wantErr  error
	}{
		{"success at once", []error{nil}, time.Second, 1, nil},
		{"retried until found", []error{notAvailable, fmt.Errorf("wrapped: %w", ErrUnreachable), nil}, 5 * time.Second, 3, nil},
		{"a final error is not retried", []error{notAvailable, messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID.Err("")}, 5 * time.Second, 2,
			&messages.Error{Code: messages.ErrorCode_ERROR_CODE_INVALID_GROUP_ID}},
		{"the context ends the retries with the last error", []error{notAvailable, notAvailable, notAvailable, notAvailable, notAvailable, notAvailable}, 120 * time.Millisecond, -1, notAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			tries := 0
			err := retryGroup(ctx, func() (bool, error) {
				err := tt.outcomes[min(tries, len(tt.outcomes)-1)]
				tries++
				return retriableFind(err), err
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("retryGroup = %v, want %v", err, tt.wantErr)
			}
			if tt.tries >= 0 && tries != tt.tries {
				t.Fatalf("%d tries, want %d", tries, tt.tries)
			}
		})
	}
}
