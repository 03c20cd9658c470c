// remotetls_test.go: TLS on the remote's gRPC server and dial side
// (handshake, plain text and other-CA refusals), the principal stamped on
// envelopes, and host-only requests refused to non-host principals. The
// server is a plain grpc.Server with RemoteConfig's options and a
// recording Remoting service (see startLimitedRemote for why not
// protoactor's Remote.Start); the client side dials with RemoteConfig's
// dial options.

package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
	"github.com/actorlog/actorlog/messages"
)

// testPKI writes a CA and certificates to a temporary directory and
// returns reloaders for them.
type testPKI struct {
	t   *testing.T
	dir string
	ca  *certs.KeyPair
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return &testPKI{t: t, dir: dir, ca: ca}
}

// host returns a reloader for a host certificate of name.
func (p *testPKI) host(name string) *tlsconf.Reloader {
	p.t.Helper()
	kp, err := p.ca.IssueHost(name, nil, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.reloader(name, kp)
}

// client returns a reloader for a client certificate of name.
func (p *testPKI) client(name string) *tlsconf.Reloader {
	p.t.Helper()
	kp, err := p.ca.IssueClient(name, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.reloader(name, kp)
}

func (p *testPKI) reloader(name string, kp *certs.KeyPair) *tlsconf.Reloader {
	p.t.Helper()
	f := tlsconf.Files{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key"), CA: filepath.Join(p.dir, "ca.crt")}
	if err := kp.WriteFiles(f.Cert, f.Key); err != nil {
		p.t.Fatal(err)
	}
	r, err := tlsconf.NewReloader(f, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	return r
}

// received is one envelope as the recording service got it.
type received struct {
	typeName  string
	principal string
	header    map[string]string
}

// recorder is a Remoting service that records the envelopes of the
// batches its Receive streams deliver (after the guard).
type recorder struct {
	remote.UnimplementedRemotingServer
	got chan received
}

func (r *recorder) Receive(s remote.Remoting_ReceiveServer) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		b := m.GetMessageBatch()
		for _, e := range b.GetEnvelopes() {
			h := e.GetMessageHeader().GetHeaderData()
			r.got <- received{typeName: b.TypeNames[e.TypeId], principal: h[PrincipalHeader], header: h}
		}
	}
}

// startTLSRemote serves a recorder with the server options of a remote
// configured with opts, and returns its address.
func startTLSRemote(t *testing.T, opts ...RemoteOption) (string, *recorder) {
	t.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg, err := RemoteConfig("127.0.0.1:0", "", append([]RemoteOption{WithGuardLogger(logrus.NewEntry(quiet))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(cfg.ServerOptions...)
	rec := &recorder{got: make(chan received, 100)}
	remote.RegisterRemotingServer(srv, rec)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), rec
}

// dialAs connects to addr with the dial options of a remote configured
// with opts.
func dialAs(t *testing.T, addr string, opts ...RemoteOption) *grpc.ClientConn {
	t.Helper()
	cfg, err := RemoteConfig("127.0.0.1:0", "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, cfg.DialOptions...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// envelope is one message to send in a batch.
type envelope struct {
	msg    proto.Message
	header map[string]string
}

// sendBatch opens a Receive stream on cc and sends a server connect
// request and one batch of envs; it returns the stream's send error. The
// stream stays open until the test ends (cancelling it at once could
// reset it before the server has read the batch).
func sendBatch(t *testing.T, cc *grpc.ClientConn, envs ...envelope) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, err := remote.NewRemotingClient(cc).Receive(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "s", Address: "127.0.0.1:1"}}}}}); err != nil {
		return err
	}
	b := &remote.MessageBatch{Targets: []*actor.PID{actor.NewPID("127.0.0.1:2", "x")}}
	for _, e := range envs {
		data, err := proto.Marshal(e.msg)
		if err != nil {
			return err
		}
		b.TypeNames = append(b.TypeNames, string(e.msg.ProtoReflect().Descriptor().FullName()))
		env := &remote.MessageEnvelope{TypeId: int32(len(b.TypeNames) - 1), MessageData: data}
		if e.header != nil {
			env.MessageHeader = &remote.MessageHeader{HeaderData: e.header}
		}
		b.Envelopes = append(b.Envelopes, env)
	}
	if err := st.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}); err != nil {
		return err
	}
	return st.CloseSend()
}

// collect returns what rec records within wait.
func collect(rec *recorder, wait time.Duration) []received {
	var out []received
	deadline := time.After(wait)
	for {
		select {
		case r := <-rec.got:
			out = append(out, r)
		case <-deadline:
			return out
		}
	}
}

// collectN returns the first n envelopes rec records, failing after 10 s.
func collectN(t *testing.T, rec *recorder, n int) []received {
	t.Helper()
	var out []received
	deadline := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case r := <-rec.got:
			out = append(out, r)
		case <-deadline:
			t.Fatalf("got %d envelopes, want %d: %+v", len(out), n, out)
		}
	}
	return out
}

func TestRemoteTLSHandshakeAndPrincipal(t *testing.T) {
	pki := newTestPKI(t, "ca")
	addr, rec := startTLSRemote(t, WithTLS(pki.host("host1"), tls.RequireAndVerifyClientCert))
	cc := dialAs(t, addr, WithTLS(pki.client("app"), tls.RequireAndVerifyClientCert))
	if err := probe(cc); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	forged := map[string]string{PrincipalHeader: "Host:host1"}
	withOther := map[string]string{PrincipalHeader: "Host:host2", "trace": "t1"}
	if err := sendBatch(t, cc, envelope{msg: &messages.MetadataRequest{}, header: forged}, envelope{msg: &messages.MetadataRequest{}, header: withOther},
		envelope{msg: &messages.MetadataRequest{}}); err != nil {
		t.Fatal(err)
	}
	got := collectN(t, rec, 3)
	for i, r := range got {
		if r.principal != "User:app" {
			t.Errorf("envelope %d: principal %q, want User:app (header %v)", i, r.principal, r.header)
		}
	}
	if got[1].header["trace"] != "t1" {
		t.Errorf("other header entries lost: %v", got[1].header)
	}
}

func TestRemoteTLSRefusesPlainTextAndOtherCA(t *testing.T) {
	pki := newTestPKI(t, "ca")
	addr, rec := startTLSRemote(t, WithTLS(pki.host("host1"), tls.RequireAndVerifyClientCert))
	plain := dialAs(t, addr)
	if err := probe(plain); err == nil {
		t.Fatal("plain-text client served by a TLS remote")
	}
	if err := sendBatch(t, plain, envelope{msg: &messages.MetadataRequest{}}); err == nil {
		t.Fatal("plain-text client opened a stream on a TLS remote")
	}
	other := newTestPKI(t, "other")
	// The other CA's host trusts only its own CA: the dial fails on the
	// server's certificate.
	if err := probe(dialAs(t, addr, WithTLS(other.host("host9"), tls.RequireAndVerifyClientCert))); err == nil {
		t.Fatal("a remote trusting another CA accepted the server")
	}
	// A client whose certificate comes from another CA but which trusts
	// the server's: the server refuses the certificate.
	foreign := mustIssueClient(t, other.ca, "foreign")
	pool := x509.NewCertPool()
	pool.AddCert(pki.ca.Cert)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{foreign.Cert.Raw}, PrivateKey: foreign.Key}}, RootCAs: pool, ServerName: "127.0.0.1",
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := probe(cc); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// A client without a certificate is refused too.
	nocert, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})))
	if err != nil {
		t.Fatal(err)
	}
	defer nocert.Close()
	if err := probe(nocert); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	if got := collect(rec, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("refused peers delivered %+v", got)
	}
}

func mustIssueClient(t *testing.T, ca *certs.KeyPair, name string) *certs.KeyPair {
	t.Helper()
	kp, err := ca.IssueClient(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// Without TLS every envelope is stamped anonymous, whatever it claims,
// and host-only requests are left to the actors' own checks.
func TestRemotePlainTextStampsAnonymous(t *testing.T) {
	addr, rec := startTLSRemote(t)
	cc := dialRemote(t, addr)
	if err := sendBatch(t, cc, envelope{msg: &messages.MetadataRequest{}, header: map[string]string{PrincipalHeader: "Host:host1"}},
		envelope{msg: &messages.AlterPartitionRequest{LeaderId: 1}}); err != nil {
		t.Fatal(err)
	}
	for i, r := range collectN(t, rec, 2) {
		if r.principal != AnonymousPrincipal {
			t.Errorf("envelope %d: principal %q, want %s", i, r.principal, AnonymousPrincipal)
		}
	}
}

// A client certificate cannot send host-only requests; a host certificate
// can, for its own host id only when host names are known.
func TestRemoteTLSHostOnly(t *testing.T) {
	pki := newTestPKI(t, "ca")
	names := map[int32]string{1: "host1", 2: "host2", 3: "host3"}
	addr, rec := startTLSRemote(t, WithTLS(pki.host("host1"), tls.RequireAndVerifyClientCert), WithHostNames(func(id int32) (string, bool) {
		n, ok := names[id]
		return n, ok
	}))
	batch := []envelope{
		{msg: &messages.FetchRequest{ReplicaId: 2}},
		{msg: &messages.FetchRequest{ReplicaId: 3}},
		{msg: &messages.FetchRequest{ReplicaId: -1}},
		{msg: &messages.OffsetForLeaderEpochRequest{ReplicaId: 2}},
		{msg: &messages.AlterPartitionRequest{LeaderId: 2}},
		{msg: &messages.ControlledShutdownRequest{HostId: 3}},
		{msg: &messages.CreateOffsetsTopicRequest{Partitions: 1}},
		{msg: &messages.MetadataRequest{}},
	}
	fetch, ofle, alter, create, meta := "actorlog.messages.FetchRequest", "actorlog.messages.OffsetForLeaderEpochRequest",
		"actorlog.messages.AlterPartitionRequest", "actorlog.messages.CreateOffsetsTopicRequest", "actorlog.messages.MetadataRequest"
	for _, tc := range []struct {
		name      string
		as        *tlsconf.Reloader
		principal string
		want      []string
	}{
		{"client", pki.client("app"), "User:app", []string{fetch, meta}}, // the consumer fetch and metadata
		{"host2", pki.host("host2"), "Host:host2", []string{fetch, ofle, alter, create, meta, fetch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := RemoteGuardStats().DroppedEnvelopes
			cc := dialAs(t, addr, WithTLS(tc.as, tls.RequireAndVerifyClientCert))
			if err := sendBatch(t, cc, batch...); err != nil {
				t.Fatal(err)
			}
			got := collectN(t, rec, len(tc.want))
			if extra := collect(rec, 200*time.Millisecond); len(extra) != 0 {
				t.Fatalf("more delivered than expected: %+v", extra)
			}
			count := map[string]int{}
			for _, r := range got {
				count[r.typeName]++
				if r.principal != tc.principal {
					t.Errorf("%s: principal %q, want %q", r.typeName, r.principal, tc.principal)
				}
			}
			want := map[string]int{}
			for _, w := range tc.want {
				want[w]++
			}
			for k, v := range want {
				if count[k] != v {
					t.Errorf("%s delivered %d times, want %d (got %+v)", k, count[k], v, got)
				}
			}
			if d := RemoteGuardStats().DroppedEnvelopes - before; d != uint64(len(batch)-len(tc.want)) {
				t.Errorf("dropped %d envelopes, want %d", d, len(batch)-len(tc.want))
			}
		})
	}
}

func TestWithTLSValidation(t *testing.T) {
	pki := newTestPKI(t, "ca")
	for _, auth := range []tls.ClientAuthType{tls.NoClientCert, tls.RequestClientCert, tls.RequireAnyClientCert} {
		if _, err := RemoteConfig("127.0.0.1:0", "", WithTLS(pki.host("h"), auth)); err == nil {
			t.Errorf("client auth %v accepted", auth)
		}
	}
	if _, err := RemoteConfig("127.0.0.1:0", "", WithTLS(nil, tls.RequireAndVerifyClientCert)); err == nil {
		t.Error("nil reloader accepted")
	}
}

func TestHostOnlyVerdict(t *testing.T) {
	host2 := tlsconf.Principal{Kind: tlsconf.PrincipalHost, Name: "host2"}
	user := tlsconf.Principal{Kind: tlsconf.PrincipalUser, Name: "host2"}
	names := func(id int32) (string, bool) {
		if id == 2 {
			return "host2", true
		}
		if id == 3 {
			return "host3", true
		}
		return "", false
	}
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fetch := hostOnlyTypes["actorlog.messages.FetchRequest"]
	alter := hostOnlyTypes["actorlog.messages.AlterPartitionRequest"]
	create := hostOnlyTypes["actorlog.messages.CreateOffsetsTopicRequest"]
	garbage := protowire.AppendTag(nil, 8, protowire.VarintType) // a tag without its value
	for _, tc := range []struct {
		name  string
		t     hostOnlyType
		data  []byte
		p     tlsconf.Principal
		names func(int32) (string, bool)
		want  string
	}{
		{"consumer fetch by user", fetch, enc(&messages.FetchRequest{ReplicaId: -1, Topic: "t"}), user, names, ""},
		{"follower fetch by user", fetch, enc(&messages.FetchRequest{ReplicaId: 2}), user, names, reasonNotHost},
		{"replica 0 (absent) by user", fetch, enc(&messages.FetchRequest{Topic: "t"}), user, names, reasonNotHost},
		{"own fetch", fetch, enc(&messages.FetchRequest{ReplicaId: 2, Topic: "t"}), host2, names, ""},
		{"fetch as another host", fetch, enc(&messages.FetchRequest{ReplicaId: 3}), host2, names, reasonWrongHost},
		{"fetch as an unknown host (left to the actors)", fetch, enc(&messages.FetchRequest{ReplicaId: 9}), host2, names, ""},
		{"fetch as another host, no names", fetch, enc(&messages.FetchRequest{ReplicaId: 3}), host2, nil, ""},
		{"malformed fetch by host", fetch, garbage, host2, names, reasonWrongHost},
		{"malformed fetch by user", fetch, garbage, user, names, reasonNotHost},
		{"alter as self", alter, enc(&messages.AlterPartitionRequest{LeaderId: 2, NewIsr: []int32{1, 2}}), host2, names, ""},
		{"alter by user", alter, enc(&messages.AlterPartitionRequest{LeaderId: 2}), user, names, reasonNotHost},
		{"create by host", create, enc(&messages.CreateOffsetsTopicRequest{Partitions: 3}), host2, names, ""},
		{"create by user", create, enc(&messages.CreateOffsetsTopicRequest{Partitions: 3}), user, names, reasonNotHost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hostOnlyVerdict(tc.t, tc.data, tc.p, tc.names); got != tc.want {
				t.Fatalf("verdict %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrincipalFromHeader(t *testing.T) {
	env := func(h map[string]string) actor.ReadonlyMessageHeader {
		return actor.UnwrapEnvelopeHeader(&actor.MessageEnvelope{Header: h})
	}
	for _, tc := range []struct {
		h    actor.ReadonlyMessageHeader
		want string
		ok   bool
	}{
		{nil, "", false},
		{env(nil), "", false},
		{env(map[string]string{PrincipalHeader: "Host:h1"}), "Host:h1", true},
		{env(map[string]string{PrincipalHeader: AnonymousPrincipal}), AnonymousPrincipal, true},
		{env(map[string]string{PrincipalHeader: "Group:x"}), "", false},
		{env(map[string]string{PrincipalHeader: "User:"}), "", false},
	} {
		p, ok := PrincipalFromHeader(tc.h)
		if ok != tc.ok || ok && p.String() != tc.want {
			t.Errorf("%v: %v %v, want %q %v", tc.h, p, ok, tc.want, tc.ok)
		}
	}
}

// A dialled peer's host certificate must name the dialled address; a
// user certificate (a client's endpoint) is checked by its chain only.
func TestVerifyDialedPeer(t *testing.T) {
	pki, other := newTestPKI(t, "ca"), newTestPKI(t, "other")
	issueHost := func(ca *certs.KeyPair, name string) *x509.Certificate {
		kp, err := ca.IssueHost(name, []string{"10.0.0.7"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return kp.Cert
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.ca.Cert)
	for _, tc := range []struct {
		name  string
		peer  []*x509.Certificate
		host  string
		valid bool
	}{
		{"host by IP", []*x509.Certificate{issueHost(pki.ca, "host1")}, "127.0.0.1", true},
		{"host by extra SAN", []*x509.Certificate{issueHost(pki.ca, "host1")}, "10.0.0.7", true},
		{"host by name", []*x509.Certificate{issueHost(pki.ca, "host1")}, "host1", true},
		{"host at another address", []*x509.Certificate{issueHost(pki.ca, "host1")}, "10.0.0.8", false},
		{"host under another name", []*x509.Certificate{issueHost(pki.ca, "host1")}, "host2", false},
		{"client endpoint", []*x509.Certificate{mustIssueClient(t, pki.ca, "app").Cert}, "10.0.0.8", true},
		{"host of another CA", []*x509.Certificate{issueHost(other.ca, "host1")}, "127.0.0.1", false},
		{"client of another CA", []*x509.Certificate{mustIssueClient(t, other.ca, "app").Cert}, "127.0.0.1", false},
		{"no certificate", nil, "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyDialedPeer(pool, tls.ConnectionState{PeerCertificates: tc.peer}, tc.host)
			if (err == nil) != tc.valid {
				t.Fatalf("verify: %v, want valid=%v", err, tc.valid)
			}
		})
	}
}
