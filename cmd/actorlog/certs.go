// certs.go: `actorlog certs init` generates a development PKI for mutual
// TLS: a CA (DIR/ca.crt, DIR/ca.key), one certificate per host (usable as
// server and client, Subject OU actorlog-host) and one per client user. An
// existing CA in DIR is reused, so rerunning with more names adds them;
// existing certificates are kept unless --force (or --new-ca) re-issues them.

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/actorlog/actorlog/internal/certs"
)

func newCertsCmd(_ *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "certs", Short: "Generate TLS certificates for hosts and clients"}

	var o certs.InitOptions
	var days, caDays int
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create a CA and host/client certificates in a directory",
		Long: "Create (or reuse) DIR/ca.crt and DIR/ca.key, and write DIR/<name>.crt and DIR/<name>.key\n" +
			"for every host and client. Host certificates name the host (CN, OU actorlog-host) and\n" +
			"carry the SANs <name>, localhost, 127.0.0.1, ::1 and --san. Keys are written mode 0600.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Dir == "" {
				return fmt.Errorf("--dir is required")
			}
			if days <= 0 {
				return fmt.Errorf("--days must be positive, got %d", days)
			}
			if caDays <= 0 {
				return fmt.Errorf("--ca-days must be positive, got %d", caDays)
			}
			o.Validity = time.Duration(days) * 24 * time.Hour
			o.CAValidity = time.Duration(caDays) * 24 * time.Hour
			o.Hosts, o.Clients, o.SANs = trimAll(o.Hosts), trimAll(o.Clients), trimAll(o.SANs)
			if len(o.Hosts)+len(o.Clients) == 0 {
				return fmt.Errorf("nothing to create: give --hosts and/or --clients")
			}
			res, err := certs.Init(o)
			if res != nil {
				printCertsResult(cmd.OutOrStdout(), res)
			}
			return err // already says "certs: ..."
		},
	}
	f := initCmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "directory for the CA, certificates and keys (required; created if missing)")
	f.StringSliceVar(&o.Hosts, "hosts", nil, "host names to issue host certificates for (comma-separated)")
	f.StringSliceVar(&o.Clients, "clients", nil, "client (user) names to issue client certificates for (comma-separated)")
	f.StringSliceVar(&o.SANs, "san", nil, "extra DNS names or IP addresses for every host certificate")
	f.IntVar(&days, "days", 365, "validity of host and client certificates, in days")
	f.IntVar(&caDays, "ca-days", 3650, "validity of a new CA, in days")
	f.BoolVar(&o.NewCA, "new-ca", false, "replace an existing CA in --dir (re-issues every named certificate)")
	f.BoolVar(&o.Force, "force", false, "re-issue host and client certificates that already exist")
	cmd.AddCommand(initCmd)
	return cmd
}

// trimAll drops surrounding spaces ("--hosts 'h1, h2'"); empty entries stay
// so that validation reports them.
func trimAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimSpace(n)
	}
	return out
}

// printCertsResult says what was written or kept and the host flags to use.
func printCertsResult(w io.Writer, res *certs.InitResult) {
	ca := res.CA
	if ca.Cert != nil {
		fmt.Fprintf(w, "CA %q %s: %s, %s (expires %s)\n", ca.Name, ca.Status, ca.CertPath, ca.KeyPath, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	for _, e := range res.Entries {
		detail := ""
		if e.Kind == "host" {
			var sans []string
			sans = append(sans, e.Cert.DNSNames...)
			for _, ip := range e.Cert.IPAddresses {
				sans = append(sans, ip.String())
			}
			detail = ", SANs " + strings.Join(sans, ",")
		}
		fmt.Fprintf(w, "%s %s %s: %s, %s (expires %s%s)\n", e.Kind, e.Name, e.Status, e.CertPath, e.KeyPath, e.Cert.NotAfter.UTC().Format(time.DateOnly), detail)
	}
	if ca.Status == certs.StatusReissued {
		fmt.Fprintln(w, "The CA was replaced: certificates not named in this run no longer verify; re-issue them.")
	}
	first := true
	for _, e := range res.Entries {
		if e.Kind != "host" {
			continue
		}
		if first {
			fmt.Fprintln(w, "Host flags:")
			first = false
		}
		fmt.Fprintf(w, "  %s: --tls-cert %s --tls-key %s --tls-ca %s\n", e.Name, e.CertPath, e.KeyPath, ca.CertPath)
	}
}
