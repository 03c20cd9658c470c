// acl.go converts between the ACL messages of admin.proto (AclBinding,
// AclFilter) and internal/acl's Binding and Filter. The enums travel as
// Kafka's codes. A binding code out of the acl types' range becomes
// UNKNOWN (0), which acl.Binding.Validate refuses; FilterFromProto refuses
// such a code outright (in a filter 0 would mean ANY: a code this host
// does not know must be an error, not a wider filter).

package messages

import (
	"fmt"
	"math"

	"github.com/actorlog/actorlog/internal/acl"
)

// BindingToProto converts b.
func BindingToProto(b acl.Binding) *AclBinding {
	return &AclBinding{
		ResourceType: int32(b.Resource), ResourceName: b.Name, PatternType: int32(b.Pattern),
		Principal: b.Principal, Host: b.Host, Operation: int32(b.Operation), Permission: int32(b.Permission),
	}
}

// BindingsToProto converts bs.
func BindingsToProto(bs []acl.Binding) []*AclBinding {
	out := make([]*AclBinding, len(bs))
	for i, b := range bs {
		out[i] = BindingToProto(b)
	}
	return out
}

// enumCode narrows a code to an acl enum; out of range is 0 (UNKNOWN),
// which no binding validates with.
func enumCode[T ~int8](v int32) T {
	if v < 0 || v > math.MaxInt8 {
		return 0
	}
	return T(v)
}

// BindingFromProto converts m, without validating it (acl.Binding.Validate
// does; an out-of-range code becomes UNKNOWN, which it refuses).
func BindingFromProto(m *AclBinding) acl.Binding {
	return acl.Binding{
		Resource: enumCode[acl.ResourceType](m.GetResourceType()), Name: m.GetResourceName(),
		Pattern: enumCode[acl.PatternType](m.GetPatternType()), Principal: m.GetPrincipal(), Host: m.GetHost(),
		Operation: enumCode[acl.Operation](m.GetOperation()), Permission: enumCode[acl.Permission](m.GetPermission()),
	}
}

// BindingsFromProto converts ms (see BindingFromProto).
func BindingsFromProto(ms []*AclBinding) []acl.Binding {
	out := make([]acl.Binding, len(ms))
	for i, m := range ms {
		out[i] = BindingFromProto(m)
	}
	return out
}

// FilterToProto converts f.
func FilterToProto(f acl.Filter) *AclFilter {
	return &AclFilter{
		ResourceType: int32(f.Resource), ResourceName: f.Name, PatternType: int32(f.Pattern),
		Principal: f.Principal, Host: f.Host, Operation: int32(f.Operation), Permission: int32(f.Permission),
	}
}

// FilterFromProto converts and validates m (nil: the filter matching
// everything). A code out of the acl types' range is an error wrapping
// acl.ErrInvalidBinding, as an invalid one is.
func FilterFromProto(m *AclFilter) (acl.Filter, error) {
	if m == nil {
		return acl.Filter{}, nil
	}
	for _, c := range []struct {
		what string
		v    int32
	}{{"resource type", m.ResourceType}, {"pattern type", m.PatternType}, {"operation", m.Operation}, {"permission", m.Permission}} {
		if c.v < 0 || c.v > math.MaxInt8 {
			return acl.Filter{}, fmt.Errorf("%w: filter %s code %d", acl.ErrInvalidBinding, c.what, c.v)
		}
	}
	f := acl.Filter{
		Resource: acl.ResourceType(m.ResourceType), Name: m.ResourceName, Pattern: acl.PatternType(m.PatternType),
		Principal: m.Principal, Host: m.Host, Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.Permission),
	}
	if err := f.Validate(); err != nil {
		return acl.Filter{}, err
	}
	return f, nil
}
