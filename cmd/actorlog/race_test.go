//go:build race

package main

// raceEnabled makes the end-to-end tests build the host binary with the
// race detector when the tests themselves run with it.
const raceEnabled = true
