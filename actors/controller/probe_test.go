package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

func testProber(t *testing.T, hosts func(round int) []*messages.HostInfo, dial func(round int, addr string) error, gone func(*messages.HostInfo) error) (*hostProber, func(rounds int)) {
	t.Helper()
	round := 0
	p := &hostProber{
		self: 1, logger: logrus.NewEntry(logrus.New()), refused: map[int64]int{},
		list: func(context.Context) ([]*messages.HostInfo, error) { return hosts(round), nil },
		dial: func(_ context.Context, addr string) error {
			if addr == "127.0.0.1:7001" {
				t.Fatalf("the prober dialled its own host")
			}
			return dial(round, addr)
		},
		gone: func(_ context.Context, h *messages.HostInfo) error { return gone(h) },
	}
	return p, func(rounds int) {
		for round = 0; round < rounds; round++ {
			// Far enough apart that every round lists the hosts again.
			p.probeOnce(context.Background(), time.Unix(0, 0).Add(time.Duration(round)*probeRefresh))
		}
	}
}

func hostAt(id int32, epoch int64) *messages.HostInfo {
	return &messages.HostInfo{HostId: id, AdvertisedAddress: fmt.Sprintf("127.0.0.1:%d", 7000+id), BrokerEpoch: epoch}
}

func TestHostProberReportsOnlyRefusedHosts(t *testing.T) {
	refused := fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)
	for _, tc := range []struct {
		name   string
		answer []error // host 2's answer per round
		epochs []int64 // host 2's broker epoch per round (default 20)
		want   []int64 // epochs reported gone, in order
	}{
		{name: "refused twice in a row", answer: []error{refused, refused}, want: []int64{20}},
		{name: "refused once, then answers", answer: []error{refused, nil, refused}},
		{name: "timeouts are left to the lease", answer: []error{context.DeadlineExceeded, context.DeadlineExceeded, context.DeadlineExceeded}},
		{name: "no route is left to the lease", answer: []error{errors.New("no route to host"), errors.New("no route to host")}},
		{name: "reported once, then counting starts over", answer: []error{refused, refused, refused}, want: []int64{20}},
		{name: "a new incarnation starts its own count", answer: []error{refused, refused, refused}, epochs: []int64{20, 21, 21}, want: []int64{21}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gone []int64
			_, run := testProber(t,
				func(round int) []*messages.HostInfo {
					epoch := int64(20)
					if tc.epochs != nil {
						epoch = tc.epochs[round]
					}
					return []*messages.HostInfo{hostAt(1, 10), hostAt(2, epoch)}
				},
				func(round int, _ string) error { return tc.answer[round] },
				func(h *messages.HostInfo) error { gone = append(gone, h.BrokerEpoch); return nil })
			run(len(tc.answer))
			if !slices.Equal(gone, tc.want) {
				t.Errorf("reported gone %v, want %v", gone, tc.want)
			}
		})
	}
}

// A report that fails leaves the count reset: later refusals try again.
func TestHostProberRetriesAFailedReport(t *testing.T) {
	calls := 0
	_, run := testProber(t,
		func(int) []*messages.HostInfo { return []*messages.HostInfo{hostAt(2, 20)} },
		func(int, string) error { return syscall.ECONNREFUSED },
		func(*messages.HostInfo) error {
			calls++
			if calls == 1 {
				return errors.New("etcd unavailable")
			}
			return nil
		})
	run(4)
	if calls != 2 {
		t.Fatalf("reported %d times, want 2 (a failure, then a retry)", calls)
	}
}
