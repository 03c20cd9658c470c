//go:build race

package messages

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// pooled code allocates under it.
const raceEnabled = true
