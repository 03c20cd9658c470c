// limits_test.go: table tests of the broker's own guards — partition
// directories confined to the data dir, and the cap on the replicas one
// host runs.

package broker

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

func TestConfinedDir(t *testing.T) {
	tests := []struct {
		dataDir, name string
		want          string // "" when refused
	}{
		{"/data", "events-0", "/data/events-0"},
		{"/data/", "events-0", "/data/events-0"},
		{"./data", "events-12", "data/events-12"},
		{"data", "...-0", "data/...-0"},
		{"/data", "..-0", "/data/..-0"},
		{"/data", "../victim-0", ""},
		{"/data", "..", ""},
		{"/data", ".", ""},
		{"/data", "", ""},
		{"/data", "a/../../victim-0", ""},
		{"/data", "a/b-0", ""},
		{"/data", "/etc/passwd-0", ""},
		{"/data", `a\b-0`, ""},
	}
	for _, tt := range tests {
		got, err := confinedDir(tt.dataDir, tt.name)
		if tt.want == "" {
			if !errors.Is(err, errOutsideDataDir) {
				t.Errorf("confinedDir(%q, %q) = %q, %v; want errOutsideDataDir", tt.dataDir, tt.name, got, err)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("confinedDir(%q, %q) = %q, %v; want %q", tt.dataDir, tt.name, got, err, tt.want)
		}
	}
}

func TestTopicOfDir(t *testing.T) {
	for dir, want := range map[string]string{
		"events-0": "events", "a-b-12": "a-b", "events": "", "events-": "", "events-x": "", "-3": "",
	} {
		if got := topicOfDir(dir); got != want {
			t.Errorf("topicOfDir(%q) = %q, want %q", dir, got, want)
		}
	}
}

func TestAdmitReplicas(t *testing.T) {
	a0, a1, a2, b0 := tp{"a", 0}, tp{"a", 1}, tp{"a", 2}, tp{"b", 0}
	tests := []struct {
		name       string
		candidates []tp
		running    []tp
		capacity   int
		want       []tp
		refused    int
	}{
		{"under the cap", []tp{b0, a1, a0}, nil, 10, []tp{a0, a1, b0}, 0},
		{"at the cap", []tp{b0, a1, a0}, nil, 3, []tp{a0, a1, b0}, 0},
		{"over: topic and partition order", []tp{b0, a2, a1, a0}, nil, 2, []tp{a0, a1}, 2},
		{"running replicas first", []tp{a0, a1, a2, b0}, []tp{b0, a2}, 3, []tp{a2, b0, a0}, 1},
		{"zero capacity", []tp{a0}, nil, 0, []tp{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, refused := admitReplicas(tt.candidates, func(k tp) bool { return slices.Contains(tt.running, k) }, tt.capacity)
			if !slices.Equal(got, tt.want) || refused != tt.refused {
				t.Fatalf("admitReplicas = %v, %d refused; want %v, %d", got, refused, tt.want, tt.refused)
			}
		})
	}
}
