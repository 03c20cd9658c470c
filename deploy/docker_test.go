// docker_test.go: the 3-host compose cluster of deploy/compose.yaml, in
// Docker. It builds the image with deploy/build-image.sh, brings the cluster
// up under a unique compose project, and drives it with the CLI run inside
// the host containers (the image is FROM scratch: `docker exec <c> /actorlog
// ...`, no shell). Its sub-tests, in order: KillController kills the
// controller's container and starts it again; CutController disconnects the
// controller's container from the compose network and reconnects it;
// Replication (replication_docker_test.go) cuts the leader of a replicated
// partition off the network under an acks=all producer and checks the log.
//
// Skipped when Docker or Compose is missing, and with -short.

package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// imageTag is what deploy/build-image.sh builds by default and what
// deploy/compose.yaml runs.
const imageTag = "actorlog:dev"

var services = []string{"host1", "host2", "host3"}

// composeCommand returns the Compose command: `docker compose` when the
// plugin works, else the standalone `docker-compose`.
func composeCommand() ([]string, error) {
	if err := exec.Command("docker", "compose", "version").Run(); err == nil {
		return []string{"docker", "compose"}, nil
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}, nil
	}
	return nil, fmt.Errorf("neither `docker compose` nor `docker-compose` works")
}

// requireDocker skips the test unless the Docker engine answers and a
// Compose command exists; it returns the Compose command.
func requireDocker(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping the Docker cluster test in -short mode")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker not available: no docker binary in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		t.Skipf("docker not available: `docker info`: %v: %s", err, lastLines(string(out), 3))
	}
	compose, err := composeCommand()
	if err != nil {
		t.Skipf("docker not available: %v", err)
	}
	return compose
}

var (
	buildOnce sync.Once
	buildErr  error
	buildOut  string
	buildTook time.Duration
)

// buildImage runs deploy/build-image.sh once per test binary.
func buildImage(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "./build-image.sh", imageTag)
		out, err := cmd.CombinedOutput()
		buildOut, buildErr, buildTook = string(out), err, time.Since(start)
	})
	if buildErr != nil {
		t.Fatalf("deploy/build-image.sh: %v\n%s", buildErr, buildOut)
	}
	t.Logf("image %s built by deploy/build-image.sh in %v", imageTag, buildTook.Round(time.Millisecond))
}

// testComposeFile writes deploy/compose.yaml to dir with each published
// port's host side left to Docker (127.0.0.1::7080 for 127.0.0.1:7180:7080),
// so the test neither collides with a user's cluster nor with another run.
// Everything else is the user's file, as parsed by YAML (anchors expanded).
func testComposeFile(t *testing.T, dir string) string {
	t.Helper()
	return rewriteComposeFile(t, dir, "compose.yaml", nil)
}

// rewriteComposeFile is testComposeFile for deploy/<file>; keep, when not
// nil, names the published ports ("IP:HOST:CONTAINER") to leave as they
// are (a Kafka port whose host side the host advertises).
func rewriteComposeFile(t *testing.T, dir, file string, keep func(port string) bool) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("deploy/%s: %v", file, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	svcs, _ := doc["services"].(map[string]any)
	for _, name := range services {
		if _, ok := svcs[name]; !ok {
			t.Fatalf("deploy/%s has no service %s", file, name)
		}
	}
	for name, s := range svcs {
		svc, _ := s.(map[string]any)
		ports, _ := svc["ports"].([]any)
		for i, p := range ports {
			switch p := p.(type) {
			case string: // [IP:]HOST:CONTAINER
				if keep != nil && keep(p) {
					continue
				}
				f := strings.Split(p, ":")
				switch len(f) {
				case 3:
					ports[i] = f[0] + "::" + f[2]
				case 2:
					ports[i] = "127.0.0.1::" + f[1]
				}
			case map[string]any: // long syntax
				delete(p, "published")
			default:
				t.Fatalf("service %s: unexpected port entry %v", name, p)
			}
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ") // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// cluster is one compose project of deploy/compose.yaml.
type cluster struct {
	t       *testing.T
	compose []string
	file    string
	project string
	network string            // the compose network, <project>_actorlog
	ids     map[string]string // service -> container id
	cliArgs []string          // global flags of every CLI run (cli), e.g. a client certificate
}

// run runs a command with a timeout and returns its stdout; the error
// carries stderr.
func run(timeout time.Duration, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, lastLines(stderr.String(), 5))
	}
	return stdout.String(), nil
}

func (c *cluster) composeRun(timeout time.Duration, args ...string) (string, error) {
	full := append(append(c.compose[1:len(c.compose):len(c.compose)], "-p", c.project, "-f", c.file), args...)
	return run(timeout, "", c.compose[0], full...)
}

func (c *cluster) docker(args ...string) string {
	c.t.Helper()
	out, err := run(time.Minute, "", "docker", args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// startCluster brings the compose project up and registers its teardown
// (logs on failure, then `down -v`).
func startCluster(t *testing.T, compose []string) *cluster {
	t.Helper()
	return startClusterFile(t, compose, testComposeFile(t, t.TempDir()))
}

// startClusterFile is startCluster with the compose file at file.
func startClusterFile(t *testing.T, compose []string, file string) *cluster {
	t.Helper()
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, compose: compose, file: file,
		project: "actorlog-test-" + hex.EncodeToString(rnd[:]), ids: map[string]string{}}
	t.Logf("compose: %s -p %s (ports as deploy/compose.yaml but Docker-assigned)", strings.Join(compose, " "), c.project)
	// Cleanups run last-in first-out: the logs are dumped before `down`.
	t.Cleanup(func() {
		if out, err := c.composeRun(3*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out, err := c.composeRun(time.Minute, "logs", "--no-color", "--tail", "150")
		t.Logf("compose logs (last 150 lines per host; err %v):\n%s", err, out)
	})
	start := time.Now()
	if out, err := c.composeRun(3*time.Minute, "up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	t.Logf("compose up -d took %v", time.Since(start).Round(time.Millisecond))
	for _, s := range services {
		out, err := c.composeRun(time.Minute, "ps", "-q", s)
		if err != nil || strings.TrimSpace(out) == "" {
			t.Fatalf("compose ps -q %s: %q, %v", s, out, err)
		}
		c.ids[s] = strings.TrimSpace(out)
	}
	// The compose network's name, from the container (Compose may
	// normalize the project name).
	nets := strings.Fields(c.docker("inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", c.ids["host1"]))
	if len(nets) != 1 || !strings.HasSuffix(nets[0], "_actorlog") {
		t.Fatalf("host1's networks: %v, want one <project>_actorlog", nets)
	}
	c.network = nets[0]
	return c
}

// cli runs the actorlog CLI inside service's container, bootstrapping from
// that host first, then the others.
func (c *cluster) cli(service, stdin string, args ...string) (string, error) {
	boot := []string{service + ":7070"}
	for _, s := range services {
		if s != service {
			boot = append(boot, s+":7070")
		}
	}
	dargs := []string{"exec"}
	if stdin != "" {
		dargs = append(dargs, "-i")
	}
	dargs = append(dargs, c.ids[service], "/actorlog", "--bootstrap", strings.Join(boot, ","))
	dargs = append(dargs, c.cliArgs...)
	return run(45*time.Second, stdin, "docker", append(dargs, args...)...)
}

func (c *cluster) mustCLI(service, stdin string, args ...string) string {
	c.t.Helper()
	out, err := c.cli(service, stdin, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// hostLine is one host line of `cluster describe`:
// NAME ID ADDRESS ALIVE BROKER-EPOCH CONTROLLER.
type hostLine struct {
	name, addr, epoch string
	id                int
	alive, controller bool
}

func (h hostLine) String() string {
	ctrl := ""
	if h.controller {
		ctrl = " controller"
	}
	return fmt.Sprintf("%s(id %d, alive %v, epoch %s%s)", h.name, h.id, h.alive, h.epoch, ctrl)
}

type clusterView []hostLine

func (v clusterView) host(name string) (hostLine, bool) {
	for _, h := range v {
		if h.name == name {
			return h, true
		}
	}
	return hostLine{}, false
}

func (v clusterView) controller() (hostLine, bool) {
	for _, h := range v {
		if h.controller {
			return h, true
		}
	}
	return hostLine{}, false
}

func (v clusterView) alive() int {
	n := 0
	for _, h := range v {
		if h.alive {
			n++
		}
	}
	return n
}

func (v clusterView) String() string {
	s := make([]string, len(v))
	for i, h := range v {
		s[i] = h.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// clusterJSON is the part of `cluster describe --output json` the tests
// read (the README documents the whole document).
type clusterJSON struct {
	ControllerID int32 `json:"controller_id"`
	Hosts        []struct {
		Name        string `json:"name"`
		ID          int    `json:"id"`
		Address     string `json:"address"`
		Alive       bool   `json:"alive"`
		BrokerEpoch *int64 `json:"broker_epoch"`
		Controller  bool   `json:"controller"`
	} `json:"hosts"`
}

// decodeJSON decodes the one JSON document a describe command printed.
func decodeJSON(out string, v any) error {
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w in %q", err, out)
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON document in %q", out)
	}
	return nil
}

// parseDescribe parses `cluster describe --output json` output, hosts by
// name ("-" for an unknown name, address or broker epoch, as the table).
func parseDescribe(out string) (clusterView, error) {
	var d clusterJSON
	if err := decodeJSON(out, &d); err != nil {
		return nil, fmt.Errorf("cluster describe: %w", err)
	}
	var v clusterView
	for _, h := range d.Hosts {
		l := hostLine{name: h.Name, id: h.ID, addr: h.Address, alive: h.Alive, epoch: "-", controller: h.Controller}
		if l.name == "" {
			l.name = "-"
		}
		if l.addr == "" {
			l.addr = "-"
		}
		if h.BrokerEpoch != nil {
			l.epoch = strconv.FormatInt(*h.BrokerEpoch, 10)
		}
		v = append(v, l)
	}
	sort.Slice(v, func(i, j int) bool { return v[i].name < v[j].name })
	return v, nil
}

func TestParseDescribe(t *testing.T) {
	out := `{"controller_id": 2, "controller_epoch": 42, "hosts": [
		{"name": "host2", "id": 2, "address": "host2:7070", "alive": true, "broker_epoch": 9, "controller": true},
		{"name": "host1", "id": 1, "address": "host1:7070", "alive": true, "broker_epoch": 7, "controller": false},
		{"name": "host3", "id": 3, "address": "", "alive": false, "broker_epoch": null, "controller": false}]}
`
	v, err := parseDescribe(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.String(), "[host1(id 1, alive true, epoch 7) host2(id 2, alive true, epoch 9 controller) host3(id 3, alive false, epoch -)]"; got != want {
		t.Fatalf("parsed %s, want %s", got, want)
	}
	if h, _ := v.host("host3"); h.addr != "-" || v.alive() != 2 {
		t.Fatalf("host3 %+v, %d alive", h, v.alive())
	}
	if _, err := parseDescribe("NAME ID ADDRESS\n"); err == nil {
		t.Fatal("a table parsed as JSON")
	}
}

// describe runs `cluster describe --output json` through service's host.
func (c *cluster) describe(service string) (clusterView, error) {
	out, err := c.cli(service, "", "cluster", "describe", "--output", "json")
	if err != nil {
		return nil, err
	}
	return parseDescribe(out)
}

// waitFor polls cond until it returns nil and returns how long that took;
// it fails the test after timeout with cond's last error. It is
// internal/poll's Until with a label and a 300 ms interval instead of
// 10 ms: each check here runs the CLI in a container (docker exec), which
// at poll's rate would load the 2-core machine the cluster runs on.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitHealthy waits until every host is alive in `cluster describe`
// through via, with a controller, and returns that view.
func (c *cluster) waitHealthy(via string, timeout time.Duration, what string) (clusterView, time.Duration) {
	c.t.Helper()
	var v clusterView
	took := waitFor(c.t, timeout, what, func() error {
		var err error
		if v, err = c.describe(via); err != nil {
			return err
		}
		if len(v) != len(services) || v.alive() != len(services) {
			return fmt.Errorf("not every host alive: %v", v)
		}
		if _, ok := v.controller(); !ok {
			return fmt.Errorf("no controller: %v", v)
		}
		return nil
	})
	return v, took
}

// waitControllerMoved waits until `cluster describe` through via shows a
// controller other than old and old as not alive; it returns the new
// controller and how long that took.
func (c *cluster) waitControllerMoved(via, old string, timeout time.Duration, after string) (hostLine, time.Duration) {
	c.t.Helper()
	var ctrl hostLine
	took := waitFor(c.t, timeout, "after "+after+": another controller and "+old+" down, through "+via, func() error {
		v, err := c.describe(via)
		if err != nil {
			return err
		}
		h, ok := v.controller()
		if !ok || h.name == old {
			return fmt.Errorf("controller not moved off %s: %v", old, v)
		}
		if o, ok := v.host(old); !ok || o.alive {
			return fmt.Errorf("%s still alive: %v", old, v)
		}
		ctrl = h
		return nil
	})
	return ctrl, took
}

// other returns a service other than not.
func other(not string) string {
	for _, s := range services {
		if s != not {
			return s
		}
	}
	panic("one service")
}

// consume reads n records of topic from the beginning through service.
func (c *cluster) consume(service, topic string, n int) ([]string, error) {
	out, err := c.cli(service, "", "consume", topic, "--from-beginning", "--max-messages", strconv.Itoa(n), "--timeout", "10s")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// sameRecords reports whether got holds exactly the records of want.
func sameRecords(got, want []string) error {
	if len(got) != len(want) {
		return fmt.Errorf("consumed %d records, want %d", len(got), len(want))
	}
	g := append([]string(nil), got...)
	sort.Strings(g)
	w := append([]string(nil), want...)
	sort.Strings(w)
	for i := range g {
		if g[i] != w[i] {
			return fmt.Errorf("consumed record %q, want %q", g[i], w[i])
		}
	}
	return nil
}

func TestDockerCluster(t *testing.T) {
	compose := requireDocker(t)
	buildImage(t)
	c := startCluster(t, compose)
	testStart := time.Now()
	defer func() {
		t.Logf("scenarios took %v after the image build", time.Since(testStart).Round(time.Millisecond))
	}()

	v, took := c.waitHealthy("host1", 2*time.Minute, "cluster formed")
	t.Logf("cluster formed %v after up: %v", took.Round(time.Millisecond), v)

	// /healthz and /metrics are published (here on Docker-assigned ports).
	for _, s := range services {
		addr, err := c.composeRun(time.Minute, "port", s, "7080")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + strings.TrimSpace(addr) + "/healthz")
		if err != nil {
			t.Fatalf("%s /healthz: %v", s, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf("%q", s)) {
			t.Fatalf("%s /healthz at %s: %s %s", s, addr, resp.Status, body)
		}
	}

	// A topic, records through one host and back through another; the
	// scenarios check that they survive.
	c.mustCLI("host2", "", "topics", "create", "events", "--partitions", "6")
	var want []string
	var in strings.Builder
	for i := 0; i < 300; i++ {
		r := fmt.Sprintf("record-%03d", i)
		want = append(want, r)
		in.WriteString(r + "\n")
	}
	c.mustCLI("host3", in.String(), "produce", "events")
	got, err := c.consume("host1", "events", len(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecords(got, want); err != nil {
		t.Fatal(err)
	}

	// Each scenario leaves the cluster healthy for the next, except the
	// last, which stops it to compare the replicas' logs; one that fails
	// ends the test. -run 'TestDockerCluster/Replication' runs one alone.
	for _, sc := range []struct {
		name string
		run  func(*cluster)
	}{
		{"KillController", func(c *cluster) { killControllerScenario(c, want) }},
		{"CutController", func(c *cluster) { cutControllerScenario(c, want) }},
		{"Replication", replicationCutScenario},
	} {
		if !t.Run(sc.name, func(t *testing.T) { sc.run(c.withT(t)) }) {
			return
		}
	}
}

// withT returns a copy of c that reports to t (a sub-test's).
func (c *cluster) withT(t *testing.T) *cluster {
	cc := *c
	cc.t = t
	return &cc
}

// killControllerScenario kills the controller's container and starts it
// again: another controller is elected, the killed host rejoins, and want
// (the records of topic events) is still readable.
func killControllerScenario(c *cluster, want []string) {
	t := c.t
	v, _ := c.waitHealthy("host1", time.Minute, "cluster healthy before the kill")
	ctrl, _ := v.controller()
	victim := ctrl.name
	survivor := other(victim)
	c.docker("kill", c.ids[victim])
	killed := time.Now()
	newCtrl, elected := c.waitControllerMoved(survivor, victim, 30*time.Second, "docker kill "+victim)
	c.mustCLI(survivor, "", "topics", "create", "after-kill", "--partitions", "3")
	t.Logf("docker kill %s (controller) -> %s controller, %s down after %v; topic created through %s after %v",
		victim, newCtrl.name, victim, elected.Round(time.Millisecond), survivor, time.Since(killed).Round(time.Millisecond))
	c.docker("start", c.ids[victim])
	v, rejoined := c.waitHealthy(survivor, 60*time.Second, "killed host rejoins after docker start")
	t.Logf("docker start %s -> 3 hosts alive after %v: %v", victim, rejoined.Round(time.Millisecond), v)
	// Its partitions come back with their data (kept in its volume).
	waitFor(t, 60*time.Second, "every record readable after the restart", func() error {
		got, err := c.consume(survivor, "events", len(want))
		if err != nil {
			return err
		}
		return sameRecords(got, want)
	})
	if out := c.mustCLI(victim, "", "topics", "list"); !strings.Contains(out, "events") || !strings.Contains(out, "after-kill") {
		t.Fatalf("topics list through the restarted %s: %q", victim, out)
	}
}

// cutControllerScenario disconnects the controller's container from the
// network and reconnects it. The majority elects another controller and
// sees the cut host down; the cut host loses its lease and fences itself,
// then rejoins with a new broker epoch.
func cutControllerScenario(c *cluster, want []string) {
	t := c.t
	v, _ := c.waitHealthy("host1", time.Minute, "cluster healthy before the cut")
	ctrl, ok := v.controller()
	if !ok {
		t.Fatalf("no controller before the cut: %v", v)
	}
	cut := ctrl.name
	majority := other(cut)
	before := ctrl.epoch
	c.docker("network", "disconnect", c.network, c.ids[cut])
	cutAt := time.Now()
	cutAtLogs := cutAt.Add(-2 * time.Second).UTC().Format(time.RFC3339)
	majCtrl, moved := c.waitControllerMoved(majority, cut, 40*time.Second, "network disconnect "+cut)
	remaining := 40*time.Second - time.Since(cutAt)
	waitFor(t, remaining, "cut "+cut+" stops acting", func() error {
		logs, err := containerLogs(c.ids[cut], cutAtLogs)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "fenced") || strings.Contains(l, "lost the controller election session") {
				return nil
			}
		}
		return fmt.Errorf("no \"fenced\" or \"lost the controller election session\" in %s's logs since the cut", cut)
	})
	t.Logf("network disconnect %s (controller) -> %s controller and %s down after %v; %s fenced itself within %v of the cut",
		cut, majCtrl.name, cut, moved.Round(time.Millisecond), cut, time.Since(cutAt).Round(time.Millisecond))
	if _, err := c.cli(majority, "", "topics", "create", "during-cut", "--partitions", "3"); err != nil {
		t.Fatalf("topic creation on the majority side during the cut: %v", err)
	}

	c.docker("network", "connect", "--alias", cut, c.network, c.ids[cut])
	var after hostLine
	back := waitFor(t, 90*time.Second, "cut "+cut+" rejoins after reconnect", func() error {
		v, err := c.describe(majority)
		if err != nil {
			return err
		}
		if v.alive() != len(services) {
			return fmt.Errorf("not every host alive: %v", v)
		}
		if _, ok := v.controller(); !ok {
			return fmt.Errorf("no controller: %v", v)
		}
		after, _ = v.host(cut)
		if after.epoch == before {
			return fmt.Errorf("%s alive with its old broker epoch %s: %v", cut, before, v)
		}
		return nil
	})
	t.Logf("network connect %s -> 3 hosts alive after %v, %s broker epoch %s -> %s",
		cut, back.Round(time.Millisecond), cut, before, after.epoch)
	if out := c.mustCLI(cut, "", "topics", "list"); !strings.Contains(out, "during-cut") {
		t.Fatalf("topics list through the rejoined %s misses the topic made during the cut: %q", cut, out)
	}
	waitFor(t, 60*time.Second, "every record readable after the rejoin", func() error {
		got, err := c.consume(cut, "events", len(want))
		if err != nil {
			return err
		}
		return sameRecords(got, want)
	})
}

// containerLogs returns a container's output (stdout and stderr) since a
// time.
func containerLogs(id, since string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "logs", "--since", since, id).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker logs %s: %v: %s", id, err, lastLines(string(out), 3))
	}
	return string(out), nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
