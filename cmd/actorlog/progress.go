// progress.go: a progress indicator for long CLI work, shown on stderr only
// when stderr is a terminal (never in pipelines or tests).

package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// counter counts work items; on a terminal it shows a spinner with the count.
type counter struct {
	bar *progressbar.ProgressBar
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newCounter(what string) *counter {
	if !isTerminal(os.Stderr) {
		return &counter{}
	}
	return &counter{bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("records"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (c *counter) add(n int) {
	if c.bar != nil {
		_ = c.bar.Add(n) // a display error must not fail the command
	}
}

func (c *counter) done() {
	if c.bar != nil {
		_ = c.bar.Finish() // a display error must not fail the command
	}
}
