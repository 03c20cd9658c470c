// cluster.go: `actorlog cluster describe` — the live hosts and the controller.

package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Inspect the cluster"}
	cmd.AddCommand(&cobra.Command{
		Use: "describe", Short: "List the live hosts and the controller", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				d, err := c.DescribeCluster(ctx)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tID\tADDRESS\tALIVE\tBROKER-EPOCH\tCONTROLLER")
				for _, h := range d.Hosts {
					ctrl := "-"
					if h.HostId == d.ControllerId {
						ctrl = fmt.Sprintf("yes (epoch %d)", d.ControllerEpoch)
					}
					fmt.Fprintf(w, "%s\t%d\t%s\ttrue\t%d\t%s\n", orDash(h.Name), h.HostId, h.AdvertisedAddress, h.BrokerEpoch, ctrl)
				}
				for _, h := range d.DownHosts {
					fmt.Fprintf(w, "%s\t%d\t-\tfalse\t-\t-\n", orDash(h.Name), h.HostId)
				}
				if err := w.Flush(); err != nil {
					return err
				}
				if d.ControllerId < 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "No controller elected.")
				}
				return nil
			})
		},
	})
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
