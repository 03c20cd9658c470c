// filter.go holds Filter, Kafka's ACL binding filter (DescribeAcls,
// DeleteAcls): a binding matches when every set field matches it.

package acl

import (
	"fmt"
	"strings"
)

// Filter selects bindings as Kafka's AclBindingFilter does. The zero
// Filter matches every binding: a nil pointer matches any value, and the
// zero value of an enum field (UNKNOWN) means the same as its ANY.
// Comparisons are exact: a Principal of "User:*" matches only bindings of
// the wildcard principal, not every binding.
type Filter struct {
	// Principal, when set, must equal the binding's.
	Principal *string
	// Host, when set, must equal the binding's.
	Host *string
	// Resource, unless ResourceAny or zero, must equal the binding's.
	Resource ResourceType
	// Name, when set, is compared as Pattern says.
	Name *string
	// Pattern: PatternAny (or zero) matches either pattern type, with
	// Name equal; PatternLiteral or PatternPrefixed only that type, with
	// Name equal; PatternMatch the bindings that apply to a resource named
	// Name (literal equal, literal "*", or prefixed by a prefix of Name).
	Pattern PatternType
	// Operation, unless OpAny or zero, must equal the binding's (OpAll
	// matches only bindings of OpAll).
	Operation Operation
	// Permission, unless PermissionAny or zero, must equal the binding's.
	Permission Permission
}

// Validate checks f's enums are known values (any of them, including
// ANY and MATCH). Errors wrap ErrInvalidBinding.
func (f Filter) Validate() error {
	switch {
	case f.Resource < ResourceUnknown || f.Resource > ResourceTransactionalID:
		return fmt.Errorf("%w: filter resource type %s", ErrInvalidBinding, f.Resource)
	case f.Pattern < PatternUnknown || f.Pattern > PatternPrefixed:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalidBinding, f.Pattern)
	case f.Operation < OpUnknown || f.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: filter operation %s", ErrInvalidBinding, f.Operation)
	case f.Permission < PermissionUnknown || f.Permission > Allow:
		return fmt.Errorf("%w: filter permission %s", ErrInvalidBinding, f.Permission)
	}
	return nil
}

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation > OpAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission > PermissionAny && f.Permission != b.Permission {
		return false
	}
	return f.matchesPattern(b)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f Filter) matchesPattern(b Binding) bool {
	if f.Resource > ResourceAny && f.Resource != b.Resource {
		return false
	}
	anyPattern := f.Pattern <= PatternAny
	if !anyPattern && f.Pattern != PatternMatch && f.Pattern != b.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if anyPattern || f.Pattern == b.Pattern {
		return *f.Name == b.Name
	}
	// PatternMatch.
	switch b.Pattern {
	case PatternLiteral:
		return *f.Name == b.Name || b.Name == WildcardResource
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, b.Name)
	}
	return false
}

// ExactFilter returns the filter that matches b and only b.
func ExactFilter(b Binding) Filter {
	return Filter{
		Principal: &b.Principal, Host: &b.Host, Resource: b.Resource, Name: &b.Name,
		Pattern: b.Pattern, Operation: b.Operation, Permission: b.Permission,
	}
}
