// memstore_test.go: MemStore's test controls (what etcd does by itself).
// Its MetadataStore semantics are checked by contract_test.go.

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

func TestMemStoreRegisterHost(t *testing.T) {
	m := cluster.NewMemStore(clustertest.Logger(t))
	for _, c := range []struct {
		name string
		info *messages.HostInfo
		want error // nil: registered
	}{
		{"new host", &messages.HostInfo{HostId: 1, AdvertisedAddress: "h:1"}, nil},
		{"another address holds the id", &messages.HostInfo{HostId: 1, AdvertisedAddress: "h:9"}, cluster.ErrHostRegistered},
		{"no address", &messages.HostInfo{HostId: 1}, cluster.ErrHostRegistered},
		{"same address: a crashed incarnation is replaced", &messages.HostInfo{HostId: 1, AdvertisedAddress: "h:1"}, nil},
		{"id 0", &messages.HostInfo{HostId: 0}, errAny},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := m.ListHosts(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			epoch, err := m.RegisterHost(c.info)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("register: %v", err)
			case c.want == nil:
				hosts, err := m.ListHosts(t.Context())
				if err != nil || len(hosts) != 1 || hosts[0].GetBrokerEpoch() != epoch || c.info.GetBrokerEpoch() != epoch {
					t.Fatalf("hosts %v, %v; want epoch %d", hosts, err, epoch)
				}
				for _, h := range before {
					if h.GetBrokerEpoch() == epoch {
						t.Fatalf("re-registration kept broker epoch %d", epoch)
					}
				}
			case err == nil:
				t.Fatalf("registered; want %v", c.want)
			case c.want != errAny && !errors.Is(err, c.want):
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
	if !m.ExpireHost(1) || m.ExpireHost(1) {
		t.Fatal("ExpireHost: want true, then false")
	}
}

// errAny stands for "some error" in tables.
var errAny = errors.New("any error")

func TestMemStoreInterceptor(t *testing.T) {
	m := cluster.NewMemStore(clustertest.Logger(t))
	ctx := testCtx(t, 10*time.Second)
	_, fence := electOn(t, m, "c")
	boom := errors.New("boom")
	release := make(chan struct{})
	m.SetInterceptor(func(ctx context.Context, op string) error {
		switch op {
		case "CreateTopic":
			return boom
		case "ListTopics":
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	wantErr(t, m.CreateTopic(ctx, fence, newTopic(t, "t", 1, 1, nil)), boom)
	if _, _, err := m.GetTopic(ctx, "t"); !errors.Is(err, cluster.ErrUnknownTopic) {
		t.Fatalf("a failed create wrote: %v", err)
	}
	listed := make(chan error, 1)
	go func() {
		_, _, err := m.ListTopics(ctx)
		listed <- err
	}()
	poll.Never(t, 50*time.Millisecond, func() error {
		select {
		case err := <-listed:
			return fmt.Errorf("held ListTopics returned: %v", err)
		default:
			return nil
		}
	})
	close(release)
	if err := recv(t, listed, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	m.SetInterceptor(nil)
	if err := m.CreateTopic(ctx, fence, newTopic(t, "t", 1, 1, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestMemStoreEndWatches(t *testing.T) {
	m := cluster.NewMemStore(clustertest.Logger(t))
	ctx := testCtx(t, 10*time.Second)
	topics, hosts := m.WatchTopics(ctx, m.Revision()), m.WatchHosts(ctx, 0)
	m.EndWatches()
	if ev := recv(t, topics, 5*time.Second); !errors.Is(ev.Err, cluster.ErrWatchEnded) {
		t.Fatalf("topic watch: %+v, want ErrWatchEnded", ev)
	}
	if ev := recv(t, hosts, 5*time.Second); !errors.Is(ev.Err, cluster.ErrWatchEnded) {
		t.Fatalf("host watch: %+v, want ErrWatchEnded", ev)
	}
	// A new watch works.
	again := m.WatchHosts(ctx, m.Revision())
	if _, err := m.RegisterHost(&messages.HostInfo{HostId: 2}); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, again, 5*time.Second); ev.Err != nil || ev.HostID != 2 {
		t.Fatalf("event %+v", ev)
	}
}
