// Package clustertest starts embedded etcd members for tests: in a test's
// temporary directory, on free loopback ports, without fsync, with small
// WAL segments, closed by t.Cleanup. Other packages' tests (controller,
// broker, host) use it to get a real etcd in a few hundred milliseconds,
// or an in-memory cluster.MemStore (NewMemStore, RegisterMem) when they
// need no etcd, and its helpers to register fake hosts and to poll with a
// deadline.
//
// Small WAL segments are set through etcd's package variable
// wal.SegmentSizeBytes (embed.Config has no field for it), once, before the
// first member this package starts. A process must therefore start every
// embedded etcd member through this package, or set it itself first.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/server/v3/storage/wal"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/poll"
	"github.com/actorlog/actorlog/messages"
)

// WALSegmentBytes is the WAL segment size of test members (etcd's default
// preallocates 64 MB per member).
const WALSegmentBytes = 1 << 20

var walOnce sync.Once

// smallWAL shrinks etcd's WAL segments, once per process, before any member
// starts.
func smallWAL() { walOnce.Do(func() { wal.SegmentSizeBytes = WALSegmentBytes }) }

// Logger returns a logrus logger at warn level for test members (etcd and
// cluster logs), writing to stderr; ACTORLOG_TEST_LOG=debug|info|...
// changes the level.
func Logger(t testing.TB) *logrus.Entry {
	t.Helper()
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	if lv := os.Getenv("ACTORLOG_TEST_LOG"); lv != "" {
		level, err := logrus.ParseLevel(lv)
		if err != nil {
			t.Fatalf("ACTORLOG_TEST_LOG=%q: %v", lv, err)
		}
		l.SetLevel(level)
	}
	return logrus.NewEntry(l).WithField("test", t.Name())
}

// FreeURL returns an http URL on a loopback port that was free a moment
// ago (another process may still take it; Start retries on such clashes).
func FreeURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("clustertest: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("clustertest: close probe listener: %v", err)
	}
	return "http://" + addr
}

// FreePortBase returns a loopback port p with p, p+1 and p+2 free a
// moment ago: a host's remote and its embedded etcd's peer and client
// ports (Listen, Listen+1, Listen+2).
func FreePortBase(t testing.TB) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("clustertest: find a free port: %v", err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		ok := base+2 <= 65533
		for i := 1; ok && i <= 2; i++ {
			li, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, li)
		}
		for _, li := range ls {
			if err := li.Close(); err != nil {
				t.Fatalf("clustertest: close probe listener: %v", err)
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("clustertest: no three consecutive free ports found")
	return 0
}

// Config returns the config of a single-member test etcd named name: a new
// temporary data directory, free loopback client and peer URLs,
// UnsafeNoFsync, the test Logger, a 20 s ready timeout.
func Config(t testing.TB, name string) cluster.EtcdConfig {
	t.Helper()
	return cluster.EtcdConfig{
		Name:          name,
		DataDir:       filepath.Join(t.TempDir(), name), // etcd creates it 0700
		ClientURL:     FreeURL(t),
		PeerURL:       FreeURL(t),
		UnsafeNoFsync: true,
		ReadyTimeout:  20 * time.Second,
		Logger:        Logger(t),
	}
}

// Start starts a member with cfg and closes it at cleanup; it fails the
// test if the member does not start. For a single-member config whose
// InitialCluster is unset, a port clash is retried with new ports.
func Start(t testing.TB, cfg cluster.EtcdConfig) *cluster.Etcd {
	t.Helper()
	e, err := TryStart(cfg)
	for attempt := 1; err != nil && attempt < 3 && cfg.InitialCluster == "" && strings.Contains(err.Error(), "address already in use"); attempt++ {
		cfg.ClientURL, cfg.PeerURL = FreeURL(t), FreeURL(t)
		e, err = TryStart(cfg)
	}
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("clustertest: close etcd %q: %v", cfg.Name, err)
		}
	})
	return e
}

// StartMembers starts the members build returns as one cluster (each
// one's InitialCluster set from all names and peer URLs), in parallel,
// and closes them at cleanup; it fails the test if any does not start.
// The ports of Config were free a moment ago, but a parallel test may
// bind one before etcd does, and a member of a cluster cannot retry alone
// (its peers know its URL): on "address already in use" every started
// member is closed and build is called again for fresh ports and data
// directories, up to three attempts.
func StartMembers(t testing.TB, build func() []cluster.EtcdConfig) []*cluster.Etcd {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cfgs := build()
		initial := make([]string, len(cfgs))
		for i, c := range cfgs {
			initial[i] = c.Name + "=" + c.PeerURL
		}
		members := make([]*cluster.Etcd, len(cfgs))
		errs := make([]error, len(cfgs))
		var wg sync.WaitGroup
		for i := range cfgs {
			cfgs[i].InitialCluster = strings.Join(initial, ",")
			wg.Add(1)
			go func() {
				defer wg.Done()
				members[i], errs[i] = TryStart(cfgs[i])
			}()
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err != nil && attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			for i, m := range members {
				if m == nil {
					continue
				}
				if cerr := m.Close(); cerr != nil {
					t.Errorf("clustertest: close %q before a retry: %v", cfgs[i].Name, cerr)
				}
			}
			t.Logf("clustertest: port clash starting %d members (attempt %d), retrying with fresh ports: %v", len(cfgs), attempt, err)
			continue
		}
		for i, m := range members {
			if m == nil {
				continue
			}
			t.Cleanup(func() {
				if err := m.Close(); err != nil {
					t.Errorf("clustertest: close etcd %q: %v", cfgs[i].Name, err)
				}
			})
		}
		if err != nil {
			t.Fatalf("clustertest: %v", err)
		}
		return members
	}
}

// TryStart starts a member with cfg (after shrinking WAL segments), within
// cfg.ReadyTimeout, and returns the error instead of failing a test: for
// members started from goroutines. The caller closes the member.
func TryStart(cfg cluster.EtcdConfig) (*cluster.Etcd, error) {
	smallWAL()
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	e, err := cluster.StartEtcd(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd %q: %w", cfg.Name, err)
	}
	return e, nil
}

// StartEtcd starts a single-member test etcd (Config(t, "etcd")) and
// closes it at cleanup.
func StartEtcd(t testing.TB) *cluster.Etcd {
	t.Helper()
	return Start(t, Config(t, "etcd"))
}

// NewStore starts a single-member test etcd and returns a Store over its
// client, under a prefix named after the test.
func NewStore(t testing.TB) (*cluster.Store, *cluster.Etcd) {
	t.Helper()
	e := StartEtcd(t)
	return cluster.NewStore(e.Client(), "/test/"+t.Name()+"/", Logger(t)), e
}

// NewMemStore returns an empty in-memory metadata store logging to the
// test Logger: the store of actor tests that need no etcd.
func NewMemStore(t testing.TB) *cluster.MemStore {
	t.Helper()
	return cluster.NewMemStore(Logger(t))
}

// RegisterMem registers a fake host on m (host id, address
// HostAddress(port)) and ends the registration at cleanup, as Register
// does on etcd. It returns the broker epoch; m.ExpireHost(id) makes the
// host go earlier.
func RegisterMem(t testing.TB, m *cluster.MemStore, id int32, port int) int64 {
	t.Helper()
	epoch, err := m.RegisterHost(&messages.HostInfo{HostId: id, AdvertisedAddress: HostAddress(port)})
	if err != nil {
		t.Fatalf("clustertest: register host %d: %v", id, err)
	}
	t.Cleanup(func() { m.ExpireHost(id) })
	return epoch
}

// WaitFor polls cond every poll.Interval until it returns nil or timeout
// passes, then fails the test with cond's last error: tests wait for a
// state, never for a fixed time.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	poll.Until(t, timeout, cond)
}

// Register registers a fake host on s (host id, address HostAddress(port),
// a 10 s lease) and closes the registration at cleanup; closing it earlier,
// to make the host go, is fine.
func Register(t testing.TB, s *cluster.Store, id int32, port int) *cluster.Registration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := s.Register(ctx, &messages.HostInfo{HostId: id, AdvertisedAddress: HostAddress(port)}, 10*time.Second)
	if err != nil {
		t.Fatalf("clustertest: register host %d: %v", id, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("clustertest: close registration of host %d: %v", id, err)
		}
	})
	return r
}

// CreateTopic sends req to pid (a controller, or a broker that forwards to
// one) until a controller is elected and answers, and fails the test on
// any other refusal. It returns the created topic.
func CreateTopic(t testing.TB, sys *actor.ActorSystem, pid *actor.PID, req *messages.CreateTopicRequest) *messages.TopicMetadata {
	t.Helper()
	var topic *messages.TopicMetadata
	WaitFor(t, 15*time.Second, func() error {
		res, err := sys.Root.RequestFuture(pid, req, 5*time.Second).Result()
		if err != nil {
			return err
		}
		resp, ok := res.(*messages.AdminResponse)
		if !ok {
			t.Fatalf("clustertest: create topic: answer %T, want *messages.AdminResponse", res)
		}
		if resp.ErrorCode == messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER {
			return resp.ErrorCode.Err(resp.ErrorMessage)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("clustertest: create topic %q: %v", req.Name, resp.ErrorCode.Err(resp.ErrorMessage))
		}
		topic = resp.Topic
		return nil
	})
	return topic
}

// HostAddress is the advertised address Register gives a fake host on
// port.
func HostAddress(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// fakeSender names a future RequestAs created in an actor system, under
// the address it speaks from.
type fakeSender struct {
	sys      *actor.ActorSystem
	addr, id string
}

var (
	// fakeSenders holds the futures RequestAs is waiting on.
	fakeSenders sync.Map // fakeSender → struct{}
	// routed holds the actor systems whose registry routes them back.
	routed sync.Map // *actor.ActorSystem → struct{}
)

// RouteFakeSenders makes sys deliver messages addressed to RequestAs's
// fake senders to their futures (an address resolver in sys's process
// registry). Call it once right after creating sys, before anything in it
// sends to a remote PID: protoactor's registry does not guard its list of
// resolvers against concurrent use. RequestAs calls it too.
func RouteFakeSenders(sys *actor.ActorSystem) {
	if _, loaded := routed.LoadOrStore(sys, struct{}{}); loaded {
		return
	}
	sys.ProcessRegistry.RegisterAddressResolver(func(pid *actor.PID) (actor.Process, bool) {
		if _, ok := fakeSenders.Load(fakeSender{sys, pid.Address, pid.Id}); !ok {
			return nil, false
		}
		return sys.ProcessRegistry.GetLocal(pid.Id)
	})
}

// RequestAs sends msg to pid as if from a process at addr — another
// host's advertised address (HostAddress), or a stranger's — and waits up
// to timeout for the answer. The sender is a future of sys whose PID
// carries addr; the answer, addressed to addr, comes back to it through
// RouteFakeSenders. Internal requests are authorized by their sender's
// address (cluster.SenderIsHost): this is how a test in one process
// speaks for another host, or forges a request.
func RequestAs(sys *actor.ActorSystem, pid *actor.PID, addr string, msg any, timeout time.Duration) (any, error) {
	RouteFakeSenders(sys)
	f := actor.NewFuture(sys, timeout)
	key := fakeSender{sys, addr, f.PID().Id}
	fakeSenders.Store(key, struct{}{})
	defer fakeSenders.Delete(key)
	sys.Root.RequestWithCustomSender(pid, msg, actor.NewPID(addr, f.PID().Id))
	return f.Result()
}
