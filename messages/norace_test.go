//go:build !race

package messages

const raceEnabled = false
