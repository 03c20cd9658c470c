// console_test.go: the web console served by a real in-process host —
// its pages and JSON endpoints over the host's own cluster: a topic
// created from the console's form shows up with its partitions, a record
// produced to it shows in the record browser, the topic is deleted from
// the console; and which HTTP addresses get the console by default.

package host

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/actorlog/actorlog/cluster/clustertest"
	"github.com/actorlog/actorlog/console"
)

func TestConsoleEnabled(t *testing.T) {
	for _, tc := range []struct {
		mode ConsoleMode
		addr string
		want bool
	}{
		{ConsoleAuto, "127.0.0.1:7080", true},
		{ConsoleAuto, "[::1]:7080", true},
		{ConsoleAuto, "localhost:7080", true},
		{ConsoleAuto, "0.0.0.0:7080", false},
		{ConsoleAuto, ":7080", false},
		{ConsoleAuto, "10.1.2.3:7080", false},
		{ConsoleOn, "0.0.0.0:7080", true},
		{ConsoleOff, "127.0.0.1:7080", false},
	} {
		if got := consoleEnabled(tc.mode, tc.addr); got != tc.want {
			t.Errorf("consoleEnabled(%d, %s) = %v, want %v", tc.mode, tc.addr, got, tc.want)
		}
	}
}

// consoleGet fetches a console path of h: status, content type, body.
func consoleGet(t *testing.T, h *Host, path string) (int, string, []byte) {
	t.Helper()
	c := http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get("http://" + h.cfg.HTTP + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// consoleJSON fetches an API path of h into v; an error when the status
// is not want.
func consoleJSON(t *testing.T, h *Host, path string, want int, v any) error {
	t.Helper()
	code, ct, b := consoleGet(t, h, path)
	if code != want || !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("GET %s: %d %s, want %d JSON: %s", path, code, ct, want, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w in %s", path, err, b)
	}
	return nil
}

// consolePost submits a console form of h: status and Location.
func consolePost(t *testing.T, h *Host, path string, form url.Values) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm("http://"+h.cfg.HTTP+path, form)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if resp.StatusCode >= 400 {
		t.Logf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header.Get("Location")
}

func TestConsoleOnRealHost(t *testing.T) {
	h := startTestHost(t, nil)
	const topic = "console-topic"

	clustertest.WaitFor(t, 15*time.Second, func() error {
		var v console.ClusterView
		if err := consoleJSON(t, h, "/api/v1/cluster", http.StatusOK, &v); err != nil {
			return err
		}
		if len(v.Hosts) != 1 || !v.Hosts[0].Alive || v.Hosts[0].Name != "host-1" || v.ControllerID != v.Hosts[0].ID || !v.Hosts[0].Controller {
			return fmt.Errorf("cluster view %+v", v)
		}
		return nil
	})
	code, ct, page := consoleGet(t, h, "/ui/")
	if code != http.StatusOK || !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(page), "<td>host-1</td>") {
		t.Fatalf("GET /ui/: %d %s: %s", code, ct, page)
	}

	// Create the topic from the console's form, with its token.
	_, _, page = consoleGet(t, h, "/ui/topics")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no form token on /ui/topics: %s", page)
	}
	tok := string(m[1])
	if code, _ := consolePost(t, h, "/ui/topics", url.Values{"name": {topic}, "partitions": {"2"}, "replication_factor": {"1"}}); code != http.StatusForbidden {
		t.Fatalf("create without the token: %d, want 403", code)
	}
	code, loc := consolePost(t, h, "/ui/topics", url.Values{"csrf": {tok}, "name": {topic}, "partitions": {"2"}, "replication_factor": {"1"}})
	if code != http.StatusSeeOther || loc != "/ui/topics/"+topic+"?done=created" {
		t.Fatalf("create from the console: %d to %q", code, loc)
	}
	if code, _ := consolePost(t, h, "/ui/topics", url.Values{"csrf": {tok}, "name": {topic}, "partitions": {"2"}, "replication_factor": {"1"}}); code != http.StatusConflict {
		t.Fatalf("create it again: %d, want 409", code)
	}
	clustertest.WaitFor(t, 15*time.Second, func() error {
		var v console.TopicView
		if err := consoleJSON(t, h, "/api/v1/topics/"+topic, http.StatusOK, &v); err != nil {
			return err
		}
		if len(v.Partitions) != 2 {
			return fmt.Errorf("topic view %+v", v)
		}
		for _, p := range v.Partitions {
			if p.Leader != h.hostID.Load() || p.LogEndOffset == nil {
				return fmt.Errorf("partition %+v not served yet", p)
			}
		}
		return nil
	})
	clustertest.WaitFor(t, 10*time.Second, func() error { return produce(h, topic) })

	var rv console.RecordsView
	if err := consoleJSON(t, h, "/api/v1/topics/"+topic+"/records?partition=0&limit=10", http.StatusOK, &rv); err != nil {
		t.Fatal(err)
	}
	if len(rv.Records) < 1 || rv.Records[0].Value == nil || *rv.Records[0].Value != "v" || rv.HighWatermark < 1 {
		t.Fatalf("record browser: %+v", rv)
	}
	// The test-record form produces through the real client (acks=all)
	// and names the offset the record got.
	code, loc = consolePost(t, h, "/ui/topics/"+topic+"/produce", url.Values{"csrf": {tok}, "key": {"k1"}, "value": {"from-console"}, "partition": {"1"}})
	if code != http.StatusSeeOther || !strings.Contains(loc, "done=produced&partition=1&offset=0") {
		t.Fatalf("produce form: %d %q, want 303 to the record at partition 1 offset 0", code, loc)
	}
	if err := consoleJSON(t, h, "/api/v1/topics/"+topic+"/records?partition=1&limit=10", http.StatusOK, &rv); err != nil {
		t.Fatal(err)
	}
	if len(rv.Records) != 1 || rv.Records[0].Value == nil || *rv.Records[0].Value != "from-console" || rv.Records[0].Key == nil || *rv.Records[0].Key != "k1" {
		t.Fatalf("the produced record: %+v", rv.Records)
	}
	// The configs form sets an override through the controller.
	if code, _ := consolePost(t, h, "/ui/topics/"+topic+"/configs", url.Values{"csrf": {tok}, "set": {"retention.ms=3600000"}}); code != http.StatusSeeOther {
		t.Fatalf("configs form: %d, want 303", code)
	}
	clustertest.WaitFor(t, 10*time.Second, func() error {
		var v console.TopicView
		if err := consoleJSON(t, h, "/api/v1/topics/"+topic, http.StatusOK, &v); err != nil {
			return err
		}
		if v.Configs["retention.ms"] != "3600000" {
			return fmt.Errorf("configs %v", v.Configs)
		}
		return nil
	})
	var e struct{ Error string }
	if err := consoleJSON(t, h, "/api/v1/topics/"+topic+"/records?partition=0&limit=501", http.StatusBadRequest, &e); err != nil {
		t.Fatal(err)
	}
	if err := consoleJSON(t, h, "/api/v1/topics/no-such-topic", http.StatusNotFound, &e); err != nil {
		t.Fatal(err)
	}
	var gv console.GroupsView
	if err := consoleJSON(t, h, "/api/v1/groups", http.StatusOK, &gv); err != nil {
		t.Fatal(err)
	}
	if err := consoleJSON(t, h, "/api/v1/groups/no-such-group", http.StatusNotFound, &e); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/ui/topics":          topic,
		"/ui/topics/" + topic: "<h1>Topic " + topic + "</h1>",
		"/ui/topics/" + topic + "/records?limit=5": "<pre class=\"text\">v</pre>",
		"/ui/groups": "Consumer groups",
	} {
		code, ct, page := consoleGet(t, h, path)
		if code != http.StatusOK || !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(page), want) {
			t.Errorf("GET %s: %d %s, want a page with %q: %s", path, code, ct, want, page)
		}
	}

	code, loc = consolePost(t, h, "/ui/topics/"+topic+"/delete", url.Values{"csrf": {tok}, "confirm": {topic}})
	if code != http.StatusSeeOther || loc != "/ui/topics?done=deleted" {
		t.Fatalf("delete from the console: %d to %q", code, loc)
	}
	clustertest.WaitFor(t, 15*time.Second, func() error {
		return consoleJSON(t, h, "/api/v1/topics/"+topic, http.StatusNotFound, &e)
	})
}
