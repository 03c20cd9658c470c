// kmsg.go converts between this package's types and the ACL fields of
// Kafka's CreateAcls, DescribeAcls and DeleteAcls requests
// (github.com/twmb/franz-go/pkg/kmsg). The handlers answer a conversion
// error with INVALID_REQUEST, as Kafka does for unknown codes.

package acl

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kmsg returns r's wire code.
func (r ResourceType) Kmsg() kmsg.ACLResourceType { return kmsg.ACLResourceType(r) }

// Kmsg returns p's wire code.
func (p PatternType) Kmsg() kmsg.ACLResourcePatternType { return kmsg.ACLResourcePatternType(p) }

// Kmsg returns o's wire code.
func (o Operation) Kmsg() kmsg.ACLOperation { return kmsg.ACLOperation(o) }

// Kmsg returns p's wire code.
func (p Permission) Kmsg() kmsg.ACLPermissionType { return kmsg.ACLPermissionType(p) }

// ResourceTypeFromKmsg converts a wire code, refusing UNKNOWN and the
// types this package does not model (DELEGATION_TOKEN, USER).
func ResourceTypeFromKmsg(v kmsg.ACLResourceType) (ResourceType, error) {
	if v < kmsg.ACLResourceTypeAny || v > kmsg.ACLResourceTypeTransactionalId {
		return 0, fmt.Errorf("%w: resource type %s (%d)", ErrInvalidBinding, v, int8(v))
	}
	return ResourceType(v), nil
}

// PatternTypeFromKmsg converts a wire code, refusing UNKNOWN.
func PatternTypeFromKmsg(v kmsg.ACLResourcePatternType) (PatternType, error) {
	if v < kmsg.ACLResourcePatternTypeAny || v > kmsg.ACLResourcePatternTypePrefixed {
		return 0, fmt.Errorf("%w: pattern type %s (%d)", ErrInvalidBinding, v, int8(v))
	}
	return PatternType(v), nil
}

// OperationFromKmsg converts a wire code, refusing UNKNOWN and the
// operations this package does not model (CREATE_TOKENS,
// DESCRIBE_TOKENS).
func OperationFromKmsg(v kmsg.ACLOperation) (Operation, error) {
	if v < kmsg.ACLOperationAny || v > kmsg.ACLOperationIdempotentWrite {
		return 0, fmt.Errorf("%w: operation %s (%d)", ErrInvalidBinding, v, int8(v))
	}
	return Operation(v), nil
}

// PermissionFromKmsg converts a wire code, refusing UNKNOWN.
func PermissionFromKmsg(v kmsg.ACLPermissionType) (Permission, error) {
	if v < kmsg.ACLPermissionTypeAny || v > kmsg.ACLPermissionTypeAllow {
		return 0, fmt.Errorf("%w: permission %s (%d)", ErrInvalidBinding, v, int8(v))
	}
	return Permission(v), nil
}

// BindingFromCreation converts one CreateAcls creation and validates it
// (Binding.Validate). Errors wrap ErrInvalidBinding.
func BindingFromCreation(c kmsg.CreateACLsRequestCreation) (Binding, error) {
	var b Binding
	var err error
	if b.Resource, err = ResourceTypeFromKmsg(c.ResourceType); err != nil {
		return Binding{}, err
	}
	if b.Pattern, err = PatternTypeFromKmsg(c.ResourcePatternType); err != nil {
		return Binding{}, err
	}
	if b.Operation, err = OperationFromKmsg(c.Operation); err != nil {
		return Binding{}, err
	}
	if b.Permission, err = PermissionFromKmsg(c.PermissionType); err != nil {
		return Binding{}, err
	}
	b.Principal, b.Host, b.Name = c.Principal, c.Host, c.ResourceName
	if err := b.Validate(); err != nil {
		return Binding{}, err
	}
	return b, nil
}

// Creation returns b as a CreateAcls creation.
func (b Binding) Creation() kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = b.Resource.Kmsg(), b.Name, b.Pattern.Kmsg()
	c.Principal, c.Host = b.Principal, b.Host
	c.Operation, c.PermissionType = b.Operation.Kmsg(), b.Permission.Kmsg()
	return c
}

// filterFromKmsg converts the fields common to DescribeAcls and a
// DeleteAcls filter. Kafka refuses UNKNOWN codes in both.
func filterFromKmsg(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType,
) (Filter, error) {
	f := Filter{Name: name, Principal: principal, Host: host}
	var err error
	if f.Resource, err = ResourceTypeFromKmsg(rt); err != nil {
		return Filter{}, err
	}
	if f.Pattern, err = PatternTypeFromKmsg(pt); err != nil {
		return Filter{}, err
	}
	if f.Operation, err = OperationFromKmsg(op); err != nil {
		return Filter{}, err
	}
	if f.Permission, err = PermissionFromKmsg(perm); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// FilterFromDescribe converts a DescribeAcls request's filter.
func FilterFromDescribe(r *kmsg.DescribeACLsRequest) (Filter, error) {
	return filterFromKmsg(r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
}

// FilterFromDelete converts one DeleteAcls filter.
func FilterFromDelete(d kmsg.DeleteACLsRequestFilter) (Filter, error) {
	return filterFromKmsg(d.ResourceType, d.ResourceName, d.ResourcePatternType, d.Principal, d.Host, d.Operation, d.PermissionType)
}
