// acls.go: DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls
// (key 31), v0-3, served when Config.ACLs is set (kadm's DescribeACLs,
// CreateACLs, DeleteACLs; kafka-acls.sh). v0 has no pattern type: its
// bindings and filters are LITERAL (kmsg's default when decoding v0). v2
// makes the requests flexible; v3 changes nothing on the wire. Who may
// call these APIs is decided before the handlers run (authorize.go), not
// here.
//
// CreateAcls: one result per creation, in order. A creation that is not a
// valid binding (acl.Binding.Validate: a principal without its "User:" or
// "Host:" type, a CLUSTER resource not named kafka-cluster, an empty
// name, an ANY or MATCH pattern, an ANY or UNKNOWN enum, a host that is
// neither "*" nor an IP address) is INVALID_REQUEST with the reason, and
// does not stop the others: the valid ones are stored together in one
// backend call, and all of them are UNKNOWN_SERVER_ERROR if it fails.
// Creating a binding that exists succeeds and changes nothing.
//
// DescribeAcls: the bindings the filter matches, grouped by resource
// pattern (type, name, pattern type) as Kafka groups them, in the
// backend's order. A filter with an UNKNOWN enum is INVALID_REQUEST; a
// backend failure UNKNOWN_SERVER_ERROR, both with a message.
//
// DeleteAcls: one result per filter, in order, each listing the bindings
// that filter deleted. Filters are applied one after the other, so a
// binding two filters match is listed under the first, as ZooKeeper-mode
// Kafka's AclAuthorizer answers. A filter with an UNKNOWN enum is
// INVALID_REQUEST and does not stop the others; a backend failure is
// UNKNOWN_SERVER_ERROR for that filter (with whatever it had deleted
// before failing still listed).
//
// Error codes: INVALID_REQUEST (42), UNKNOWN_SERVER_ERROR (-1).

package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/actorlog/actorlog/internal/acl"
)

// ACLBackend stores the ACL bindings the ACL APIs manage (the host's is
// a cluster.ACLCache over the metadata store). Implementations are safe
// for concurrent use; an error wrapping acl.ErrInvalidBinding is answered
// INVALID_REQUEST, any other UNKNOWN_SERVER_ERROR.
type ACLBackend interface {
	// CreateACLs stores bindings, all valid (acl.Binding.Validate).
	// Storing a binding that exists changes nothing.
	CreateACLs(ctx context.Context, b []acl.Binding) error
	// DescribeACLs returns the bindings f matches.
	DescribeACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error)
	// DeleteACLs deletes the bindings f matches and returns those it
	// deleted, also when it fails part way.
	DeleteACLs(ctx context.Context, f acl.Filter) ([]acl.Binding, error)
}

func init() {
	for _, a := range []api{
		{key: 29, handle: handleDescribeACLs},
		{key: 30, handle: handleCreateACLs},
		{key: 31, handle: handleDeleteACLs},
	} {
		a.servedMin, a.servedMax, a.advertisedMin, a.advertisedMax = 0, 3, 0, 3
		a.enabled = aclsEnabled
		register(a)
	}
}

func aclsEnabled(cfg *Config) bool { return cfg.ACLs != nil }

// aclErrorCode is the code a backend error is answered with.
func aclErrorCode(err error) int16 {
	if errors.Is(err, acl.ErrInvalidBinding) {
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}

// aclCreationPlan is a CreateAcls request checked: the results, with the
// refused creations already answered, and the valid bindings with the
// index of the creation each came from.
type aclCreationPlan struct {
	results []kmsg.CreateACLsResponseResult
	valid   []acl.Binding
	at      []int
}

// planACLCreations validates each creation on its own. Pure.
func planACLCreations(creations []kmsg.CreateACLsRequestCreation) aclCreationPlan {
	p := aclCreationPlan{results: make([]kmsg.CreateACLsResponseResult, len(creations))}
	for i, cr := range creations {
		p.results[i] = kmsg.NewCreateACLsResponseResult()
		b, err := acl.BindingFromCreation(cr)
		if err != nil {
			p.results[i].ErrorCode = kerr.InvalidRequest.Code
			p.results[i].ErrorMessage = kmsg.StringPtr(err.Error())
			continue
		}
		p.valid = append(p.valid, b)
		p.at = append(p.at, i)
	}
	return p
}

// fail answers every valid creation with err.
func (p aclCreationPlan) fail(err error) {
	for _, i := range p.at {
		p.results[i].ErrorCode = aclErrorCode(err)
		p.results[i].ErrorMessage = kmsg.StringPtr(fmt.Sprintf("store ACL bindings: %v", err))
	}
}

func handleCreateACLs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.CreateACLsRequest)
	plan := planACLCreations(req.Creations)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		resp.Results = plan.results
		if len(plan.valid) == 0 {
			return resp, nil
		}
		if err := c.srv.cfg.ACLs.CreateACLs(ctx, plan.valid); err != nil {
			c.aclLog(ctx, r).WithError(err).Warn("cannot store ACL bindings")
			plan.fail(err)
			return resp, nil
		}
		c.aclLog(ctx, r).WithField("bindings", bindingStrings(plan.valid)).Info("ACL bindings created")
		return resp, nil
	})
}

// describeACLResources groups bindings by resource pattern, in order of
// first appearance. Pure.
func describeACLResources(bindings []acl.Binding) []kmsg.DescribeACLsResponseResource {
	type pattern struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	index := map[pattern]int{}
	var out []kmsg.DescribeACLsResponseResource
	for _, b := range bindings {
		k := pattern{b.Resource, b.Name, b.Pattern}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.Resource.Kmsg(), b.Name, b.Pattern.Kmsg()
			out = append(out, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation.Kmsg(), b.Permission.Kmsg()
		out[i].ACLs = append(out[i].ACLs, a)
	}
	return out
}

func handleDescribeACLs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f, err := acl.FilterFromDescribe(req)
	if err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return respond(resp)
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		bindings, err := c.srv.cfg.ACLs.DescribeACLs(ctx, f)
		if err != nil {
			resp.ErrorCode = aclErrorCode(err)
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("list ACL bindings: %v", err))
			return resp, nil
		}
		resp.Resources = describeACLResources(bindings)
		return resp, nil
	})
}

// deletedACLs converts the bindings a filter deleted. Pure.
func deletedACLs(bindings []acl.Binding) []kmsg.DeleteACLsResponseResultMatchingACL {
	out := make([]kmsg.DeleteACLsResponseResultMatchingACL, len(bindings))
	for i, b := range bindings {
		m := kmsg.NewDeleteACLsResponseResultMatchingACL()
		m.ResourceType, m.ResourceName, m.ResourcePatternType = b.Resource.Kmsg(), b.Name, b.Pattern.Kmsg()
		m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation.Kmsg(), b.Permission.Kmsg()
		out[i] = m
	}
	return out
}

func handleDeleteACLs(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DeleteACLsRequest)
	filters := make([]acl.Filter, len(req.Filters))
	bad := make([]error, len(req.Filters))
	for i, rf := range req.Filters {
		filters[i], bad[i] = acl.FilterFromDelete(rf)
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		var all []acl.Binding
		for i, f := range filters {
			res := kmsg.NewDeleteACLsResponseResult()
			if bad[i] != nil {
				res.ErrorCode = kerr.InvalidRequest.Code
				res.ErrorMessage = kmsg.StringPtr(bad[i].Error())
				resp.Results = append(resp.Results, res)
				continue
			}
			deleted, err := c.srv.cfg.ACLs.DeleteACLs(ctx, f)
			if err != nil {
				c.aclLog(ctx, r).WithError(err).WithField("filter", i).Warn("cannot delete ACL bindings")
				res.ErrorCode = aclErrorCode(err)
				res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("delete ACL bindings: %v", err))
			}
			res.MatchingACLs = deletedACLs(deleted)
			all = append(all, deleted...)
			resp.Results = append(resp.Results, res)
		}
		if len(all) > 0 {
			c.aclLog(ctx, r).WithField("bindings", bindingStrings(all)).Info("ACL bindings deleted")
		}
		return resp, nil
	})
}

// aclLog is the audit logger of an ACL change: the request's fields and
// the connection's principal, when it has one.
func (c *conn) aclLog(ctx context.Context, r *request) *logrus.Entry {
	log := c.srv.log.WithFields(c.fields(&r.header))
	if p, ok := PrincipalFrom(ctx); ok {
		log = log.WithField("principal", p.String())
	}
	return log
}

func bindingStrings(bindings []acl.Binding) []string {
	out := make([]string, len(bindings))
	for i, b := range bindings {
		out[i] = b.String()
	}
	return out
}
