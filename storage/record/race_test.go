//go:build race

// This file tells tests that the race detector is on: it makes sync.Pool
// drop items at random, so pooled codec state shows up as allocations.

package record

const raceEnabled = true
