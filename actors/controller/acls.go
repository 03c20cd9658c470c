// acls.go: the Kafka listener's ACL bindings and SCRAM credentials as
// controller metadata (issue 16), as Kafka's KRaft brokers forward
// CreateAcls, DeleteAcls and AlterUserScramCredentials to the controller.
// The hosts' Kafka listeners send these requests here (actors/client's
// CreateACLs, DeleteACLs, AlterScramCredentials); every host's ACL cache
// follows the bindings through its etcd watch.
//
//   - CreateAclsRequest: one result per binding. An invalid binding is
//     refused on its own (INVALID_REQUEST); the valid ones are written
//     together (cluster.FencedACLStore.AddACLsFenced).
//   - DeleteAclsRequest: one result per filter (INVALID_REQUEST for a bad
//     one), each DeleteACLsFenced, with the bindings it deleted.
//   - AlterScramCredentialsRequest: deletions, then upsertions, each a
//     fenced compare-and-swap of its user (FencedScramStore). A bad user
//     name, mechanism or credential, or a (user, mechanism) named twice in
//     the request, is INVALID_REQUEST and changes nothing; deleting a
//     credential that does not exist is INVALID_REQUEST with not_found.
//   - DescribeAclsRequest, DescribeScramUsersRequest: reads, answered by
//     any controller actor (elected or standby) from the store, off the
//     mailbox, without forwarding. Keys are never answered, only
//     mechanisms and iteration counts.
//
// The writes are admin jobs of the elected controller (a standby forwards
// them, as the topic admin requests): fenced on its epoch, so a write
// after the controller lost its election fails with NOT_CONTROLLER and
// changes nothing. When the first write of a request is refused so,
// nothing was written and the whole answer is NOT_CONTROLLER, which the
// senders retry. A request with more than MaxSecurityItems bindings,
// filters, credentials or names is refused whole (INVALID_REQUEST) on
// arrival.

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/internal/acl"
	"github.com/actorlog/actorlog/messages"
)

// MaxSecurityItems bounds the bindings of a CreateAclsRequest, the
// filters of a DeleteAclsRequest, the upsertions and deletions of an
// AlterScramCredentialsRequest together, and the users a
// DescribeScramUsersRequest names.
const MaxSecurityItems = 1000

// errNoSecurityStore means the controller has no store for ACLs or SCRAM
// credentials (Config.ACLs / Config.Scram unset and Config.Store keeps
// none): a configuration fault, not the request's.
var errNoSecurityStore = errors.New("controller: no ACL/SCRAM credential store configured")

// aclStore is Config.ACLs, else Config.Store when it keeps ACLs.
func (c Config) aclStore() (cluster.FencedACLStore, error) {
	if c.ACLs != nil {
		return c.ACLs, nil
	}
	if s, ok := c.Store.(cluster.FencedACLStore); ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: ACL bindings", errNoSecurityStore)
}

// scramStore is Config.Scram, else Config.Store when it keeps SCRAM
// credentials.
func (c Config) scramStore() (cluster.FencedScramStore, error) {
	if c.Scram != nil {
		return c.Scram, nil
	}
	if s, ok := c.Store.(cluster.FencedScramStore); ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: SCRAM credentials", errNoSecurityStore)
}

// securityItems returns the item count of an ACL or SCRAM request.
func securityItems(msg proto.Message) int {
	switch m := msg.(type) {
	case *messages.CreateAclsRequest:
		return len(m.Bindings)
	case *messages.DeleteAclsRequest:
		return len(m.Filters)
	case *messages.AlterScramCredentialsRequest:
		return len(m.Upsertions) + len(m.Deletions)
	case *messages.DescribeScramUsersRequest:
		return len(m.Users)
	}
	return 0
}

// onSecurityRequest admits an ACL or SCRAM request: one too large is
// refused at once; a read is served here, whatever the role; a write goes
// through the sender check to the role (served when elected, forwarded
// when standing by).
func (c *Controller) onSecurityRequest(ctx actor.Context, msg proto.Message) {
	req := request{msg: msg, sender: ctx.Sender(), corr: msg.(correlated).GetCorrelationId()}
	if n := securityItems(msg); n > MaxSecurityItems {
		c.logger.WithFields(logrus.Fields{"request": fmt.Sprintf("%T", msg), "items": n, "sender": req.sender}).Info("ACL/SCRAM request refused: too many items")
		c.respond(ctx, req, messages.ErrorReply(msg, req.corr, messages.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			fmt.Sprintf("%d items in one request: at most %d", n, MaxSecurityItems)))
		return
	}
	switch msg.(type) {
	case *messages.DescribeAclsRequest, *messages.DescribeScramUsersRequest:
		c.serveSecurityRead(ctx, req)
	default:
		c.authorizeInternal(ctx, req)
	}
}

// serveSecurityRead answers a read from the store on a goroutine that
// touches no actor state.
func (c *Controller) serveSecurityRead(ctx actor.Context, req request) {
	if req.sender == nil {
		return
	}
	root, cfg, logger, parent := ctx.ActorSystem().Root, c.cfg, c.logger, c.jobs
	go func() {
		rctx, cancel := context.WithTimeout(parent, cfg.RequestTimeout)
		defer cancel()
		w := &worker{cfg: cfg, logger: logger}
		var resp proto.Message
		switch m := req.msg.(type) {
		case *messages.DescribeAclsRequest:
			resp = w.describeACLs(rctx, m)
		case *messages.DescribeScramUsersRequest:
			resp = w.describeScramUsers(rctx, m)
		}
		root.Send(req.sender, resp)
	}()
}

// onSecurityWrite runs an ACL or SCRAM write as a job of the admin lane.
func (e *elected) onSecurityWrite(ctx actor.Context, req request) {
	e.submit(ctx, laneAdmin, "", req, func(actor.Context) work {
		w := e.worker()
		return func(ctx context.Context) func(actor.Context) {
			rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
			defer cancel()
			var resp proto.Message
			switch m := req.msg.(type) {
			case *messages.CreateAclsRequest:
				resp = w.createACLs(rctx, m)
			case *messages.DeleteAclsRequest:
				resp = w.deleteACLs(rctx, m)
			case *messages.AlterScramCredentialsRequest:
				resp = w.alterScram(rctx, m)
			default:
				resp = messages.ErrorReply(req.msg, req.corr, messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("not an ACL/SCRAM write: %T", req.msg))
			}
			return func(actx actor.Context) { e.c.respond(actx, req, resp) }
		}
	})
}

// securityCode maps a store error of an ACL or SCRAM request to its code.
func securityCode(err error) messages.ErrorCode {
	switch {
	case errors.Is(err, acl.ErrInvalidBinding), errors.Is(err, cluster.ErrInvalidScramCredential), errors.Is(err, cluster.ErrUnknownScramUser):
		return messages.ErrorCode_ERROR_CODE_INVALID_REQUEST
	}
	return codeFor(err)
}

// fenceTally follows the writes of one request: once the fence refused
// the first of them, nothing was written and the request as a whole is
// NOT_CONTROLLER.
type fenceTally struct {
	wrote   bool
	refused error // the fence's refusal of the first write
}

func (t *fenceTally) note(err error) {
	switch {
	case err == nil:
		t.wrote = true
	case errors.Is(err, cluster.ErrNotController) && !t.wrote && t.refused == nil:
		t.refused = err
	}
}

// notController reports whether the whole request is NOT_CONTROLLER.
func (t *fenceTally) notController() bool { return !t.wrote && t.refused != nil }

func (w *worker) createACLs(ctx context.Context, m *messages.CreateAclsRequest) *messages.CreateAclsResponse {
	resp := &messages.CreateAclsResponse{CorrelationId: m.CorrelationId, Results: make([]*messages.AclResult, len(m.Bindings))}
	store, err := w.cfg.aclStore()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error()
		resp.Results = nil
		return resp
	}
	var valid []acl.Binding
	var at []int
	for i, pb := range m.Bindings {
		b := messages.BindingFromProto(pb)
		if err := b.Validate(); err != nil {
			resp.Results[i] = &messages.AclResult{ErrorCode: messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, ErrorMessage: err.Error()}
			continue
		}
		resp.Results[i] = &messages.AclResult{}
		valid, at = append(valid, b), append(at, i)
	}
	if len(valid) == 0 {
		return resp
	}
	if err := store.AddACLsFenced(ctx, w.fence, valid); err != nil {
		w.logger.WithError(err).WithField("bindings", len(valid)).Warn("ACL bindings not created")
		if errors.Is(err, cluster.ErrNotController) {
			// The only write of the request: nothing was written.
			return notControllerACLs(resp, err)
		}
		for _, i := range at {
			resp.Results[i] = &messages.AclResult{ErrorCode: securityCode(err), ErrorMessage: err.Error()}
		}
		return resp
	}
	w.logger.WithFields(logrus.Fields{"bindings": bindingStrings(valid), "controller_epoch": w.fence.Epoch}).Info("ACL bindings created")
	return resp
}

// notControllerACLs answers a CreateAcls whose write the fence refused.
func notControllerACLs(resp *messages.CreateAclsResponse, err error) *messages.CreateAclsResponse {
	resp.ErrorCode, resp.ErrorMessage, resp.Results = messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, err.Error(), nil
	return resp
}

func (w *worker) deleteACLs(ctx context.Context, m *messages.DeleteAclsRequest) *messages.DeleteAclsResponse {
	resp := &messages.DeleteAclsResponse{CorrelationId: m.CorrelationId}
	store, err := w.cfg.aclStore()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error()
		return resp
	}
	var tally fenceTally
	var all []acl.Binding
	for i, pf := range m.Filters {
		res := &messages.DeleteAclsResult{}
		resp.Results = append(resp.Results, res)
		f, err := messages.FilterFromProto(pf)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, err.Error()
			continue
		}
		deleted, err := store.DeleteACLsFenced(ctx, w.fence, f)
		res.Deleted = messages.BindingsToProto(deleted)
		all = append(all, deleted...)
		if len(deleted) > 0 {
			tally.note(nil)
		}
		if err != nil {
			w.logger.WithError(err).WithField("filter", i).Warn("ACL bindings not deleted")
			res.ErrorCode, res.ErrorMessage = securityCode(err), err.Error()
			tally.note(err)
		}
	}
	if tally.notController() {
		return &messages.DeleteAclsResponse{CorrelationId: m.CorrelationId, ErrorCode: messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, ErrorMessage: tally.refused.Error()}
	}
	if len(all) > 0 {
		w.logger.WithFields(logrus.Fields{"bindings": bindingStrings(all), "controller_epoch": w.fence.Epoch}).Info("ACL bindings deleted")
	}
	return resp
}

func (w *worker) describeACLs(ctx context.Context, m *messages.DescribeAclsRequest) *messages.DescribeAclsResponse {
	resp := &messages.DescribeAclsResponse{CorrelationId: m.CorrelationId}
	f, err := messages.FilterFromProto(m.Filter)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_INVALID_REQUEST, err.Error()
		return resp
	}
	store, err := w.cfg.aclStore()
	if err == nil {
		var bs []acl.Binding
		if bs, err = store.ListACLs(ctx, f); err == nil {
			resp.Bindings = messages.BindingsToProto(bs)
			return resp
		}
	}
	w.logger.WithError(err).Warn("cannot list ACL bindings")
	resp.ErrorCode, resp.ErrorMessage = securityCode(err), err.Error()
	return resp
}

// scramKey is one (user, mechanism) of an AlterScramCredentialsRequest.
type scramKey struct{ user, mech string }

// checkScramMechanism refuses a mechanism other than SCRAM-SHA-256/512.
func checkScramMechanism(mech string) error {
	if mech != cluster.ScramSHA256 && mech != cluster.ScramSHA512 {
		return fmt.Errorf("%w: mechanism %q: want %s or %s", cluster.ErrInvalidScramCredential, mech, cluster.ScramSHA256, cluster.ScramSHA512)
	}
	return nil
}

func (w *worker) alterScram(ctx context.Context, m *messages.AlterScramCredentialsRequest) *messages.AlterScramCredentialsResponse {
	resp := &messages.AlterScramCredentialsResponse{CorrelationId: m.CorrelationId}
	store, err := w.cfg.scramStore()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = messages.ErrorCode_ERROR_CODE_UNKNOWN_SERVER_ERROR, err.Error()
		return resp
	}
	named := make(map[scramKey]int, securityItems(m))
	for _, d := range m.Deletions {
		named[scramKey{d.User, d.Mechanism}]++
	}
	for _, u := range m.Upsertions {
		named[scramKey{u.User, u.Mechanism}]++
	}
	// check refuses what no write may be attempted for.
	check := func(user, mech string) error {
		if err := cluster.ValidateScramUserName(user); err != nil {
			return err
		}
		if err := checkScramMechanism(mech); err != nil {
			return err
		}
		if named[scramKey{user, mech}] > 1 {
			return fmt.Errorf("%w: %s of user %q is named more than once in the request", cluster.ErrInvalidScramCredential, mech, user)
		}
		return nil
	}
	var tally fenceTally
	result := func(user, mech string, err error) *messages.ScramResult {
		r := &messages.ScramResult{User: user, Mechanism: mech}
		if err != nil {
			r.ErrorCode, r.ErrorMessage = securityCode(err), err.Error()
			r.NotFound = errors.Is(err, cluster.ErrUnknownScramUser)
		}
		return r
	}
	for _, d := range m.Deletions {
		err := check(d.User, d.Mechanism)
		if err == nil {
			err = store.DeleteScramCredentialFenced(ctx, w.fence, d.User, d.Mechanism)
			tally.note(err)
			w.logScram("deleted", d.User, d.Mechanism, err)
		}
		resp.DeletionResults = append(resp.DeletionResults, result(d.User, d.Mechanism, err))
	}
	for _, u := range m.Upsertions {
		err := check(u.User, u.Mechanism)
		if err == nil {
			cred := cluster.ScramCredential{Salt: u.Salt, Iterations: u.Iterations, StoredKey: u.StoredKey, ServerKey: u.ServerKey}
			err = store.PutScramCredentialFenced(ctx, w.fence, u.User, u.Mechanism, cred)
			tally.note(err)
			w.logScram("set", u.User, u.Mechanism, err)
		}
		resp.UpsertionResults = append(resp.UpsertionResults, result(u.User, u.Mechanism, err))
	}
	if tally.notController() {
		return &messages.AlterScramCredentialsResponse{CorrelationId: m.CorrelationId, ErrorCode: messages.ErrorCode_ERROR_CODE_NOT_CONTROLLER, ErrorMessage: tally.refused.Error()}
	}
	return resp
}

// logScram logs one SCRAM write (never the credential).
func (w *worker) logScram(what, user, mech string, err error) {
	log := w.logger.WithFields(logrus.Fields{"user": user, "mechanism": mech, "controller_epoch": w.fence.Epoch})
	switch {
	case err == nil:
		log.Info("SCRAM credential " + what)
	case errors.Is(err, cluster.ErrUnknownScramUser), errors.Is(err, cluster.ErrInvalidScramCredential):
		log.WithError(err).Info("SCRAM credential not " + what)
	default:
		log.WithError(err).Warn("SCRAM credential not " + what)
	}
}

func (w *worker) describeScramUsers(ctx context.Context, m *messages.DescribeScramUsersRequest) *messages.DescribeScramUsersResponse {
	resp := &messages.DescribeScramUsersResponse{CorrelationId: m.CorrelationId}
	fail := func(err error) *messages.DescribeScramUsersResponse {
		w.logger.WithError(err).Warn("cannot list SCRAM users")
		resp.ErrorCode, resp.ErrorMessage, resp.Users = codeFor(err), err.Error(), nil
		return resp
	}
	store, err := w.cfg.scramStore()
	if err != nil {
		return fail(err)
	}
	var users []cluster.ScramUser
	if len(m.Users) == 0 {
		if users, err = store.ListScramUsers(ctx); err != nil {
			return fail(err)
		}
	} else {
		seen := make(map[string]bool, len(m.Users))
		for _, name := range m.Users {
			if seen[name] {
				continue
			}
			seen[name] = true
			u, ok, err := store.GetScramUser(ctx, name)
			if err != nil {
				return fail(err)
			}
			if ok {
				users = append(users, u)
			}
		}
	}
	slices.SortFunc(users, func(a, b cluster.ScramUser) int { return strings.Compare(a.Name, b.Name) })
	for _, u := range users {
		info := &messages.ScramUserInfo{User: u.Name}
		for _, mech := range u.Mechanisms() {
			info.Mechanisms = append(info.Mechanisms, &messages.ScramMechanismInfo{Mechanism: mech, Iterations: u.Credentials[mech].Iterations})
		}
		resp.Users = append(resp.Users, info)
	}
	return resp
}

// bindingStrings describes bindings for logs.
func bindingStrings(bs []acl.Binding) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.String()
	}
	return out
}
