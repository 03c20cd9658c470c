// consoleetcd.go: the etcd member roles the web console's cluster page
// shows (console.EtcdReader). The members come from the host's own etcd
// client (a serializable MemberList: answered by the member it talks to,
// without a quorum, so a cluster that lost its quorum still lists them);
// each member is then asked for its Status on its first client URL, at
// once and within etcdProbeTimeout each, so a dead member costs one
// timeout, not one per member. The console caches the answer (live.go).

package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/console"
)

const (
	// etcdListTimeout bounds listing the members.
	etcdListTimeout = time.Second
	// etcdProbeTimeout bounds one member's Status.
	etcdProbeTimeout = time.Second
)

// hostEtcd reads the members through h's etcd client.
type hostEtcd struct{ h *Host }

// EtcdMembers lists the etcd members with their roles.
func (e hostEtcd) EtcdMembers(ctx context.Context) ([]console.EtcdMember, error) {
	if e.h.store == nil {
		return nil, errors.New("the metadata store is not up")
	}
	cli := e.h.store.Client()
	lctx, cancel := context.WithTimeout(ctx, etcdListTimeout)
	ml, err := cli.MemberList(lctx, clientv3.WithSerializable())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	out := make([]console.EtcdMember, len(ml.Members))
	var wg sync.WaitGroup
	for i, m := range ml.Members {
		out[i].Name = m.Name
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Role = etcdRole(ctx, cli, m.ClientURLs, m.IsLearner)
		}()
	}
	wg.Wait()
	return out, nil
}

// etcdRole asks the member at urls for its status: leader, follower or
// learner as it sees itself; unreachable when it does not answer in time
// (or has not started: no client URL yet).
func etcdRole(ctx context.Context, cli *clientv3.Client, urls []string, learner bool) string {
	if len(urls) == 0 {
		return console.EtcdUnreachable
	}
	pctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	defer cancel()
	st, err := cli.Status(pctx, urls[0])
	switch {
	case err != nil:
		return console.EtcdUnreachable
	case st.IsLearner || learner:
		return console.EtcdLearner
	case st.Header != nil && st.Header.MemberId == st.Leader:
		return console.EtcdLeader
	}
	return console.EtcdFollower
}
