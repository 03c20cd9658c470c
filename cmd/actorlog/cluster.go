// cluster.go: `actorlog cluster describe` — the live hosts and the controller,
// as a table or (--output json) a clusterDescription.

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/actors/client"
	"github.com/actorlog/actorlog/messages"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Inspect the cluster"}
	var output string
	describe := &cobra.Command{
		Use: "describe", Short: "List the live hosts and the controller", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return withClient(g, func(ctx context.Context, c *client.Client) error {
				d, err := c.DescribeCluster(ctx)
				if err != nil {
					return err
				}
				cd := newClusterDescription(d)
				if output == outputJSON {
					return writeJSON(cmd.OutOrStdout(), cd)
				}
				return writeClusterTable(cmd.OutOrStdout(), cd)
			})
		},
	}
	addOutputFlag(describe, &output)
	cmd.AddCommand(describe)
	return cmd
}

// newClusterDescription is d as `cluster describe` shows it: the live hosts,
// then the known hosts that are down.
func newClusterDescription(d *messages.DescribeClusterResponse) clusterDescription {
	cd := clusterDescription{ControllerID: d.ControllerId, ControllerEpoch: d.ControllerEpoch, Hosts: []hostDescription{}}
	for _, h := range d.Hosts {
		epoch := h.BrokerEpoch
		cd.Hosts = append(cd.Hosts, hostDescription{
			Name: h.Name, ID: h.HostId, Address: h.AdvertisedAddress, Alive: true,
			BrokerEpoch: &epoch, Controller: h.HostId == d.ControllerId,
		})
	}
	for _, h := range d.DownHosts {
		cd.Hosts = append(cd.Hosts, hostDescription{Name: h.Name, ID: h.HostId})
	}
	return cd
}

// writeClusterTable prints cd as a table, and a line when no controller is
// elected.
func writeClusterTable(out io.Writer, cd clusterDescription) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tID\tADDRESS\tALIVE\tBROKER-EPOCH\tCONTROLLER")
	for _, h := range cd.Hosts {
		if !h.Alive {
			fmt.Fprintf(w, "%s\t%d\t-\tfalse\t-\t-\n", orDash(h.Name), h.ID)
			continue
		}
		ctrl := "-"
		if h.Controller {
			ctrl = fmt.Sprintf("yes (epoch %d)", cd.ControllerEpoch)
		}
		epoch := "-"
		if h.BrokerEpoch != nil {
			epoch = fmt.Sprint(*h.BrokerEpoch)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\ttrue\t%s\t%s\n", orDash(h.Name), h.ID, h.Address, epoch, ctrl)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if cd.ControllerID < 0 {
		fmt.Fprintln(out, "No controller elected.")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
