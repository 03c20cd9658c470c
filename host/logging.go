// logging.go: logrus set-up (text or JSON). protoactor's slog output is
// routed into it by client.NewSlogLogger.

package host

import (
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
)

// NewLogger returns a logrus logger writing to stderr in format "text" or
// "json" at level (logrus level names).
func NewLogger(format, level string) (*logrus.Logger, error) {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	switch format {
	case "", "text":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00"})
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, fmt.Errorf("host: unknown log format %q (want text or json)", format)
	}
	if level == "" {
		level = "info"
	}
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("host: log level: %w", err)
	}
	l.SetLevel(lvl)
	return l, nil
}
