// health_test.go: an in-process host keeps its broker and controller
// alive — stopped locally, each is respawned after its backoff, counted,
// and serves again — and /healthz tells the truth meanwhile: 503 naming
// what is wrong while an actor is dead, a partition's replica cannot open,
// or descriptors pass the limit; 200 once all is well.

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

// startTestHost starts a host over a new data directory on free loopback
// ports and shuts it down at cleanup. prepare may change its config and
// write into its data directory before it starts.
func startTestHost(t *testing.T, prepare func(c *Config)) *Host {
	t.Helper()
	httpAddr := strings.TrimPrefix(clustertest.FreeURL(t), "http://")
	cfg := Config{
		Name: "host-1", DataDir: t.TempDir(), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(clustertest.FreePortBase(t))), HTTP: httpAddr,
		EtcdUnsafeNoFsync: true, Logger: clustertest.Logger(t).Logger,
	}
	if prepare != nil {
		prepare(&cfg)
	}
	ctx, cancel := context30s()
	defer cancel()
	h, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start host: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context30s()
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shut the host down: %v", err)
		}
	})
	return h
}

func context30s() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// healthz fetches the host's /healthz: its status code and report.
func healthz(t *testing.T, h *Host) (int, healthReport, error) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + h.cfg.HTTP + "/healthz")
	if err != nil {
		return 0, healthReport{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, healthReport{}, fmt.Errorf("read /healthz: %w", err)
	}
	var rep healthReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return 0, healthReport{}, fmt.Errorf("/healthz body %q: %w", body, err)
	}
	if (resp.StatusCode == http.StatusOK) != (rep.Status == "ok" && len(rep.Problems) == 0) {
		t.Fatalf("/healthz answered %d with %+v", resp.StatusCode, rep)
	}
	return resp.StatusCode, rep, nil
}

// waitHealth waits until /healthz answers code, with a problem line
// containing want (if not empty).
func waitHealth(t *testing.T, h *Host, timeout time.Duration, code int, want string) {
	t.Helper()
	clustertest.WaitFor(t, timeout, func() error {
		got, rep, err := healthz(t, h)
		if err != nil {
			return err
		}
		if got != code || (want != "" && !strings.Contains(strings.Join(rep.Problems, "\n"), want)) {
			return fmt.Errorf("/healthz answered %d %+v, want %d naming %q", got, rep, code, want)
		}
		return nil
	})
}

// restartsMetric reads actorlog_actor_restarts_total{actor=kind} from the
// host's /metrics (0 when absent).
func restartsMetric(t *testing.T, h *Host, kind string) float64 {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + h.cfg.HTTP + "/metrics")
	if err != nil {
		t.Fatalf("get /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	prefix := `actorlog_actor_restarts_total{actor="` + kind + `"} `
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return n
		}
	}
	return 0
}

// produce appends one record to topic-partition 0 through its replica.
func produce(h *Host, topic string) error {
	b, err := record.BuildBatch(record.CompressionNone, record.Record{Value: []byte("v"), Timestamp: 1000})
	if err != nil {
		return fmt.Errorf("build batch: %w", err)
	}
	pid := actor.NewPID(h.system.Address(), messages.ReplicaActorID(topic, 0))
	res, err := h.system.Root.RequestFuture(pid, &messages.ProduceRequest{Topic: topic, Acks: messages.Acks_ACKS_LEADER, Records: b, CurrentLeaderEpoch: -1}, 5*time.Second).Result()
	if err != nil {
		return err
	}
	resp, ok := res.(*messages.ProduceResponse)
	if !ok {
		return fmt.Errorf("produce answered %T", res)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode.Err(resp.ErrorMessage)
	}
	return nil
}

func TestBrokerAndControllerAreRespawned(t *testing.T) {
	// A backoff long enough to see /healthz fail meanwhile.
	h := startTestHost(t, func(c *Config) { c.RestartBackoff = 1500 * time.Millisecond })
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	ctrl := actor.NewPID(h.system.Address(), messages.ControllerActorID)
	waitHealth(t, h, 10*time.Second, http.StatusOK, "")
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: "events", Partitions: 1, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error { return produce(h, "events") })

	// The broker stopped locally (its replicas with it): /healthz names
	// it, then it comes back with its replica, counted once.
	h.system.Root.Stop(brk)
	waitHealth(t, h, 5*time.Second, http.StatusServiceUnavailable, "broker actor is not running")
	waitHealth(t, h, 10*time.Second, http.StatusOK, "")
	clustertest.WaitFor(t, 10*time.Second, func() error { return produce(h, "events") })
	if n := restartsMetric(t, h, "broker"); n != 1 {
		t.Fatalf("broker restarts counted: %v, want 1", n)
	}

	// The controller poisoned: the same, and it creates topics again.
	h.system.Root.Poison(ctrl)
	waitHealth(t, h, 5*time.Second, http.StatusServiceUnavailable, "controller actor is not running")
	waitHealth(t, h, 10*time.Second, http.StatusOK, "")
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: "later", Partitions: 1, ReplicationFactor: 1})
	clustertest.WaitFor(t, 10*time.Second, func() error { return produce(h, "later") })
	if n := restartsMetric(t, h, "controller"); n != 1 {
		t.Fatalf("controller restarts counted: %v, want 1", n)
	}
	if n := restartsMetric(t, h, "broker"); n != 1 {
		t.Fatalf("broker restarts counted after the controller's: %v, want 1", n)
	}
}

func TestHealthzNamesPartitionThatCannotOpen(t *testing.T) {
	var dataDir string
	h := startTestHost(t, func(c *Config) {
		dataDir = c.DataDir
		// A file where the partition's directory should be (chmod would
		// not stop root).
		if err := os.WriteFile(filepath.Join(c.DataDir, "bad-0"), []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	brk := actor.NewPID(h.system.Address(), messages.BrokerActorID)
	clustertest.CreateTopic(t, h.system, brk, &messages.CreateTopicRequest{Name: "bad", Partitions: 1, ReplicationFactor: 1})
	waitHealth(t, h, 10*time.Second, http.StatusServiceUnavailable, "partition bad-0: replica not running")

	// Repaired, the broker's retry opens it and /healthz recovers.
	if err := os.Remove(filepath.Join(dataDir, "bad-0")); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, h, 15*time.Second, http.StatusOK, "")
	if err := produce(h, "bad"); err != nil {
		t.Fatalf("produce to the repaired partition: %v", err)
	}
}

func TestHealthzFailsNearTheDescriptorLimit(t *testing.T) {
	// Any process holds more than a billionth of its limit.
	h := startTestHost(t, func(c *Config) { c.HealthDescriptorRatio = 1e-9 })
	waitHealth(t, h, 10*time.Second, http.StatusServiceUnavailable, "open descriptors")
	if p := descriptorProblem(1, h.logger); p != "" {
		t.Fatalf("descriptors reported at the whole limit: %q", p)
	}
	open, limit, err := descriptorUsage()
	if err != nil || open < 3 || limit == 0 {
		t.Fatalf("descriptor usage %d of %d: %v", open, limit, err)
	}
}

func TestHealthDescriptorRatioIsValidated(t *testing.T) {
	for _, ratio := range []float64{-0.5, 1.5} {
		if _, err := (Config{HealthDescriptorRatio: ratio}).withDefaults(); err == nil {
			t.Errorf("health descriptor ratio %v accepted", ratio)
		}
	}
	for _, ratio := range []float64{0, 0.5, 1} {
		if _, err := (Config{HealthDescriptorRatio: ratio}).withDefaults(); err != nil {
			t.Errorf("health descriptor ratio %v refused: %v", ratio, err)
		}
	}
}

func TestDescriptorThreshold(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		ratio float64
		want  uint64
	}{
		{1024, 0, 922},        // 10 % free: 102
		{20000, 0, 19744},     // 256 free, below the partition capacity's 1024
		{1048576, 0, 1048320}, // 256 free
		{20000, 0.9, 18000},
		{20000, 1, 20000},
		{100, 0, 90},
	} {
		if got := descriptorThreshold(tc.limit, tc.ratio); got != tc.want {
			t.Errorf("descriptorThreshold(%d, %v) = %d, want %d", tc.limit, tc.ratio, got, tc.want)
		}
	}
}
