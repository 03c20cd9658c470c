// acls.go: `actorlog acls add|remove|list`, the ACL bindings the Kafka
// listener authorizes with, with the flags of Kafka's kafka-acls.sh:
//
//	actorlog acls add --allow-principal User:alice --operation read --operation describe --topic orders
//	actorlog acls add --deny-principal User:bob --deny-host 10.0.0.7 --operation write --topic logs- --resource-pattern-type prefixed
//	actorlog acls remove --topic orders --allow-principal User:alice
//	actorlog acls list [--topic orders] [--principal User:alice] [-o json]
//
// add creates the product of its principals (with their hosts, "*" by
// default), operations and resources. remove and list take the same flags
// as a filter: an unset flag matches anything (any principal, host,
// operation), so remove deletes, without asking, every binding that
// matches and prints what it deleted. remove needs a resource; list
// without one lists every binding.
//
// The cluster is reached as by `actorlog users` (adminFlags): through a
// host's Kafka listener (CreateAcls, DescribeAcls, DeleteAcls; the
// listener serves them when it enforces ACLs and has the controller write
// them, fenced on its epoch), or straight in the metadata store with
// --etcd-endpoints, an admin tool like etcdctl that writes unfenced, with
// no controller involved: how the first ACLs of a cluster are added.
// Hosts apply a change within one etcd watch delivery.

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
)

// aclFlags are the flags naming bindings (add) or filtering them (remove,
// list).
type aclFlags struct {
	allowPrincipals []string
	denyPrincipals  []string
	allowHosts      []string
	denyHosts       []string
	principals      []string // list's --principal
	operations      []string
	topics          []string
	groups          []string
	txnIDs          []string
	cluster         bool
	pattern         string
}

// registerResources adds the resource, pattern and operation flags;
// defaultPattern is --resource-pattern-type's default.
func (f *aclFlags) registerResources(fs *pflag.FlagSet, defaultPattern, patterns string) {
	fs.StringArrayVar(&f.topics, "topic", nil, "topic name (or prefix, or * for every topic); repeatable")
	fs.StringArrayVar(&f.groups, "group", nil, "consumer group id (or prefix, or *); repeatable")
	fs.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id (or prefix, or *); repeatable")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.StringVar(&f.pattern, "resource-pattern-type", defaultPattern, "how the resource names match: "+patterns)
}

// registerPrincipals adds kafka-acls.sh's principal and host flags.
func (f *aclFlags) registerPrincipals(fs *pflag.FlagSet, hostDefault string) {
	fs.StringArrayVar(&f.allowPrincipals, "allow-principal", nil, "principal allowed, User:NAME (User:* for everyone) or Host:NAME; repeatable")
	fs.StringArrayVar(&f.denyPrincipals, "deny-principal", nil, "principal denied, as --allow-principal; repeatable")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "client IP address the --allow-principal bindings apply to ("+hostDefault+"); repeatable")
	fs.StringArrayVar(&f.denyHosts, "deny-host", nil, "client IP address the --deny-principal bindings apply to ("+hostDefault+"); repeatable")
}

// registerOperations adds --operation.
func (f *aclFlags) registerOperations(fs *pflag.FlagSet, usage string) {
	fs.StringArrayVar(&f.operations, "operation", nil, usage+": all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write; repeatable")
}

// registerAdd adds the flags of `acls add`.
func (f *aclFlags) registerAdd(fs *pflag.FlagSet) {
	f.registerPrincipals(fs, "default *, every host")
	f.registerOperations(fs, "operation to allow or deny")
	f.registerResources(fs, "literal", "literal (the name, or * for all) or prefixed")
}

// registerRemove adds the flags of `acls remove`.
func (f *aclFlags) registerRemove(fs *pflag.FlagSet) {
	f.registerPrincipals(fs, "default: any host")
	f.registerOperations(fs, "operation to match (default: any)")
	f.registerResources(fs, "literal", "literal, prefixed, any (either, with the name given) or match (every binding that applies to the name)")
}

// registerList adds the flags of `acls list`.
func (f *aclFlags) registerList(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.principals, "principal", nil, "only this principal's bindings (User:NAME); repeatable")
	f.registerOperations(fs, "only bindings of this operation")
	f.registerResources(fs, "any", "any (literal or prefixed, with the name given), literal, prefixed or match (every binding that applies to the name)")
}

// aclResource is one resource flag.
type aclResource struct {
	typ  acl.ResourceType
	name string
}

func (f *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, r := range []struct {
		typ   acl.ResourceType
		names []string
	}{{acl.ResourceTopic, f.topics}, {acl.ResourceGroup, f.groups}, {acl.ResourceTransactionalID, f.txnIDs}} {
		for _, n := range r.names {
			out = append(out, aclResource{r.typ, n})
		}
	}
	if f.cluster {
		out = append(out, aclResource{acl.ResourceCluster, acl.ClusterName})
	}
	return out
}

func (f *aclFlags) parseOperations() ([]acl.Operation, error) {
	ops := make([]acl.Operation, 0, len(f.operations))
	for _, s := range f.operations {
		op, err := acl.ParseOperation(s)
		if err != nil {
			return nil, fmt.Errorf("--operation %q: unknown operation (want all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs or idempotent-write)", s)
		}
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops, nil
}

func parsePattern(s string, allowed ...acl.PatternType) (acl.PatternType, error) {
	p, err := acl.ParsePatternType(s)
	if err != nil || !slices.Contains(allowed, p) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = strings.ToLower(a.String())
		}
		return 0, fmt.Errorf("--resource-pattern-type %q: want %s", s, strings.Join(names, ", "))
	}
	return p, nil
}

func checkPrincipals(flag string, ps []string) error {
	for _, p := range ps {
		if err := acl.ValidatePrincipal(p); err != nil {
			return fmt.Errorf("--%s: %w", flag, err)
		}
	}
	return nil
}

// aclGrant is a principal with its permission and hosts.
type aclGrant struct {
	principal string
	perm      acl.Permission
	hosts     []string // nil: any host (filters only)
}

// grants pairs the allow and deny principals with their hosts (def when
// none are given). Hosts without principals are refused.
func (f *aclFlags) grants(def []string) ([]aclGrant, error) {
	if len(f.allowHosts) > 0 && len(f.allowPrincipals) == 0 {
		return nil, errors.New("--allow-host needs --allow-principal")
	}
	if len(f.denyHosts) > 0 && len(f.denyPrincipals) == 0 {
		return nil, errors.New("--deny-host needs --deny-principal")
	}
	if err := checkPrincipals("allow-principal", f.allowPrincipals); err != nil {
		return nil, err
	}
	if err := checkPrincipals("deny-principal", f.denyPrincipals); err != nil {
		return nil, err
	}
	var out []aclGrant
	for _, side := range []struct {
		principals, hosts []string
		perm              acl.Permission
	}{{f.allowPrincipals, f.allowHosts, acl.Allow}, {f.denyPrincipals, f.denyHosts, acl.Deny}} {
		hosts := side.hosts
		if len(hosts) == 0 {
			hosts = def
		}
		for _, p := range side.principals {
			out = append(out, aclGrant{principal: p, perm: side.perm, hosts: hosts})
		}
	}
	return out, nil
}

// bindings are the bindings `acls add` creates: every principal (with
// its hosts, "*" by default) times every operation times every resource.
func (f *aclFlags) bindings() ([]acl.Binding, error) {
	pattern, err := parsePattern(f.pattern, acl.PatternLiteral, acl.PatternPrefixed)
	if err != nil {
		return nil, err
	}
	grants, err := f.grants([]string{acl.WildcardHost})
	if err != nil {
		return nil, err
	}
	if len(grants) == 0 {
		return nil, errors.New("give a principal: --allow-principal or --deny-principal (User:NAME)")
	}
	ops, err := f.parseOperations()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, errors.New("give an --operation (e.g. --operation read; --operation all for every operation)")
	}
	res := f.resources()
	if len(res) == 0 {
		return nil, errors.New("give a resource: --topic, --group, --transactional-id or --cluster")
	}
	var out []acl.Binding
	for _, r := range res {
		for _, g := range grants {
			for _, h := range g.hosts {
				for _, op := range ops {
					b := acl.Binding{Principal: g.principal, Host: h, Resource: r.typ, Name: r.name,
						Pattern: pattern, Operation: op, Permission: g.perm}
					if err := b.Validate(); err != nil {
						return nil, err
					}
					if !slices.Contains(out, b) {
						out = append(out, b)
					}
				}
			}
		}
	}
	return out, nil
}

// filterPatterns are the pattern types a filter may have.
var filterPatterns = []acl.PatternType{acl.PatternLiteral, acl.PatternPrefixed, acl.PatternAny, acl.PatternMatch}

// removeFilters are the filters of `acls remove`: for every resource,
// principal (with its hosts; any host when none is given; any principal
// when none is given) and operation (any when none is given).
func (f *aclFlags) removeFilters() ([]acl.Filter, error) {
	pattern, err := parsePattern(f.pattern, filterPatterns...)
	if err != nil {
		return nil, err
	}
	grants, err := f.grants([]string{""})
	if err != nil {
		return nil, err
	}
	ops, err := f.parseOperations()
	if err != nil {
		return nil, err
	}
	res := f.resources()
	if len(res) == 0 {
		return nil, errors.New("give a resource: --topic, --group, --transactional-id or --cluster")
	}
	if len(grants) == 0 {
		grants = []aclGrant{{perm: acl.PermissionAny, hosts: []string{""}}}
	}
	if len(ops) == 0 {
		ops = []acl.Operation{acl.OpAny}
	}
	var out []acl.Filter
	for _, r := range res {
		for _, g := range grants {
			for _, h := range g.hosts {
				for _, op := range ops {
					fl := acl.Filter{Resource: r.typ, Name: &r.name, Pattern: pattern, Operation: op, Permission: g.perm}
					if g.principal != "" {
						fl.Principal = &g.principal
					}
					if h != "" {
						fl.Host = &h
					}
					out = append(out, fl)
				}
			}
		}
	}
	return out, nil
}

// listFilters are the filters of `acls list`: every resource (all
// bindings when none is given) times every --principal and --operation
// (any when none is given).
func (f *aclFlags) listFilters() ([]acl.Filter, error) {
	pattern, err := parsePattern(f.pattern, filterPatterns...)
	if err != nil {
		return nil, err
	}
	if err := checkPrincipals("principal", f.principals); err != nil {
		return nil, err
	}
	ops, err := f.parseOperations()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		ops = []acl.Operation{acl.OpAny}
	}
	res := f.resources()
	if len(res) == 0 {
		res = []aclResource{{typ: acl.ResourceAny}}
	}
	principals := []*string{nil}
	if len(f.principals) > 0 {
		principals = principals[:0]
		for i := range f.principals {
			principals = append(principals, &f.principals[i])
		}
	}
	var out []acl.Filter
	for _, r := range res {
		for _, p := range principals {
			for _, op := range ops {
				fl := acl.Filter{Resource: r.typ, Pattern: pattern, Principal: p, Operation: op, Permission: acl.PermissionAny}
				if r.typ != acl.ResourceAny {
					fl.Name = &r.name
				}
				out = append(out, fl)
			}
		}
	}
	return out, nil
}

func newACLsCmd(g *globals) *cobra.Command {
	var af adminFlags
	cmd := &cobra.Command{
		Use:   "acls",
		Short: "Add, remove and list the ACLs of the Kafka listener",
		Long: `Manage the ACL bindings the Kafka listener authorizes requests with (Kafka's
model: a principal is allowed or denied an operation on the topics, groups,
transactional ids or cluster a resource pattern names, from a host). By
default through a host's Kafka listener (--kafka-bootstrap, authenticating
with --sasl-user/--sasl-password and TLS as it requires), which has the
controller write the change; with --etcd-endpoints straight in the metadata
store, bypassing the controller as etcdctl would (an admin tool for when no
host runs yet: how the first ACLs of a cluster are added). A listener
serves the ACL APIs only when it enforces
ACLs (the host's --authorizer), and only to a principal allowed ALTER
(add, remove) or DESCRIBE (list) on the cluster, or a super user.`,
	}
	af.register(cmd.PersistentFlags(), "write straight to the metadata store at these etcd client URLs instead, bypassing the controller like etcdctl (bootstrap of the first ACLs)")

	var addFlags aclFlags
	add := &cobra.Command{
		Use:   "add (--allow-principal P | --deny-principal P)... --operation OP... (--topic T | --group G | --transactional-id X | --cluster)...",
		Short: "Add ACL bindings: every principal times every operation times every resource",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bindings, err := addFlags.bindings()
			if err != nil {
				return err
			}
			return withACLAdmin(g, af, func(ctx context.Context, a aclAdmin) error {
				if err := a.create(ctx, bindings); err != nil {
					return err
				}
				return writeACLs(cmd.OutOrStdout(), fmt.Sprintf("%d ACL binding(s) added:", len(bindings)), bindings, outputTable)
			})
		},
	}
	addFlags.registerAdd(add.Flags())

	var removeFlags aclFlags
	remove := &cobra.Command{
		Use:   "remove (--topic T | --group G | --transactional-id X | --cluster)... [--allow-principal P | --deny-principal P]... [--operation OP]...",
		Short: "Remove the ACL bindings that match (unset flags match anything) and print them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filters, err := removeFlags.removeFilters()
			if err != nil {
				return err
			}
			return withACLAdmin(g, af, func(ctx context.Context, a aclAdmin) error {
				removed, err := a.remove(ctx, filters)
				if err != nil {
					return err
				}
				if len(removed) == 0 {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "no ACL binding matched")
					return err
				}
				return writeACLs(cmd.OutOrStdout(), fmt.Sprintf("%d ACL binding(s) removed:", len(removed)), removed, outputTable)
			})
		},
	}
	removeFlags.registerRemove(remove.Flags())

	var listFlags aclFlags
	var output string
	list := &cobra.Command{
		Use:   "list [--topic T | --group G | --transactional-id X | --cluster]... [--principal P]... [--operation OP]...",
		Short: "List the ACL bindings (all, or those matching the flags)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			filters, err := listFlags.listFilters()
			if err != nil {
				return err
			}
			return withACLAdmin(g, af, func(ctx context.Context, a aclAdmin) error {
				bindings, err := a.list(ctx, filters)
				if err != nil {
					return err
				}
				return writeACLs(cmd.OutOrStdout(), "", bindings, output)
			})
		},
	}
	listFlags.registerList(list.Flags())
	addOutputFlag(list, &output)

	cmd.AddCommand(add, remove, list)
	return cmd
}

// compareBindings orders bindings by resource, then principal, host,
// operation and permission.
func compareBindings(a, b acl.Binding) int {
	return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Pattern, b.Pattern),
		cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// sortedBindings returns bs sorted, without duplicates.
func sortedBindings(bs []acl.Binding) []acl.Binding {
	out := slices.Clone(bs)
	slices.SortFunc(out, compareBindings)
	return slices.Compact(out)
}

// writeACLs prints bindings (sorted) as a table under title, or as JSON.
func writeACLs(out io.Writer, title string, bindings []acl.Binding, format string) error {
	bindings = sortedBindings(bindings)
	if format == outputJSON {
		return writeJSON(out, orEmpty(bindings))
	}
	if title != "" {
		if _, err := fmt.Fprintln(out, title); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tHOST\tPERMISSION\tOPERATION\tRESOURCE_TYPE\tNAME\tPATTERN")
	for _, b := range bindings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Principal, b.Host, b.Permission, b.Operation, b.Resource, b.Name, b.Pattern)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// aclAdmin is where ACLs are managed: a Kafka listener or the store.
type aclAdmin interface {
	create(ctx context.Context, bindings []acl.Binding) error
	// remove deletes what the filters match, in order, and returns what
	// it deleted.
	remove(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error)
	// list returns what any of the filters matches.
	list(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error)
}

// withACLAdmin connects as af says and runs fn with a 30 s deadline.
func withACLAdmin(g *globals, af adminFlags, fn func(ctx context.Context, a aclAdmin) error) error {
	return withAdminConn(g, af, func(ctx context.Context, c adminConn) error {
		if c.store != nil {
			return fn(ctx, storeACLAdmin{c.store})
		}
		return fn(ctx, kafkaACLAdmin{c.cl})
	})
}

// storeACLAdmin manages ACLs in the metadata store.
type storeACLAdmin struct{ store cluster.ACLStore }

func (s storeACLAdmin) create(ctx context.Context, bindings []acl.Binding) error {
	if err := s.store.AddACLs(ctx, bindings); err != nil {
		return fmt.Errorf("add ACLs: %w", err)
	}
	return nil
}

func (s storeACLAdmin) remove(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error) {
	var out []acl.Binding
	for _, f := range filters {
		deleted, err := s.store.DeleteACLs(ctx, f)
		out = append(out, deleted...)
		if err != nil {
			return out, fmt.Errorf("remove ACLs: %w", err)
		}
	}
	return out, nil
}

func (s storeACLAdmin) list(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error) {
	var out []acl.Binding
	for _, f := range filters {
		bs, err := s.store.ListACLs(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("list ACLs: %w", err)
		}
		out = append(out, bs...)
	}
	return out, nil
}

// kafkaACLAdmin manages ACLs through a Kafka listener, with the raw
// requests (kadm's ACLBuilder cannot name one binding or filter exactly:
// it multiplies allow and deny sets).
type kafkaACLAdmin struct{ cl *kgo.Client }

// kafkaError returns the error of a code and message, nil for 0.
func kafkaError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, *msg)
}

func (k kafkaACLAdmin) create(ctx context.Context, bindings []acl.Binding) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bindings {
		req.Creations = append(req.Creations, b.Creation())
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	if len(resp.Results) != len(bindings) {
		return fmt.Errorf("create ACLs: %d results for %d bindings", len(resp.Results), len(bindings))
	}
	var errs []error
	for i, r := range resp.Results {
		if err := kafkaError(r.ErrorCode, r.ErrorMessage); err != nil {
			errs = append(errs, fmt.Errorf("create ACL %s: %w", bindings[i], err))
		}
	}
	return errors.Join(errs...)
}

// kmsgFilter returns f as DeleteAcls filter fields.
func kmsgFilter(f acl.Filter) kmsg.DeleteACLsRequestFilter {
	kf := kmsg.NewDeleteACLsRequestFilter()
	kf.ResourceType, kf.ResourceName, kf.ResourcePatternType = anyIfUnset(f.Resource, acl.ResourceAny).Kmsg(), f.Name, anyIfUnset(f.Pattern, acl.PatternAny).Kmsg()
	kf.Principal, kf.Host = f.Principal, f.Host
	kf.Operation, kf.PermissionType = anyIfUnset(f.Operation, acl.OpAny).Kmsg(), anyIfUnset(f.Permission, acl.PermissionAny).Kmsg()
	return kf
}

// anyIfUnset returns v, or any when v is the zero (UNKNOWN) value, which
// means "any" in a Filter but is refused on the wire.
func anyIfUnset[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// bindingFromKafka converts a binding a Kafka response lists, validating
// it as a creation.
func bindingFromKafka(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType,
) (acl.Binding, error) {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, host, op, perm
	b, err := acl.BindingFromCreation(c)
	if err != nil {
		return acl.Binding{}, fmt.Errorf("the listener answered an invalid binding: %w", err)
	}
	return b, nil
}

func (k kafkaACLAdmin) remove(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error) {
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, f := range filters {
		req.Filters = append(req.Filters, kmsgFilter(f))
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, fmt.Errorf("remove ACLs: %w", err)
	}
	var out []acl.Binding
	var errs []error
	for _, r := range resp.Results {
		if err := kafkaError(r.ErrorCode, r.ErrorMessage); err != nil {
			errs = append(errs, fmt.Errorf("remove ACLs: %w", err))
		}
		for _, m := range r.MatchingACLs {
			if err := kafkaError(m.ErrorCode, m.ErrorMessage); err != nil {
				errs = append(errs, fmt.Errorf("remove ACLs: %w", err))
				continue
			}
			b, err := bindingFromKafka(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType)
			if err != nil {
				errs = append(errs, fmt.Errorf("remove ACLs: %w", err))
				continue
			}
			out = append(out, b)
		}
	}
	return out, errors.Join(errs...)
}

func (k kafkaACLAdmin) list(ctx context.Context, filters []acl.Filter) ([]acl.Binding, error) {
	var out []acl.Binding
	for _, f := range filters {
		kf := kmsgFilter(f)
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = kf.ResourceType, kf.ResourceName, kf.ResourcePatternType
		req.Principal, req.Host, req.Operation, req.PermissionType = kf.Principal, kf.Host, kf.Operation, kf.PermissionType
		resp, err := req.RequestWith(ctx, k.cl)
		if err != nil {
			return nil, fmt.Errorf("list ACLs: %w", err)
		}
		if err := kafkaError(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return nil, fmt.Errorf("list ACLs: %w", err)
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				b, err := bindingFromKafka(r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType)
				if err != nil {
					return nil, fmt.Errorf("list ACLs: %w", err)
				}
				out = append(out, b)
			}
		}
	}
	return out, nil
}
