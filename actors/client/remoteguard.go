// remoteguard.go: the gRPC interceptors that stand between the network and
// protoactor's remote endpoint (DESIGN §10). protoactor's Remoting server
// trusts its peers: ListProcesses and GetProcessDiagnostics
// panic("implement me"), the endpoint reader indexes a MessageBatch's
// tables with unchecked wire integers and resolves type names without
// checking them, and it hands system messages (Stop, Watch, Terminated, ...)
// and PoisonPill from the wire to local actors. grpc-go does not recover
// handler panics, so each of these ended the process or stopped an actor
// for good.
//
// The guard, installed by RemoteConfig on every process's server:
//
//   - recovers a panic in any handler: logged, counted, codes.Internal;
//   - answers every unary method of the Remoting service (ListProcesses,
//     GetProcessDiagnostics) with codes.Unimplemented, without calling
//     protoactor;
//   - screens each message of the Receive stream before the endpoint
//     reader sees it:
//       - MessageBatch: a batch beyond the size limits, or with nil
//         entries, ends the stream with codes.InvalidArgument. Otherwise
//         each envelope whose target, sender or type index is out of
//         range, whose serializer is not protobuf (id 0), whose type name
//         the proto registry does not know, or whose type is denied from
//         the wire (deniedFromWire) is removed; the batch's other envelopes are delivered, and a batch
//         left empty is skipped. Dropping single envelopes keeps a peer's
//         good messages when one of its envelopes is refused (a remote
//         Watch, say); the lookup tables stay as they are, so the remaining
//         indexes keep their meaning.
//         The envelopes kept then go through authorizeBatch
//         (remoteauth.go): with TLS, host-only requests from a principal
//         that may not send them are removed too, and every envelope
//         left is stamped with the connection's principal
//         (PrincipalHeader, remotetls.go).
//       - ConnectRequest: the first ServerConnection of a stream goes
//         through (strings beyond the limits end the stream with
//         InvalidArgument); repeats and other connection types are skipped.
//       - anything else (DisconnectRequest, ConnectResponse, an empty
//         message): skipped; protoactor would only log it, per message.
//
// Drops are counted (RemoteGuardStats) and logged at warn, at most one line
// a second per reason, so a flood cannot fill the disk.
//
// Not covered: a payload that does not unmarshal into its (known, allowed)
// type still makes protoactor end that stream with an error (checking it
// here would decode every message twice), and a target PID naming another
// host is forwarded there by protoactor as before.

package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/actorlog/actorlog/cluster/netlimit"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// Limits on one message of the Receive stream; a message beyond them ends
// the stream with codes.InvalidArgument. protoactor's writers send at most
// the endpoint-writer batch size (64 here) envelopes per batch, each table
// holding at most one entry per envelope.
const (
	// maxBatchEnvelopes bounds a batch's envelopes and each of its tables.
	maxBatchEnvelopes = 1 << 14
	// maxTypeNameLen bounds a type name (a protobuf full name).
	maxTypeNameLen = 512
	// maxPIDFieldLen bounds a PID's address and id, and the strings of a
	// connect request.
	maxPIDFieldLen = 4096
	// maxHeaderEntries bounds an envelope's header map.
	maxHeaderEntries = 1024
)

// protoSerializerID is the index of protoactor's protobuf serializer, the
// only one the guard accepts: protoactor's endpoint writers always send
// serializer 0 (it registers the protobuf serializer first, JSON second),
// and every message that crosses hosts is a protobuf message (DESIGN §8).
const protoSerializerID = 0

// Reasons a message or envelope is refused; also the rate-limiting keys of
// the warn lines (a fixed set, so the limiter's map stays small).
const (
	reasonTarget        = "target index out of range"
	reasonSender        = "sender index out of range"
	reasonLocalSender   = "sender claims to be in this process"
	reasonTypeID        = "type index out of range"
	reasonSerializer    = "serializer not accepted"
	reasonUnknownType   = "unknown message type"
	reasonDeniedType    = "system or auto-receive message from the wire"
	reasonMalformed     = "malformed message"
	reasonUnexpected    = "unexpected message on the receive stream"
	reasonUnimplemented = "unimplemented remoting call"
	reasonPanic         = "handler panic"
)

// errMalformed marks a Receive-stream message that breaks the limits as a
// whole; the stream is ended with codes.InvalidArgument.
var errMalformed = errors.New("client: malformed remote message")

// RemoteGuardCounters counts what the remote guard refused, process-wide
// since start. Safe to read at any time (RemoteGuardStats).
type RemoteGuardCounters struct {
	// DroppedBatches counts batches from which at least one envelope was
	// removed.
	DroppedBatches uint64
	// DroppedEnvelopes counts envelopes removed from batches.
	DroppedEnvelopes uint64
	// SkippedMessages counts other Receive-stream messages not passed on
	// (repeated or client connect requests, disconnect requests, empty
	// messages, batches with no envelope left).
	SkippedMessages uint64
	// RejectedStreams counts streams ended with codes.InvalidArgument.
	RejectedStreams uint64
	// RejectedCalls counts unary calls answered codes.Unimplemented.
	RejectedCalls uint64
	// Panics counts handler panics recovered.
	Panics uint64
}

var guardCounters struct {
	droppedBatches, droppedEnvelopes, skippedMessages atomic.Uint64
	rejectedStreams, rejectedCalls, panics            atomic.Uint64
}

// RemoteGuardStats returns the remote guard's counters, for metrics.
func RemoteGuardStats() RemoteGuardCounters {
	return RemoteGuardCounters{
		DroppedBatches:   guardCounters.droppedBatches.Load(),
		DroppedEnvelopes: guardCounters.droppedEnvelopes.Load(),
		SkippedMessages:  guardCounters.skippedMessages.Load(),
		RejectedStreams:  guardCounters.rejectedStreams.Load(),
		RejectedCalls:    guardCounters.rejectedCalls.Load(),
		Panics:           guardCounters.panics.Load(),
	}
}

// Full gRPC method names of protoactor's Remoting service, taken from its
// service descriptor.
var (
	receiveMethod = "/" + remote.Remoting_ServiceDesc.ServiceName + "/" + remote.Remoting_ServiceDesc.Streams[0].StreamName
	// unaryRemoting holds every unary Remoting method: protoactor
	// implements none of them (ListProcesses, GetProcessDiagnostics).
	unaryRemoting = func() map[string]bool {
		m := make(map[string]bool)
		for _, md := range remote.Remoting_ServiceDesc.Methods {
			m["/"+remote.Remoting_ServiceDesc.ServiceName+"/"+md.MethodName] = true
		}
		return m
	}()
)

// deniedFromWire reports whether a message of m's Go type must not be
// delivered from the network: protoactor system messages (Stop, Watch,
// Unwatch, Terminated, ...) go straight to an actor's system mailbox,
// auto-receive messages (PoisonPill) stop it, a RootSerialized message is
// unpacked by protoactor into further, unchecked envelopes, and a
// MessageBatch is unpacked by the mailbox.
func deniedFromWire(m any) bool {
	switch m.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage, remote.RootSerialized, actor.MessageBatch:
		return true
	}
	return false
}

// allowedFromWire reports whether a message type may arrive from the
// network at all: actorlog's own messages (package actorlog.messages, the
// only ones its processes send each other, DESIGN §8) and protoactor's
// DeadLetterResponse (the answer to a request for an actor that is gone).
// Everything else protoactor would accept — its cluster's identity
// activations (each starting a "prototopic" actor), gossip and pub-sub
// messages, none of which actorlog uses — is refused.
func allowedFromWire(name string) bool {
	return strings.HasPrefix(name, "actorlog.") || name == "actor.DeadLetterResponse"
}

// typeVerdicts caches, per protobuf full name found in the registry,
// reasonDeniedType or "" (allowed). Bounded by the registry's size.
var typeVerdicts sync.Map

// checkTypeName returns why a message named name must not be delivered
// through the protobuf serializer, or "" when it may.
func checkTypeName(name string) string {
	if v, ok := typeVerdicts.Load(name); ok {
		return v.(string)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return reasonUnknownType
	}
	verdict := ""
	if deniedFromWire(mt.New().Interface()) || !allowedFromWire(name) {
		verdict = reasonDeniedType
	}
	typeVerdicts.Store(name, verdict)
	return verdict
}

// deniedTypeNames lists the registered protobuf messages the guard refuses
// from the wire (deniedFromWire), sorted: the deny list, derived from the
// Go types behind the registry's names.
func deniedTypeNames() []string {
	var names []string
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if deniedFromWire(mt.New().Interface()) {
			names = append(names, string(mt.Descriptor().FullName()))
		}
		return true
	})
	sort.Strings(names)
	return names
}

// checkPID checks one entry of a batch's target or sender table.
func checkPID(pid *actor.PID) error {
	if pid == nil {
		return errors.New("nil PID")
	}
	if len(pid.Address) > maxPIDFieldLen || len(pid.Id) > maxPIDFieldLen {
		return fmt.Errorf("PID of %d+%d bytes", len(pid.Address), len(pid.Id))
	}
	return nil
}

// screenBatch removes from b.Envelopes, in place, every envelope the
// endpoint reader must not see, and returns how many it removed per reason
// (the first reason found for each). When b as a whole breaks the limits
// it returns an error wrapping errMalformed and leaves b unchanged.
// b's tables are not touched, so the kept envelopes' indexes stay valid.
//
// self is this process's own advertised address ("" when unknown): a sender
// that came over the wire is never this process, so an envelope whose
// sender claims it is a forgery aimed at the internal-request checks
// (cluster.SenderIsHost), which take such a sender for the receiver's own
// host.
func screenBatch(b *remote.MessageBatch, self string) (map[string]int, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil batch", errMalformed)
	}
	if len(b.Envelopes) > maxBatchEnvelopes || len(b.Targets) > maxBatchEnvelopes ||
		len(b.Senders) > maxBatchEnvelopes || len(b.TypeNames) > maxBatchEnvelopes {
		return nil, fmt.Errorf("%w: batch of %d envelopes, %d targets, %d senders, %d types (limit %d each)",
			errMalformed, len(b.Envelopes), len(b.Targets), len(b.Senders), len(b.TypeNames), maxBatchEnvelopes)
	}
	for i, pid := range b.Targets {
		if err := checkPID(pid); err != nil {
			return nil, fmt.Errorf("%w: target %d: %w", errMalformed, i, err)
		}
	}
	for i, pid := range b.Senders {
		if err := checkPID(pid); err != nil {
			return nil, fmt.Errorf("%w: sender %d: %w", errMalformed, i, err)
		}
	}
	for i, e := range b.Envelopes {
		if e == nil {
			return nil, fmt.Errorf("%w: nil envelope %d", errMalformed, i)
		}
		if n := len(e.GetMessageHeader().GetHeaderData()); n > maxHeaderEntries {
			return nil, fmt.Errorf("%w: envelope %d has %d header entries (limit %d)", errMalformed, i, n, maxHeaderEntries)
		}
	}
	types := make([]string, len(b.TypeNames))
	for i, name := range b.TypeNames {
		if len(name) > maxTypeNameLen {
			return nil, fmt.Errorf("%w: type name %d of %d bytes (limit %d)", errMalformed, i, len(name), maxTypeNameLen)
		}
		types[i] = checkTypeName(name)
	}

	var dropped map[string]int
	kept := b.Envelopes[:0]
	for _, e := range b.Envelopes {
		if reason := checkEnvelope(b, e, types, self); reason != "" {
			if dropped == nil {
				dropped = make(map[string]int)
			}
			dropped[reason]++
			continue
		}
		if aliasedType(b.TypeNames[e.TypeId]) {
			e.SerializerId = aliasSerializerID // records not copied again (aliasdecode.go)
		}
		kept = append(kept, e)
	}
	clear(b.Envelopes[len(kept):])
	b.Envelopes = kept
	return dropped, nil
}

// checkEnvelope returns why e must not reach the endpoint reader, or "".
// types holds checkTypeName's verdict for each of b.TypeNames. Sender 0
// means no sender; sender k is b.Senders[k-1] (protoactor's
// deserializeSender).
func checkEnvelope(b *remote.MessageBatch, e *remote.MessageEnvelope, types []string, self string) string {
	switch {
	case e.Target < 0 || int(e.Target) >= len(b.Targets):
		return reasonTarget
	case e.Sender < 0 || int(e.Sender) > len(b.Senders):
		return reasonSender
	case e.TypeId < 0 || int(e.TypeId) >= len(b.TypeNames):
		return reasonTypeID
	case e.SerializerId != protoSerializerID:
		return reasonSerializer
	case e.Sender > 0 && localSenderAddress(b.Senders[e.Sender-1].GetAddress(), self):
		return reasonLocalSender
	}
	return types[e.TypeId]
}

// localSenderAddress reports whether a sender PID's address names no
// process on the network — empty, or protoactor's address of PIDs in a
// system without remote ("nonhost") — or names this process (self). The
// internal-request checks (cluster.SenderIsHost) take such a sender for
// the receiver itself, and a sender that did come over the wire always has
// an address of its own it can be answered at, so an envelope claiming one
// of these is a forgery.
func localSenderAddress(addr, self string) bool {
	return addr == "" || addr == "nonhost" || self != "" && addr == self
}

// remoteGuard holds the interceptors' logger and log rate limiter. Safe
// for concurrent use.
type remoteGuard struct {
	log   *logrus.Entry
	limit *netlimit.LogLimiter
	self  string // this process's advertised address; "" when unknown
	// tls: the server speaks TLS only, so connections' principals are
	// verified and host-only requests are enforced (remoteauth.go).
	tls bool
	// hostName maps a host id to its name for the host-only checks; nil:
	// ids are not checked (WithHostNames).
	hostName func(int32) (string, bool)
}

func newRemoteGuard(log *logrus.Entry, self string) *remoteGuard {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	return &remoteGuard{log: log.WithField("component", "remoteguard"), limit: &netlimit.LogLimiter{Every: time.Second}, self: self}
}

// unary refuses the Remoting service's unary methods and recovers panics
// in any other unary handler.
func (g *remoteGuard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	if unaryRemoting[info.FullMethod] {
		guardCounters.rejectedCalls.Add(1)
		g.report(ctx, logrus.WarnLevel, reasonUnimplemented, logrus.Fields{"method": info.FullMethod})
		return nil, status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
	}
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, g.recovered(ctx, info.FullMethod, p)
		}
	}()
	return handler(ctx, req)
}

// stream screens the Receive stream's messages and recovers panics in any
// stream handler.
func (g *remoteGuard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx := ss.Context()
	defer func() {
		if p := recover(); p != nil {
			err = g.recovered(ctx, info.FullMethod, p)
		}
	}()
	if info.FullMethod == receiveMethod {
		ss = g.guardStream(ss, info.FullMethod)
	}
	return handler(srv, ss)
}

// guardStream wraps a Receive stream: its messages are screened, and
// stamped with the principal of the stream's connection (anonymous
// without TLS, whatever the connection claims).
func (g *remoteGuard) guardStream(ss grpc.ServerStream, method string) *guardedStream {
	p := anonymous
	if g.tls {
		if pe, ok := peer.FromContext(ss.Context()); ok {
			p = connPrincipal(pe.AuthInfo)
		}
	}
	header := map[string]string{PrincipalHeader: p.String()}
	if pe, ok := peer.FromContext(ss.Context()); ok && pe.Addr != nil {
		header[PeerHostHeader] = pe.Addr.String() // for ACLs naming a host (remoteacl.go)
	}
	return &guardedStream{
		ServerStream: ss, guard: g, method: method, principal: p,
		header: &remote.MessageHeader{HeaderData: header},
	}
}

// recovered counts and logs a handler panic and returns the status the
// caller gets.
func (g *remoteGuard) recovered(ctx context.Context, method string, p any) error {
	guardCounters.panics.Add(1)
	g.report(ctx, logrus.ErrorLevel, reasonPanic, logrus.Fields{
		"method": method, "panic": fmt.Sprint(p), "stack": string(debug.Stack()),
	})
	return status.Errorf(codes.Internal, "%s: internal error", method)
}

// report logs one line for reason at level, unless a line for the same
// reason went out less than a second ago; the next line carries the count
// of lines suppressed in between.
func (g *remoteGuard) report(ctx context.Context, level logrus.Level, reason string, fields logrus.Fields) {
	if !g.log.Logger.IsLevelEnabled(level) {
		return
	}
	ok, suppressed := g.limit.Allow(reason, time.Now())
	if !ok {
		return
	}
	e := g.log.WithFields(fields).WithField("peer", peerAddr(ctx))
	if suppressed > 0 {
		e = e.WithField("suppressed", suppressed)
	}
	e.Log(level, "remote guard: "+reason)
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}

// guardedStream screens what protoactor's endpoint reader receives.
// RecvMsg is called by the reader's goroutine only (gRPC allows one
// receiver per stream), so connected needs no lock.
type guardedStream struct {
	grpc.ServerStream
	guard     *remoteGuard
	method    string
	connected bool
	// principal is the connection's; header, {PrincipalHeader: principal},
	// is shared by the stream's envelopes that carry no other header.
	principal tlsconf.Principal
	header    *remote.MessageHeader
}

// RecvMsg receives the next message worth passing to the endpoint reader,
// skipping those it must not see; it ends the stream with
// codes.InvalidArgument on a malformed one.
func (s *guardedStream) RecvMsg(m any) error {
	for {
		if err := s.ServerStream.RecvMsg(m); err != nil {
			return err
		}
		rm, ok := m.(*remote.RemoteMessage)
		if !ok {
			return nil
		}
		pass, err := s.screen(rm)
		if err != nil {
			guardCounters.rejectedStreams.Add(1)
			s.guard.report(s.Context(), logrus.WarnLevel, reasonMalformed, logrus.Fields{"method": s.method, "error": err.Error()})
			return status.Error(codes.InvalidArgument, err.Error())
		}
		if pass {
			return nil
		}
	}
}

// screen reports whether rm may go on to the endpoint reader, after
// removing a batch's refused envelopes; an error ends the stream.
func (s *guardedStream) screen(rm *remote.RemoteMessage) (bool, error) {
	switch t := rm.MessageType.(type) {
	case *remote.RemoteMessage_MessageBatch:
		dropped, err := screenBatch(t.MessageBatch, s.guard.self)
		if err != nil {
			return false, err
		}
		for reason, n := range authorizeBatch(t.MessageBatch, s.principal, s.header, s.guard.tls, s.guard.hostName) {
			if dropped == nil {
				dropped = make(map[string]int)
			}
			dropped[reason] += n
		}
		if len(dropped) > 0 {
			guardCounters.droppedBatches.Add(1)
			for reason, n := range dropped {
				guardCounters.droppedEnvelopes.Add(uint64(n))
				s.guard.report(s.Context(), logrus.WarnLevel, reason, logrus.Fields{"method": s.method, "envelopes": n, "principal": s.principal.String()})
			}
		}
		if len(t.MessageBatch.Envelopes) == 0 {
			guardCounters.skippedMessages.Add(1)
			return false, nil
		}
		return true, nil
	case *remote.RemoteMessage_ConnectRequest:
		sc, ok := t.ConnectRequest.GetConnectionType().(*remote.ConnectRequest_ServerConnection)
		if ok && sc.ServerConnection != nil && !s.connected {
			c := sc.ServerConnection
			if len(c.SystemId) > maxPIDFieldLen || len(c.Address) > maxPIDFieldLen {
				return false, fmt.Errorf("%w: connect request of %d+%d bytes", errMalformed, len(c.SystemId), len(c.Address))
			}
			s.connected = true
			return true, nil
		}
	}
	guardCounters.skippedMessages.Add(1)
	s.guard.report(s.Context(), logrus.WarnLevel, reasonUnexpected, logrus.Fields{"method": s.method, "type": fmt.Sprintf("%T", rm.MessageType)})
	return false, nil
}
