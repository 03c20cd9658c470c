// Package acl holds Kafka's access-control model (issue 16): ACL bindings
// (principal, host, resource pattern, operation, permission), their
// validation, filters as Kafka's CreateAcls/DescribeAcls/DeleteAcls use
// them, conversions to and from the wire codes of
// github.com/twmb/franz-go/pkg/kmsg, and an Authorizer that decides a
// request exactly as Kafka's AclAuthorizer does. The package is pure: no
// I/O, no storage (cluster/acl_store.go keeps the bindings in etcd).
//
// The enum types use Kafka's int8 wire codes as their values, so a value
// converts to and from kmsg by a checked cast. Their zero value is
// Kafka's UNKNOWN: invalid in a Binding, "any" in a Filter.
package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrInvalidBinding is wrapped by every validation error of a binding or
// filter, and by the parse errors of the enums.
var ErrInvalidBinding = errors.New("acl: invalid ACL binding")

// ClusterName is the only resource name of the Cluster resource type, as
// in Kafka.
const ClusterName = "kafka-cluster"

// WildcardPrincipal matches every principal (Kafka's "User:*").
const WildcardPrincipal = "User:*"

// WildcardHost matches every client host.
const WildcardHost = "*"

// WildcardResource, as the name of a Literal pattern, matches every
// resource of the type.
const WildcardResource = "*"

// maxField bounds the length (bytes) of a binding's principal, host and
// resource name: they become parts of an etcd key.
const maxField = 4096

// ResourceType is the kind of resource a binding applies to. Values are
// Kafka's codes (kmsg.ACLResourceType).
type ResourceType int8

// The resource types. ResourceAny is valid only in a Filter.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
)

// ResourceTypes lists the resource types a Binding may have.
var ResourceTypes = []ResourceType{ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID}

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
}

// String returns Kafka's name, e.g. "TOPIC", "TRANSACTIONAL_ID".
func (r ResourceType) String() string { return enumString(resourceNames, r, "ResourceType") }

// ParseResourceType parses a name case-insensitively, ignoring '_' and '-'
// ("topic", "TransactionalId", "transactional-id").
func ParseResourceType(s string) (ResourceType, error) {
	return enumParse(resourceNames, s, "resource type")
}

// PatternType says how a binding's resource name matches resource names.
// Values are Kafka's codes (kmsg.ACLResourcePatternType).
type PatternType int8

// The pattern types. PatternAny and PatternMatch are valid only in a
// Filter.
const (
	PatternUnknown PatternType = 0
	// PatternAny, in a filter, matches bindings of either pattern type
	// whose name equals the filter's.
	PatternAny PatternType = 1
	// PatternMatch, in a filter, matches the bindings that apply to the
	// filter's name: literal equal, literal "*", or a prefix of it.
	PatternMatch PatternType = 2
	// PatternLiteral: the name is the resource's name, or "*" for all.
	PatternLiteral PatternType = 3
	// PatternPrefixed: the name is a prefix of the resources' names.
	PatternPrefixed PatternType = 4
)

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

// String returns Kafka's name, e.g. "LITERAL".
func (p PatternType) String() string { return enumString(patternNames, p, "PatternType") }

// ParsePatternType parses a name as ParseResourceType does.
func ParsePatternType(s string) (PatternType, error) {
	return enumParse(patternNames, s, "pattern type")
}

// Operation is what a request does to a resource. Values are Kafka's
// codes (kmsg.ACLOperation).
type Operation int8

// The operations. OpAny is valid only in a Filter; OpAll in a binding
// matches every operation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

// Operations lists the operations a Binding may have, OpAll first.
var Operations = []Operation{
	OpAll, OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe,
	OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite,
}

var operationNames = map[Operation]string{
	OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE",
	OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
}

// String returns Kafka's name, e.g. "DESCRIBE_CONFIGS".
func (o Operation) String() string { return enumString(operationNames, o, "Operation") }

// ParseOperation parses a name as ParseResourceType does.
func ParseOperation(s string) (Operation, error) { return enumParse(operationNames, s, "operation") }

// Permission says whether a binding allows or denies. Values are Kafka's
// codes (kmsg.ACLPermissionType).
type Permission int8

// The permissions. PermissionAny is valid only in a Filter.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

var permissionNames = map[Permission]string{
	PermissionUnknown: "UNKNOWN", PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW",
}

// String returns Kafka's name, "ALLOW" or "DENY".
func (p Permission) String() string { return enumString(permissionNames, p, "Permission") }

// ParsePermission parses a name as ParseResourceType does.
func ParsePermission(s string) (Permission, error) {
	return enumParse(permissionNames, s, "permission")
}

// MarshalText implements encoding.TextMarshaler (Kafka's name).
func (r ResourceType) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParseResourceType).
func (r *ResourceType) UnmarshalText(b []byte) (err error) {
	*r, err = ParseResourceType(string(b))
	return err
}

// MarshalText implements encoding.TextMarshaler (Kafka's name).
func (p PatternType) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParsePatternType).
func (p *PatternType) UnmarshalText(b []byte) (err error) {
	*p, err = ParsePatternType(string(b))
	return err
}

// MarshalText implements encoding.TextMarshaler (Kafka's name).
func (o Operation) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParseOperation).
func (o *Operation) UnmarshalText(b []byte) (err error) {
	*o, err = ParseOperation(string(b))
	return err
}

// MarshalText implements encoding.TextMarshaler (Kafka's name).
func (p Permission) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParsePermission).
func (p *Permission) UnmarshalText(b []byte) (err error) {
	*p, err = ParsePermission(string(b))
	return err
}

func enumString[T ~int8](names map[T]string, v T, typ string) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("%s(%d)", typ, int8(v))
}

func normalizeName(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToUpper(s))
}

func enumParse[T ~int8](names map[T]string, s, what string) (T, error) {
	n := normalizeName(s)
	for v, name := range names {
		if v != 0 && normalizeName(name) == n {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown %s %q", ErrInvalidBinding, what, s)
}

// Binding is one ACL: Principal may (Permission) do Operation on the
// resources of type Resource that Name and Pattern select, when connected
// from Host. JSON-encodable with the enums as Kafka's names.
type Binding struct {
	// Principal is "User:NAME", "Host:NAME" (tlsconf.Principal's String)
	// or WildcardPrincipal, "User:*", which matches every principal.
	Principal string `json:"principal"`
	// Host is the client's IP address, or WildcardHost "*".
	Host string `json:"host"`
	// Resource is the resource type: Topic, Group, Cluster or
	// TransactionalID.
	Resource ResourceType `json:"resource_type"`
	// Name is the resource name (Literal; "*" for every resource of the
	// type) or a name prefix (Prefixed). Cluster's is always ClusterName.
	Name string `json:"name"`
	// Pattern is PatternLiteral or PatternPrefixed.
	Pattern PatternType `json:"pattern_type"`
	// Operation is a concrete operation or OpAll.
	Operation Operation `json:"operation"`
	// Permission is Allow or Deny.
	Permission Permission `json:"permission"`
}

// String describes b as in Decision reasons:
// `User:bob DENY WRITE on TOPIC orders (LITERAL)`, with ` from host H`
// appended when the host is not "*".
func (b Binding) String() string {
	s := fmt.Sprintf("%s %s %s on %s %s (%s)", b.Principal, b.Permission, b.Operation, b.Resource, b.Name, b.Pattern)
	if b.Host != WildcardHost {
		s += " from host " + b.Host
	}
	return s
}

// Validate checks b as Kafka does when it creates an ACL, and a little
// more: a principal "User:NAME" or "Host:NAME" (only "User:*" is a
// wildcard), a host "*" or an IP address, a concrete resource type, a
// non-empty name ("kafka-cluster" for Cluster), pattern Literal or
// Prefixed (a Prefixed "*" is refused: use Literal "*"), a concrete
// operation or All, and Allow or Deny. Errors wrap ErrInvalidBinding.
func (b Binding) Validate() error {
	if err := ValidatePrincipal(b.Principal); err != nil {
		return err
	}
	if err := validateHost(b.Host); err != nil {
		return err
	}
	switch b.Resource {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID:
	default:
		return fmt.Errorf("%w: resource type %s: want TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID", ErrInvalidBinding, b.Resource)
	}
	switch b.Pattern {
	case PatternLiteral, PatternPrefixed:
	default:
		return fmt.Errorf("%w: pattern type %s: want LITERAL or PREFIXED", ErrInvalidBinding, b.Pattern)
	}
	switch {
	case b.Name == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalidBinding)
	case len(b.Name) > maxField:
		return fmt.Errorf("%w: resource name of %d bytes: at most %d", ErrInvalidBinding, len(b.Name), maxField)
	case b.Pattern == PatternPrefixed && b.Name == WildcardResource:
		return fmt.Errorf("%w: a PREFIXED pattern cannot be %q: use a LITERAL %q for every %s", ErrInvalidBinding, WildcardResource, WildcardResource, b.Resource)
	case b.Resource == ResourceCluster && (b.Name != ClusterName || b.Pattern != PatternLiteral):
		return fmt.Errorf("%w: CLUSTER resource %q (%s): the only CLUSTER resource is LITERAL %q", ErrInvalidBinding, b.Name, b.Pattern, ClusterName)
	}
	if b.Operation < OpAll || b.Operation > OpIdempotentWrite {
		return fmt.Errorf("%w: operation %s: want ALL or a concrete operation", ErrInvalidBinding, b.Operation)
	}
	if b.Permission != Allow && b.Permission != Deny {
		return fmt.Errorf("%w: permission %s: want ALLOW or DENY", ErrInvalidBinding, b.Permission)
	}
	return nil
}

// ValidatePrincipal checks a binding's principal: "User:NAME" or
// "Host:NAME" with a non-empty NAME of at most 4096 bytes; "User:*" is the
// wildcard, "Host:*" is refused (it would look like one and is not).
func ValidatePrincipal(p string) error {
	kind, name, ok := strings.Cut(p, ":")
	switch {
	case !ok || name == "":
		return fmt.Errorf("%w: principal %q: want User:NAME, Host:NAME or %s", ErrInvalidBinding, p, WildcardPrincipal)
	case kind != "User" && kind != "Host":
		return fmt.Errorf("%w: principal %q: unknown principal type %q (want User or Host)", ErrInvalidBinding, p, kind)
	case kind == "Host" && name == "*":
		return fmt.Errorf("%w: principal %q: the only wildcard principal is %s", ErrInvalidBinding, p, WildcardPrincipal)
	case len(p) > maxField:
		return fmt.Errorf("%w: principal of %d bytes: at most %d", ErrInvalidBinding, len(p), maxField)
	}
	return nil
}

func validateHost(h string) error {
	if h == WildcardHost {
		return nil
	}
	if _, err := netip.ParseAddr(h); err != nil {
		return fmt.Errorf("%w: host %q: want %q or an IP address", ErrInvalidBinding, h, WildcardHost)
	}
	return nil
}

// canonicalHost returns the canonical text of an IP address ("*" and
// unparsable strings unchanged), so "::ffff:10.0.0.1" and "10.0.0.1"
// compare equal.
func canonicalHost(h string) string {
	if h == WildcardHost {
		return h
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return h
	}
	return a.Unmap().String()
}
