//go:build race

package console

// raceEnabled: the race detector slows the console about tenfold, so
// latency budgets are checked only without it.
const raceEnabled = true
