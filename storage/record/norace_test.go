//go:build !race

// This file tells tests that the race detector is off (see race_test.go).

package record

const raceEnabled = false
