// users.go: `actorlog users add|remove|list`, the SCRAM users of the Kafka
// listener (--kafka-sasl-mechanisms on the hosts). Two ways to reach them:
//
//   - through a host's Kafka listener (default, --kafka-bootstrap), with
//     kadm's AlterUserSCRAMs / DescribeUserSCRAMs, authenticating with
//     --sasl-user/--sasl-password and TLS (--tls-ca, --tls-cert,
//     --tls-key) as the listener requires; the password is salted here
//     and only the salted password is sent, as Kafka clients do; the
//     listener has the controller write the credential, fenced on its
//     epoch;
//   - straight to the metadata store with --etcd-endpoints, an admin tool
//     like etcdctl that writes unfenced, with no controller involved: the
//     way to add the first user of a cluster whose listener already
//     requires SASL (Kafka's kafka-storage format --add-scram). Whoever
//     can reach etcd can do this; the cluster's etcd must be private to
//     its hosts and administrators.
//
// Hosts cache credentials for a few seconds (cluster.DefaultScramCacheTTL):
// a change is seen by every host within that time.
//
// The connection flags (adminFlags) and withAdminConn are shared with
// `actorlog acls` (acls.go).

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/host"
	"github.com/actorlog/actorlog/kafka"
)

// userCredential is one mechanism of a user, as listed.
type userCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// userRow is one user, as listed (JSON field names are the CLI's
// interface).
type userRow struct {
	Name        string           `json:"name"`
	Credentials []userCredential `json:"credentials"`
}

// userAdmin is where users are managed: a Kafka listener or the store.
type userAdmin interface {
	upsert(ctx context.Context, name string, mech kafka.ScramMechanism, password string, iterations int32) error
	remove(ctx context.Context, name string, mech kafka.ScramMechanism) error
	list(ctx context.Context, names ...string) ([]userRow, error)
}

// adminFlags are the flags of `users` and `acls` that reach the cluster:
// a host's Kafka listener (and how to authenticate to it), or the
// metadata store.
type adminFlags struct {
	bootstrap     string
	etcdEndpoints string
	saslMechanism string
	saslUser      string
	saslPassword  string
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
}

func newUsersCmd(g *globals) *cobra.Command {
	var uf adminFlags
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Add, remove and list the SCRAM users of the Kafka listener",
		Long: `Manage the SCRAM credentials Kafka clients authenticate with (hosts started
with --kafka-sasl-mechanisms). By default through a host's Kafka listener
(--kafka-bootstrap, authenticating with --sasl-user/--sasl-password and TLS
as it requires), which has the controller write the change; with
--etcd-endpoints straight in the metadata store, bypassing the controller as
etcdctl would (an admin tool for when no host runs yet: how the first user
of a cluster requiring SASL is added). Only salted keys are stored, never
the password.`,
	}
	uf.register(cmd.PersistentFlags(), "write straight to the metadata store at these etcd client URLs instead, bypassing the controller like etcdctl (bootstrap of the first user)")

	var mechanism, password string
	var passwordStdin bool
	var iterations int32
	add := &cobra.Command{
		Use:   "add NAME (--password-stdin | --password P)",
		Short: "Add a user, or set a user's password for one mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mech, err := kafka.ParseScramMechanism(mechanism)
			if err != nil {
				return fmt.Errorf("--mechanism: %w", err)
			}
			if err := cluster.ValidateScramUserName(args[0]); err != nil {
				return err
			}
			if iterations < kafka.MinScramIterations || iterations > kafka.MaxScramIterations {
				return fmt.Errorf("--iterations %d: want %d to %d", iterations, kafka.MinScramIterations, kafka.MaxScramIterations)
			}
			pw, err := readPassword(cmd.InOrStdin(), password, passwordStdin, cmd.Flags().Changed("password"))
			if err != nil {
				return err
			}
			return withUserAdmin(g, uf, func(ctx context.Context, a userAdmin) error {
				if err := a.upsert(ctx, args[0], mech, pw, iterations); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s credential set (%d iterations)\n", args[0], mech, iterations)
				return err
			})
		},
	}
	add.Flags().StringVar(&mechanism, "mechanism", kafka.MechanismScramSHA512, "SCRAM mechanism: SCRAM-SHA-512 or SCRAM-SHA-256 (PLAIN clients are checked against SCRAM-SHA-512, else SCRAM-SHA-256)")
	add.Flags().Int32Var(&iterations, "iterations", kafka.DefaultScramIterations, "PBKDF2 iterations (4096 to 16384)")
	add.Flags().StringVar(&password, "password", "", "the password (visible to other local users in the process list: prefer --password-stdin)")
	add.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input")

	var removeMech string
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user (every mechanism, or only --mechanism)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var only kafka.ScramMechanism
			if removeMech != "" {
				m, err := kafka.ParseScramMechanism(removeMech)
				if err != nil {
					return fmt.Errorf("--mechanism: %w", err)
				}
				only = m
			}
			return withUserAdmin(g, uf, func(ctx context.Context, a userAdmin) error {
				rows, err := a.list(ctx, args[0])
				if err != nil {
					return err
				}
				var mechs []kafka.ScramMechanism
				for _, r := range rows {
					for _, c := range r.Credentials {
						m, err := kafka.ParseScramMechanism(c.Mechanism)
						if err == nil && (only == 0 || m == only) {
							mechs = append(mechs, m)
						}
					}
				}
				if len(mechs) == 0 {
					return fmt.Errorf("user %s has no SCRAM credential%s", args[0], mechSuffix(only))
				}
				for _, m := range mechs {
					if err := a.remove(ctx, args[0], m); err != nil {
						return err
					}
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "user %s: %d credential(s) removed\n", args[0], len(mechs))
				return err
			})
		},
	}
	remove.Flags().StringVar(&removeMech, "mechanism", "", "remove only this mechanism's credential")

	var output string
	list := &cobra.Command{
		Use: "list", Short: "List the users and their mechanisms", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return withUserAdmin(g, uf, func(ctx context.Context, a userAdmin) error {
				rows, err := a.list(ctx)
				if err != nil {
					return err
				}
				return writeUsers(cmd.OutOrStdout(), rows, output)
			})
		},
	}
	addOutputFlag(list, &output)

	cmd.AddCommand(add, remove, list)
	return cmd
}

func mechSuffix(m kafka.ScramMechanism) string {
	if m == 0 {
		return ""
	}
	return " for " + m.String()
}

// readPassword returns the password of --password or --password-stdin
// (exactly one of them).
func readPassword(in io.Reader, flag string, fromStdin, flagSet bool) (string, error) {
	switch {
	case fromStdin && flagSet:
		return "", errors.New("--password and --password-stdin exclude each other")
	case fromStdin:
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			return "", fmt.Errorf("--password-stdin: read a line: %w", err)
		}
		pw := strings.TrimRight(line, "\r\n")
		if pw == "" {
			return "", errors.New("--password-stdin: empty password")
		}
		return pw, nil
	case flagSet:
		if flag == "" {
			return "", errors.New("--password: empty password")
		}
		return flag, nil
	}
	return "", errors.New("give the password with --password-stdin (or --password)")
}

// writeUsers prints rows as a table or JSON.
func writeUsers(out io.Writer, rows []userRow, format string) error {
	if format == outputJSON {
		for i := range rows {
			rows[i].Credentials = orEmpty(rows[i].Credentials)
		}
		return writeJSON(out, orEmpty(rows))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
	for _, r := range rows {
		for _, c := range r.Credentials {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Name, c.Mechanism, c.Iterations)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// register adds the flags to pf; etcdUsage says what --etcd-endpoints
// does for the command.
func (f *adminFlags) register(pf *pflag.FlagSet, etcdUsage string) {
	pf.StringVar(&f.bootstrap, "kafka-bootstrap", host.DefaultKafkaListen, "Kafka listener of a host")
	pf.StringVar(&f.etcdEndpoints, "etcd-endpoints", "", etcdUsage)
	pf.StringVar(&f.saslMechanism, "sasl-mechanism", kafka.MechanismScramSHA512, "SASL mechanism to authenticate to the listener with, when --sasl-user is set: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN")
	pf.StringVar(&f.saslUser, "sasl-user", "", "user to authenticate to the listener as (none: no SASL)")
	pf.StringVar(&f.saslPassword, "sasl-password", "", "password of --sasl-user (also ACTORLOG_SASL_PASSWORD)")
	pf.StringVar(&f.tlsCA, "tls-ca", "", "PEM CA certificates to verify the listener with (set: connect with TLS), or the members of https --etcd-endpoints")
	pf.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate, for a listener that requires one (or for https --etcd-endpoints: any certificate of the cluster's CA)")
	pf.StringVar(&f.tlsKey, "tls-key", "", "PEM key of --tls-cert")
	pf.StringVar(&f.tlsServerName, "tls-server-name", "", "name to verify the listener's certificate against (default: the host of --kafka-bootstrap)")
}

// adminConn is a connection adminFlags asked for: either store
// (--etcd-endpoints) or a Kafka listener's client cl and its adm.
type adminConn struct {
	store *cluster.Store
	cl    *kgo.Client
	adm   *kadm.Client
}

// withAdminConn connects as f says and runs fn with a 30 s deadline.
func withAdminConn(g *globals, f adminFlags, fn func(ctx context.Context, c adminConn) error) error {
	logger, err := g.logger("warn")
	if err != nil {
		return err
	}
	log := logrus.NewEntry(logger)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if f.etcdEndpoints != "" {
		eps, err := cluster.ParseEndpoints(f.etcdEndpoints)
		if err != nil {
			return fmt.Errorf("--etcd-endpoints: %w", err)
		}
		tlsCfg, err := f.etcdTLS(eps) // etcdtls.go
		if err != nil {
			return err
		}
		client, err := cluster.ConnectEtcdTLS(ctx, eps, tlsCfg, 10*time.Second, log)
		if err != nil {
			return err
		}
		defer func() {
			if err := client.Close(); err != nil {
				log.WithError(err).Debug("closing the etcd client")
			}
		}()
		return fn(ctx, adminConn{store: cluster.NewStore(client, "", log)})
	}
	opts, err := kafkaClientOpts(f)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	return fn(ctx, adminConn{cl: cl, adm: kadm.NewClient(cl)})
}

// withUserAdmin connects as uf says and runs fn with a 30 s deadline.
func withUserAdmin(g *globals, uf adminFlags, fn func(ctx context.Context, a userAdmin) error) error {
	return withAdminConn(g, uf, func(ctx context.Context, c adminConn) error {
		if c.store != nil {
			return fn(ctx, &storeUserAdmin{store: c.store})
		}
		return fn(ctx, &kafkaUserAdmin{adm: c.adm})
	})
}

// storeUserAdmin manages users in the metadata store.
type storeUserAdmin struct {
	store *cluster.Store
}

func (s *storeUserAdmin) upsert(ctx context.Context, name string, mech kafka.ScramMechanism, password string, iterations int32) error {
	c, err := kafka.NewScramCredential(mech, password, iterations)
	if err != nil {
		return err
	}
	return s.store.PutScramCredential(ctx, name, mech.String(), cluster.ScramCredential{
		Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey,
	})
}

func (s *storeUserAdmin) remove(ctx context.Context, name string, mech kafka.ScramMechanism) error {
	return s.store.DeleteScramCredential(ctx, name, mech.String())
}

func (s *storeUserAdmin) list(ctx context.Context, names ...string) ([]userRow, error) {
	var users []cluster.ScramUser
	if len(names) == 0 {
		all, err := s.store.ListScramUsers(ctx)
		if err != nil {
			return nil, err
		}
		users = all
	}
	for _, n := range names {
		u, ok, err := s.store.GetScramUser(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok {
			users = append(users, u)
		}
	}
	rows := make([]userRow, 0, len(users))
	for _, u := range users {
		r := userRow{Name: u.Name}
		for _, m := range u.Mechanisms() {
			r.Credentials = append(r.Credentials, userCredential{Mechanism: m, Iterations: u.Credentials[m].Iterations})
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// kafkaUserAdmin manages users through a Kafka listener.
type kafkaUserAdmin struct {
	adm *kadm.Client
}

// kafkaClientOpts are the kgo options uf asks for: bootstrap, TLS, SASL.
func kafkaClientOpts(uf adminFlags) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(uf.bootstrap, ",")...), kgo.RequestRetries(2)}
	if uf.tlsCA != "" {
		pem, err := os.ReadFile(uf.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate", uf.tlsCA)
		}
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: uf.tlsServerName}
		if (uf.tlsCert == "") != (uf.tlsKey == "") {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		if uf.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(uf.tlsCert, uf.tlsKey)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	} else if uf.tlsCert != "" || uf.tlsKey != "" {
		return nil, errors.New("--tls-cert needs --tls-ca (the listener's CA)")
	}
	if uf.saslUser != "" {
		switch strings.ToUpper(uf.saslMechanism) {
		case kafka.MechanismScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: uf.saslUser, Pass: uf.saslPassword}.AsSha512Mechanism()))
		case kafka.MechanismScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: uf.saslUser, Pass: uf.saslPassword}.AsSha256Mechanism()))
		case kafka.MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: uf.saslUser, Pass: uf.saslPassword}.AsMechanism()))
		default:
			return nil, fmt.Errorf("--sasl-mechanism %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", uf.saslMechanism)
		}
	}
	return opts, nil
}

func kadmMech(m kafka.ScramMechanism) kadm.ScramMechanism {
	if m == kafka.ScramSHA256 {
		return kadm.ScramSha256
	}
	return kadm.ScramSha512
}

func (k *kafkaUserAdmin) upsert(ctx context.Context, name string, mech kafka.ScramMechanism, password string, iterations int32) error {
	res, err := k.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: name, Mechanism: kadmMech(mech), Iterations: iterations, Password: password}})
	if err != nil {
		return fmt.Errorf("alter user %s: %w", name, err)
	}
	if r, ok := res[name]; ok && r.Err != nil {
		return fmt.Errorf("alter user %s: %w", name, r.Err)
	}
	return nil
}

func (k *kafkaUserAdmin) remove(ctx context.Context, name string, mech kafka.ScramMechanism) error {
	res, err := k.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: name, Mechanism: kadmMech(mech)}}, nil)
	if err != nil {
		return fmt.Errorf("remove user %s: %w", name, err)
	}
	if r, ok := res[name]; ok && r.Err != nil {
		return fmt.Errorf("remove user %s: %w", name, r.Err)
	}
	return nil
}

func (k *kafkaUserAdmin) list(ctx context.Context, names ...string) ([]userRow, error) {
	res, err := k.adm.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe users: %w", err)
	}
	rows := make([]userRow, 0, len(res))
	for _, d := range res.Sorted() {
		if d.Err != nil {
			if len(names) > 0 && errors.Is(d.Err, kerr.ResourceNotFound) {
				continue
			}
			return nil, fmt.Errorf("describe user %s: %w", d.User, d.Err)
		}
		r := userRow{Name: d.User}
		for _, c := range d.CredInfos {
			m := kafka.ScramSHA512
			if c.Mechanism == kadm.ScramSha256 {
				m = kafka.ScramSHA256
			}
			r.Credentials = append(r.Credentials, userCredential{Mechanism: m.String(), Iterations: c.Iterations})
		}
		rows = append(rows, r)
	}
	return rows, nil
}
