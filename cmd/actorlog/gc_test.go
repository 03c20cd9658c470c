package main

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestSetGCPercent: --gc-percent sets the collector's target unless GOGC
// is in the environment, and refuses targets that would (nearly) stop the
// process doing anything else or turn the collector off.
func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Setenv("GOGC", v) // restored after the test
	}
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	if err := setGCPercent(300, logger); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 300 {
		t.Fatalf("GOGC after --gc-percent 300: %d", got)
	}
	for _, bad := range []int{-1, 0, 10} {
		if err := setGCPercent(bad, logger); err == nil {
			t.Errorf("--gc-percent %d accepted", bad)
		}
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("a refused --gc-percent changed GOGC to %d", got)
	}
	t.Setenv("GOGC", "150")
	if err := setGCPercent(300, logger); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("--gc-percent applied over GOGC in the environment: %d", got)
	}
}
