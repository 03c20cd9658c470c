// sasl_users.go: DescribeUserScramCredentials (key 50, v0) and
// AlterUserScramCredentials (key 51, v0), served when SASL is enabled with
// Config.SASL.Users set (kadm's DescribeUserSCRAMs / AlterUserSCRAMs,
// kafka-configs --alter --add-config 'SCRAM-SHA-512=[...]').
//
// Describe: the named users (null: every user with a credential), each
// with its mechanisms and iteration counts; a named user without any is
// RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE.
//
// Alter: upsertions carry the salt and salted password (the client salts,
// never sends the password); the host stores the derived StoredKey and
// ServerKey. One result per user, in order of appearance: a user with an
// invalid operation has none of its operations applied — empty name,
// iterations outside 4096-16384 or an empty salt/salted password:
// UNACCEPTABLE_CREDENTIAL; unknown mechanism: UNSUPPORTED_SASL_MECHANISM;
// a (user, mechanism) twice: DUPLICATE_RESOURCE. Deleting a credential
// that does not exist: RESOURCE_NOT_FOUND. With Config.Authorizer,
// Describe needs DESCRIBE and Alter ALTER on the cluster (authorize.go).
//
// Error codes: RESOURCE_NOT_FOUND (91), DUPLICATE_RESOURCE (92),
// UNACCEPTABLE_CREDENTIAL (93), UNSUPPORTED_SASL_MECHANISM (33),
// UNKNOWN_SERVER_ERROR (-1) when the store fails.

package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 50, servedMin: 0, servedMax: 0, advertisedMin: 0, advertisedMax: 0,
		handle: handleDescribeUserScram, enabled: scramUsersEnabled})
	register(api{key: 51, servedMin: 0, servedMax: 0, advertisedMin: 0, advertisedMax: 0,
		handle: handleAlterUserScram, enabled: scramUsersEnabled})
}

func handleDescribeUserScram(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		var names []string
		seen := map[string]int{}
		if req.Users != nil {
			names = []string{}
			for _, u := range req.Users {
				if seen[u.Name]++; seen[u.Name] == 1 {
					names = append(names, u.Name)
				}
			}
		}
		users, err := c.srv.cfg.SASL.Users.DescribeScramUsers(ctx, names)
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Error())
			return resp, nil
		}
		byName := map[string]ScramUserInfo{}
		for _, u := range users {
			byName[u.Name] = u
		}
		if names == nil {
			for _, u := range users {
				names = append(names, u.Name)
			}
		}
		for _, n := range names {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = n
			u, ok := byName[n]
			switch {
			case seen[n] > 1:
				res.ErrorCode = kerr.DuplicateResource.Code
			case !ok || len(u.Credentials) == 0:
				res.ErrorCode = kerr.ResourceNotFound.Code
				res.ErrorMessage = kmsg.StringPtr("no SCRAM credential for user " + n)
			default:
				for _, ci := range u.Credentials {
					info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					info.Mechanism, info.Iterations = int8(ci.Mechanism), ci.Iterations
					res.CredentialInfos = append(res.CredentialInfos, info)
				}
			}
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	})
}

// scramOp is one operation of an AlterUserScramCredentials request.
type scramOp struct {
	user   string
	mech   ScramMechanism
	delete bool
	cred   ScramCredential // upsert
}

// planScramAlter validates req: the operations to apply, by user in order
// of appearance, and the users refused with their error code. Pure.
func planScramAlter(req *kmsg.AlterUserSCRAMCredentialsRequest) (order []string, ops map[string][]scramOp, refused map[string]int16) {
	ops, refused = map[string][]scramOp{}, map[string]int16{}
	seen := map[string]bool{}
	type key struct {
		user string
		mech int8
	}
	dup := map[key]bool{}
	note := func(user string, mech int8) bool {
		if !seen[user] {
			seen[user] = true
			order = append(order, user)
		}
		if _, bad := refused[user]; bad {
			return false
		}
		if dup[key{user, mech}] {
			refused[user] = kerr.DuplicateResource.Code
			return false
		}
		dup[key{user, mech}] = true
		switch {
		case user == "":
			refused[user] = kerr.UnacceptableCredential.Code
		case !ScramMechanism(mech).Valid():
			refused[user] = kerr.UnsupportedSaslMechanism.Code
		default:
			return true
		}
		return false
	}
	for _, d := range req.Deletions {
		if note(d.Name, d.Mechanism) {
			ops[d.Name] = append(ops[d.Name], scramOp{user: d.Name, mech: ScramMechanism(d.Mechanism), delete: true})
		}
	}
	for _, u := range req.Upsertions {
		if !note(u.Name, u.Mechanism) {
			continue
		}
		if u.Iterations < MinScramIterations || u.Iterations > MaxScramIterations || len(u.Salt) == 0 || len(u.SaltedPassword) == 0 {
			refused[u.Name] = kerr.UnacceptableCredential.Code
			continue
		}
		m := ScramMechanism(u.Mechanism)
		ops[u.Name] = append(ops[u.Name], scramOp{user: u.Name, mech: m, cred: ScramCredentialFromSalted(m, u.Salt, u.SaltedPassword, u.Iterations)})
	}
	for u := range refused {
		delete(ops, u)
	}
	return order, ops, refused
}

func handleAlterUserScram(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	order, ops, refused := planScramAlter(req)
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		users := c.srv.cfg.SASL.Users
		for _, u := range order {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = u
			if code, bad := refused[u]; bad {
				res.ErrorCode = code
				resp.Results = append(resp.Results, res)
				continue
			}
			for _, op := range ops[u] {
				var err error
				if op.delete {
					err = users.DeleteScramCredential(ctx, op.user, op.mech)
				} else {
					err = users.UpsertScramCredential(ctx, op.user, op.mech, op.cred)
				}
				if err != nil {
					res.ErrorCode = kerr.UnknownServerError.Code
					if errors.Is(err, ErrUnknownScramUser) {
						res.ErrorCode = kerr.ResourceNotFound.Code
					}
					res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("%s %s: %v", opName(op), op.mech, err))
					break
				}
			}
			if res.ErrorCode == 0 {
				c.srv.log.WithFields(c.fields(&r.header)).WithField("user", u).Info("SCRAM credentials altered")
			}
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	})
}

func opName(op scramOp) string {
	if op.delete {
		return "delete"
	}
	return "upsert"
}
