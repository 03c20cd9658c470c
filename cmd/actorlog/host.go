// host.go: `actorlog host` — run one host until SIGINT/SIGTERM.

package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/host"
)

func newHostCmd(g *globals) *cobra.Command {
	var cfg host.Config
	var hostID int
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run an actorlog host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := g.logLevel
			if level == "" {
				level = "info"
			}
			logger, err := host.NewLogger(g.logFormat, level)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			cfg.HostID = int32(hostID)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			startCtx, cancel := context.WithTimeout(ctx, time.Minute)
			h, err := host.Start(startCtx, cfg)
			cancel()
			if err != nil {
				return err
			}
			<-ctx.Done()
			stop()
			logger.Info("shutting down")
			shutCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := h.Shutdown(shutCtx); err != nil {
				return fmt.Errorf("shutdown: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "./data", "directory for partition logs and metadata")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "address clients and other hosts connect to")
	f.StringVar(&cfg.HTTP, "http", "127.0.0.1:7080", "address of /healthz and /metrics (\"off\" to disable)")
	f.StringVar(&cfg.Advertise, "advertise", "", "address others use to reach --listen (default --listen)")
	f.IntVar(&hostID, "host-id", 1, "this host's id in the cluster (>= 1)")
	f.StringVar(&cfg.EtcdPeer, "etcd-peer", "", "embedded etcd peer URL (default http://<listen host>:<listen port+1>)")
	f.StringVar(&cfg.EtcdClient, "etcd-client", "", "embedded etcd client URL (default http://<listen host>:<listen port+2>)")
	f.StringVar(&cfg.EtcdInitialCluster, "etcd-initial-cluster", "", "embedded etcd initial cluster (name=peerURL,...; default this host alone)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 10*time.Second, "host liveness lease TTL")
	return cmd
}
