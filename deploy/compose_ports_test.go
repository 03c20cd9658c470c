// compose_ports_test.go: what deploy/compose.yaml publishes on the
// machine that runs it (issue 11, "the compose file publishes nothing on
// 0.0.0.0 that it need not"). Read from the file, no Docker needed: every
// published port is bound to a loopback address, and neither the actor
// remote (7070) nor etcd's peer and client ports (7071, 7072) are
// published at all — hosts reach each other, and the cli service reaches
// them, on the compose network.

package deploy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// unpublished are container ports the compose file must not publish.
var unpublished = map[int]string{7070: "the actor remote", 7071: "etcd's peer port", 7072: "etcd's client port"}

// publishedPort is one entry of a service's ports: the host address it is
// bound to ("" for every interface) and the container port.
type publishedPort struct {
	hostIP    string
	container int
}

// parsePort reads a ports entry, short ("[IP:]HOST:CONTAINER[/proto]")
// or long ({host_ip, published, target}) syntax.
func parsePort(t *testing.T, service string, p any) publishedPort {
	t.Helper()
	switch p := p.(type) {
	case string:
		spec, _, _ := strings.Cut(p, "/")
		var ip, container string
		if i := strings.LastIndex(spec, ":"); i < 0 {
			container = spec // a container port alone: published on every interface
		} else {
			container = spec[i+1:]
			if j := strings.LastIndex(spec[:i], ":"); j >= 0 {
				ip = strings.Trim(spec[:j], "[]")
			}
		}
		n, err := strconv.Atoi(container)
		if err != nil {
			t.Fatalf("service %s: port %q: container port %q is no number", service, p, container)
		}
		return publishedPort{hostIP: ip, container: n}
	case map[string]any:
		ip, _ := p["host_ip"].(string)
		n, ok := p["target"].(float64)
		if !ok {
			t.Fatalf("service %s: port %v has no target", service, p)
		}
		return publishedPort{hostIP: ip, container: int(n)}
	}
	t.Fatalf("service %s: unexpected port entry %v", service, p)
	return publishedPort{}
}

// composeServices reads a compose file's services (YAML anchors and
// merge keys resolved).
func composeServices(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read deploy/%s: %v", file, err)
	}
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("deploy/%s: %v", file, err)
	}
	var doc struct {
		Services map[string]map[string]any `json:"services"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("deploy/%s: %v", file, err)
	}
	return doc.Services
}

func TestComposePublishesOnlyLoopbackHTTP(t *testing.T) {
	for _, file := range []string{"compose.yaml", "compose-tls.yaml"} {
		t.Run(file, func(t *testing.T) {
			published := 0
			for name, svc := range composeServices(t, file) {
				if mode, _ := svc["network_mode"].(string); mode == "host" {
					t.Errorf("service %s uses the host's network: every port it listens on is the machine's", name)
				}
				ports, _ := svc["ports"].([]any)
				for _, p := range ports {
					pp := parsePort(t, name, p)
					published++
					if ip := net.ParseIP(pp.hostIP); ip == nil || !ip.IsLoopback() {
						t.Errorf("service %s publishes container port %d on %q: bind it to 127.0.0.1 (\"127.0.0.1:HOST:%d\")", name, pp.container, pp.hostIP, pp.container)
					}
					if what, ok := unpublished[pp.container]; ok {
						t.Errorf("service %s publishes %s (%d): hosts and the cli reach it on the compose network", name, what, pp.container)
					}
				}
			}
			if published == 0 {
				t.Fatalf("deploy/%s publishes no port: the hosts' /healthz and /metrics should be reachable from the machine", file)
			}
		})
	}
}

// TestComposeTLSKeepsSecurityOn: every host of compose-tls.yaml runs with
// TLS on the actor remote and etcd (https peer URLs), SASL and its own
// host certificate, and the CLI and setup services present a client
// certificate.
func TestComposeTLSKeepsSecurityOn(t *testing.T) {
	hosts := 0
	for name, svc := range composeServices(t, "compose-tls.yaml") {
		args := fmt.Sprint(svc["command"], svc["entrypoint"])
		if !strings.HasPrefix(name, "host") {
			if name != "certs" && !strings.Contains(args, "--tls-cert") {
				t.Errorf("service %s presents no client certificate: %s", name, args)
			}
			continue
		}
		hosts++
		env, _ := svc["environment"].(map[string]any)
		for key, want := range map[string]string{
			"ACTORLOG_REMOTE_TLS": "true", "ACTORLOG_ETCD_TLS": "true", "ACTORLOG_KAFKA_SASL_MECHANISMS": "SCRAM-SHA-512",
		} {
			if got := fmt.Sprint(env[key]); got != want {
				t.Errorf("service %s: %s=%q, want %q", name, key, got, want)
			}
		}
		if ic := fmt.Sprint(env["ACTORLOG_INITIAL_CLUSTER"]); strings.Contains(ic, "http://") {
			t.Errorf("service %s: plain-text etcd peer URLs %s", name, ic)
		}
		if !strings.Contains(args, "--tls-cert /certs/"+name+".crt") {
			t.Errorf("service %s does not use its own host certificate: %s", name, args)
		}
	}
	if hosts != 3 {
		t.Fatalf("%d host services, want 3", hosts)
	}
}

// TestDockerfileExposesNoEtcdPort: `docker run -P` publishes every EXPOSEd
// port on all interfaces, so the image exposes only the client port and
// /healthz+/metrics, never etcd's.
func TestDockerfileExposesNoEtcdPort(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	exposes := 0
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.EqualFold(f[0], "EXPOSE") {
			continue
		}
		exposes++
		for _, p := range f[1:] {
			port, err := strconv.Atoi(strings.Split(p, "/")[0])
			if err != nil {
				t.Fatalf("EXPOSE %q: %v", p, err)
			}
			if port == 7071 || port == 7072 {
				t.Errorf("the Dockerfile exposes %s (%d)", unpublished[port], port)
			}
		}
	}
	if exposes == 0 {
		t.Fatal("the Dockerfile exposes nothing: the client port 7070 must be")
	}
}
