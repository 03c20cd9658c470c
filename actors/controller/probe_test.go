package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/messages"
)

func TestHostProberRevokesOnlyRefusedHosts(t *testing.T) {
	refused := fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)
	timeout := context.DeadlineExceeded
	host := func(id int32, epoch int64) *messages.HostInfo {
		return &messages.HostInfo{HostId: id, AdvertisedAddress: fmt.Sprintf("127.0.0.1:%d", 7000+id), BrokerEpoch: epoch}
	}
	for _, tc := range []struct {
		name  string
		dials [][]error // per round, the answer of host 2 (and host 3 if given)
		hosts []map[int32]*messages.HostInfo
		want  []int64 // leases revoked, in order
	}{
		{name: "refused twice in a row", dials: [][]error{{refused}, {refused}}, want: []int64{20}},
		{name: "refused once, then answers", dials: [][]error{{refused}, {nil}, {refused}}, want: nil},
		{name: "timeouts are left to the lease", dials: [][]error{{timeout}, {timeout}, {timeout}}, want: nil},
		{name: "other errors are left to the lease", dials: [][]error{{errors.New("no route to host")}, {errors.New("no route to host")}}, want: nil},
		{name: "revoked once, then counting starts over", dials: [][]error{{refused}, {refused}, {refused}}, want: []int64{20}},
		{
			name:  "a new incarnation starts its own count",
			dials: [][]error{{refused}, {refused}, {refused}},
			hosts: []map[int32]*messages.HostInfo{
				{1: host(1, 10), 2: host(2, 20)},
				{1: host(1, 10), 2: host(2, 21)},
				{1: host(1, 10), 2: host(2, 21)},
			},
			want: []int64{21},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var revoked []int64
			var dialed []string
			p := newHostProber(1, func(_ context.Context, lease int64) error {
				revoked = append(revoked, lease)
				return nil
			}, logrus.NewEntry(logrus.New()))
			round := 0
			p.dial = func(_ context.Context, addr string) error {
				dialed = append(dialed, addr)
				return tc.dials[round][0]
			}
			for round = range tc.dials {
				hosts := map[int32]*messages.HostInfo{1: host(1, 10), 2: host(2, 20)}
				if tc.hosts != nil {
					hosts = tc.hosts[round]
				}
				p.setHosts(hosts)
				p.probeOnce(context.Background())
			}
			if !slices.Equal(revoked, tc.want) {
				t.Errorf("revoked %v, want %v", revoked, tc.want)
			}
			for _, a := range dialed {
				if a == "127.0.0.1:7001" {
					t.Fatalf("the controller's own host was dialled")
				}
			}
		})
	}
}

// A revoke that fails leaves the count reset: the next refusals try again.
func TestHostProberRetriesAFailedRevoke(t *testing.T) {
	calls := 0
	p := newHostProber(1, func(context.Context, int64) error {
		calls++
		if calls == 1 {
			return errors.New("etcd unavailable")
		}
		return nil
	}, logrus.NewEntry(logrus.New()))
	p.dial = func(context.Context, string) error { return syscall.ECONNREFUSED }
	p.setHosts(map[int32]*messages.HostInfo{2: {HostId: 2, AdvertisedAddress: "127.0.0.1:7002", BrokerEpoch: 20}})
	for i := 0; i < 4; i++ {
		p.probeOnce(context.Background())
	}
	if calls != 2 {
		t.Fatalf("revoke called %d times, want 2 (a failure, then a retry)", calls)
	}
}
