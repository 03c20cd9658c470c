// groups_test.go: how `groups reset-offsets` reads its --to-* flags, and
// how `groups describe` renders unknown offsets.

package main

import (
	"strings"
	"testing"
)

func TestResetTargetFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // the target, or the error's text
	}{
		{[]string{"--to-earliest"}, "earliest"},
		{[]string{"--to-latest"}, "latest"},
		{[]string{"--to-offset", "0"}, "offset 0"},
		{[]string{"--to-offset", "17"}, "offset 17"},
		{[]string{"--to-datetime", "2026-01-02T15:04:05Z"}, "datetime 2026-01-02T15:04:05Z"},
		{[]string{"--to-datetime", "2026-01-02T16:04:05.5+01:00"}, "datetime 2026-01-02T15:04:05.5Z"},
		{[]string{"--to-offset", "-1"}, "must not be negative"},
		{[]string{"--to-datetime", "2026-01-02"}, "RFC 3339"},
		{nil, "one of --to-earliest"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := newGroupsCmd(&globals{})
			reset, _, err := cmd.Find([]string{"reset-offsets"})
			if err != nil {
				t.Fatal(err)
			}
			if err := reset.ParseFlags(tt.args); err != nil {
				t.Fatalf("parse %v: %v", tt.args, err)
			}
			f := reset.Flags()
			earliest, _ := f.GetBool("to-earliest")
			latest, _ := f.GetBool("to-latest")
			offset, _ := f.GetInt64("to-offset")
			datetime, _ := f.GetString("to-datetime")
			target, err := resetTarget(reset, earliest, latest, offset, datetime)
			got := target.String()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("resetTarget(%v) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestOffsetText(t *testing.T) {
	for n, want := range map[int64]string{-1: "-", 0: "0", 42: "42"} {
		if got := offsetPtrText(knownOffset(n)); got != want {
			t.Errorf("offsetPtrText(knownOffset(%d)) = %q, want %q", n, got, want)
		}
	}
}
