// authorizer.go holds Authorizer, which decides whether a principal may do
// an operation on a resource, exactly as Kafka's AclAuthorizer
// (kafka.security.authorizer.AclAuthorizer.authorizeAction):
//
//  1. a super user may do anything;
//  2. the ACLs of the resource are the bindings of its type whose pattern
//     applies to its name (literal equal, literal "*", or prefixed by a
//     prefix of the name), whatever their principal, host or operation;
//     when there are none, the answer is AllowEveryoneIfNoACLFound;
//  3. a binding applies to a request when its principal equals the
//     request's or is "User:*", its host equals the client's or is "*",
//     and its operation equals the request's or is All;
//  4. an applying Deny denies (deny wins over allow);
//  5. else an applying Allow allows, where an Allow of Read, Write, Delete
//     or Alter also allows Describe, and an Allow of AlterConfigs also
//     allows DescribeConfigs (a Deny implies nothing);
//  6. else the request is denied.

package acl

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// Config is an Authorizer's fixed settings.
type Config struct {
	// SuperUsers are principals ("User:admin", "Host:host1") that may do
	// anything, whatever the ACLs say (Kafka's super.users). Exact
	// matches only: "User:*" here is no wildcard.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows a request on a resource that no
	// binding applies to (Kafka's allow.everyone.if.no.acl.found); when
	// false such requests are denied.
	AllowEveryoneIfNoACLFound bool
}

// Decision is the answer to one authorization request.
type Decision struct {
	// Allowed says whether the request may go on.
	Allowed bool
	// Reason says why, for logs and audit, e.g. "denied by User:bob DENY
	// WRITE on TOPIC orders (LITERAL)".
	Reason string
}

// Authorizer decides requests against a set of bindings. The set can be
// replaced at any time (SetBindings) while other goroutines call
// Authorize: each call sees one whole set, the old or the new. Safe for
// concurrent use.
type Authorizer struct {
	superUsers  map[string]struct{}
	allowIfNone bool
	idx         atomic.Pointer[index]
}

// index is an immutable, searchable binding set.
//
// Lookups cost a map access for literal names plus a scan of the
// wildcard and prefixed bindings of the resource type. Prefixed bindings
// are scanned linearly: fine for hundreds of them per resource type; a
// prefix trie (or a sorted slice searched per prefix length) is the
// change to make if that grows.
type index struct {
	bindings []Binding
	byType   map[ResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]entry
	wildcard []entry // literal "*"
	prefixed []entry
}

// entry is a binding with its host canonicalized for comparison.
type entry struct {
	b    Binding
	host string
}

// New returns an Authorizer over bindings (validated; duplicates are
// kept once).
func New(cfg Config, bindings []Binding) (*Authorizer, error) {
	a := &Authorizer{superUsers: map[string]struct{}{}, allowIfNone: cfg.AllowEveryoneIfNoACLFound}
	for _, s := range cfg.SuperUsers {
		a.superUsers[s] = struct{}{}
	}
	if err := a.SetBindings(bindings); err != nil {
		return nil, err
	}
	return a, nil
}

// SetBindings replaces the binding set. An invalid binding is an error
// (wrapping ErrInvalidBinding) and leaves the current set in place.
func (a *Authorizer) SetBindings(bindings []Binding) error {
	idx, err := newIndex(bindings)
	if err != nil {
		return err
	}
	a.idx.Store(idx)
	return nil
}

// Bindings returns a copy of the current binding set, without duplicates,
// in the order given to SetBindings.
func (a *Authorizer) Bindings() []Binding { return slices.Clone(a.idx.Load().bindings) }

// Len returns the number of bindings in the current set.
func (a *Authorizer) Len() int { return len(a.idx.Load().bindings) }

func newIndex(bindings []Binding) (*index, error) {
	idx := &index{byType: map[ResourceType]*typeIndex{}}
	seen := make(map[Binding]struct{}, len(bindings))
	for i, b := range bindings {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("binding %d (%s): %w", i, b, err)
		}
		if _, dup := seen[b]; dup {
			continue
		}
		seen[b] = struct{}{}
		idx.bindings = append(idx.bindings, b)
		t := idx.byType[b.Resource]
		if t == nil {
			t = &typeIndex{literal: map[string][]entry{}}
			idx.byType[b.Resource] = t
		}
		e := entry{b: b, host: canonicalHost(b.Host)}
		switch {
		case b.Pattern == PatternPrefixed:
			t.prefixed = append(t.prefixed, e)
		case b.Name == WildcardResource:
			t.wildcard = append(t.wildcard, e)
		default:
			t.literal[b.Name] = append(t.literal[b.Name], e)
		}
	}
	return idx, nil
}

// impliedBy returns the operations whose Allow allows op (op itself
// included), as Kafka's AclAuthorizer.
func impliedBy(op Operation) []Operation {
	switch op {
	case OpDescribe:
		return []Operation{OpDescribe, OpRead, OpWrite, OpDelete, OpAlter}
	case OpDescribeConfigs:
		return []Operation{OpDescribeConfigs, OpAlterConfigs}
	}
	return []Operation{op}
}

// Authorize decides whether principal ("User:alice"), connected from
// clientHost (an IP address), may do op on the resource of type res named
// name (ClusterName for the cluster). op must be a concrete operation
// (not All or Any): anything else is denied.
func (a *Authorizer) Authorize(principal, clientHost string, op Operation, res ResourceType, name string) Decision {
	if op < OpRead || op > OpIdempotentWrite {
		return Decision{Reason: fmt.Sprintf("operation %s cannot be authorized: want a concrete operation", op)}
	}
	if _, ok := a.superUsers[principal]; ok {
		return Decision{Allowed: true, Reason: principal + " is a super user"}
	}
	matching := a.idx.Load().matching(res, name)
	if len(matching) == 0 {
		if a.allowIfNone {
			return Decision{Allowed: true, Reason: fmt.Sprintf("no ACL found for %s %s; everyone is allowed", res, name)}
		}
		return Decision{Reason: fmt.Sprintf("no ACL found for %s %s; denied (allow everyone if no ACL found is off)", res, name)}
	}
	host := canonicalHost(clientHost)
	applies := func(e entry) bool {
		return (e.b.Principal == principal || e.b.Principal == WildcardPrincipal) &&
			(e.host == host || e.host == WildcardHost)
	}
	for _, e := range matching {
		if e.b.Permission == Deny && applies(e) && (e.b.Operation == op || e.b.Operation == OpAll) {
			return Decision{Reason: "denied by " + e.b.String()}
		}
	}
	ops := impliedBy(op)
	for _, e := range matching {
		if e.b.Permission == Allow && applies(e) && (e.b.Operation == OpAll || slices.Contains(ops, e.b.Operation)) {
			return Decision{Allowed: true, Reason: "allowed by " + e.b.String()}
		}
	}
	return Decision{Reason: fmt.Sprintf("no ACL allows %s to %s %s %s", principal, op, res, name)}
}

// matching returns the entries whose resource pattern applies to the
// resource (res, name): literal name, literal "*", then prefixed.
func (idx *index) matching(res ResourceType, name string) []entry {
	t := idx.byType[res]
	if t == nil {
		return nil
	}
	lit := t.literal[name]
	if len(t.wildcard) == 0 && len(t.prefixed) == 0 {
		return lit // no copy needed: read only
	}
	out := make([]entry, 0, len(lit)+len(t.wildcard))
	out = append(out, lit...)
	out = append(out, t.wildcard...)
	for _, e := range t.prefixed {
		if strings.HasPrefix(name, e.b.Name) {
			out = append(out, e)
		}
	}
	return out
}

// AuthorizeByResourceType reports whether principal, connected from
// clientHost, may do op on at least one resource of type res, as Kafka's
// AclAuthorizer.authorizeByResourceType (KIP-679; InitProducerId without a
// transactional id asks it for Write on any topic):
//
//   - a super user may;
//   - an applying Deny of op (or All) on the wildcard name "*" denies;
//   - an applying Allow on the wildcard name allows;
//   - an applying prefixed Allow allows unless an applying Deny's prefix
//     is a prefix of its prefix;
//   - an applying literal Allow allows unless an applying Deny names the
//     same resource or has a prefix of its name;
//   - with no binding of the type at all, AllowEveryoneIfNoACLFound
//     decides.
//
// Allows of the operations that imply op count, as in Authorize.
func (a *Authorizer) AuthorizeByResourceType(principal, clientHost string, op Operation, res ResourceType) bool {
	if op < OpRead || op > OpIdempotentWrite {
		return false
	}
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	t := a.idx.Load().byType[res]
	if t == nil {
		return a.allowIfNone
	}
	host := canonicalHost(clientHost)
	ops := impliedBy(op)
	applies := func(e entry, perm Permission) bool {
		if e.b.Permission != perm || (e.b.Principal != principal && e.b.Principal != WildcardPrincipal) ||
			(e.host != host && e.host != WildcardHost) {
			return false
		}
		if perm == Deny {
			return e.b.Operation == op || e.b.Operation == OpAll
		}
		return e.b.Operation == OpAll || slices.Contains(ops, e.b.Operation)
	}
	for _, e := range t.wildcard {
		if applies(e, Deny) {
			return false
		}
	}
	for _, e := range t.wildcard {
		if applies(e, Allow) {
			return true
		}
	}
	var denyPrefixes []string
	for _, e := range t.prefixed {
		if applies(e, Deny) {
			denyPrefixes = append(denyPrefixes, e.b.Name)
		}
	}
	deniedByPrefix := func(name string) bool {
		return slices.ContainsFunc(denyPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	for _, e := range t.prefixed {
		if applies(e, Allow) && !deniedByPrefix(e.b.Name) {
			return true
		}
	}
	for name, entries := range t.literal {
		if deniedByPrefix(name) || slices.ContainsFunc(entries, func(e entry) bool { return applies(e, Deny) }) {
			continue
		}
		if slices.ContainsFunc(entries, func(e entry) bool { return applies(e, Allow) }) {
			return true
		}
	}
	return false
}
