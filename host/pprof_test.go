// pprof_test.go: with --pprof a host serves Go's execution traces as well
// as its profiles: a trace shows where goroutines wait (runnable but not
// running, blocked), which a CPU profile does not.

package host

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestPProfServesExecutionTraces(t *testing.T) {
	h := startTestHost(t, func(c *Config) { c.PProf = true })
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + h.cfg.HTTP + "/debug/pprof/trace?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Fatalf("/debug/pprof/trace: %s, %d bytes starting %q; want 200 and a Go execution trace", resp.Status, len(body), body[:min(len(body), 16)])
	}
}
