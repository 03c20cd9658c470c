// Command actorlog is the one binary: it runs a host and talks to a cluster
// (topics, produce, consume, perf, groups). Errors print one line to stderr
// and exit non-zero.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

type globals struct {
	bootstrap string
	logLevel  string
	logFormat string
	remoteTLS remoteTLSFlags // remotetls.go
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "actorlog",
		Short:         "actorlog: a durable, partitioned, replicated event log",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnvAndConfig(cmd)
		},
	}
	root.PersistentFlags().StringVar(&g.bootstrap, "bootstrap", "127.0.0.1:7070", "host addresses to bootstrap from (host:port[,host:port...])")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "", "log level (debug, info, warn, error; default info for host, warn otherwise)")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	g.remoteTLS.register(root.PersistentFlags())
	root.AddCommand(newHostCmd(g), newTopicsCmd(g), newConsumeCmd(g), newProduceCmd(g), newPerfCmd(g), newClusterCmd(g), newGroupsCmd(g), newCertsCmd(g), newUsersCmd(g), newACLsCmd(g))
	return root
}
