// sasl_scram_test.go: the SASL state machine of the listener, driven by
// franz-go's SCRAM and PLAIN clients and by raw frames (a hand-written
// SCRAM client) where the exact answers and the close matter; the SCRAM
// user APIs through kadm; TLS and mTLS principals.

package kafka

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/actorlog/actorlog/internal/certs"
	"github.com/actorlog/actorlog/internal/tlsconf"
)

// memScram is an in-memory Credentials and ScramUsers.
type memScram struct {
	mu    sync.Mutex
	users map[string]map[ScramMechanism]ScramCredential
	err   error // when set, lookups fail with it
}

func newMemScram() *memScram {
	return &memScram{users: map[string]map[ScramMechanism]ScramCredential{}}
}

func (m *memScram) ScramCredential(_ context.Context, user string, mech ScramMechanism) (ScramCredential, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return ScramCredential{}, false, m.err
	}
	c, ok := m.users[user][mech]
	return c, ok, nil
}

func (m *memScram) DescribeScramUsers(_ context.Context, names []string) ([]ScramUserInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ScramUserInfo
	for u, creds := range m.users {
		if names != nil && !slices.Contains(names, u) {
			continue
		}
		info := ScramUserInfo{Name: u}
		for mech, c := range creds {
			info.Credentials = append(info.Credentials, ScramCredentialInfo{Mechanism: mech, Iterations: c.Iterations})
		}
		slices.SortFunc(info.Credentials, func(a, b ScramCredentialInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ScramUserInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *memScram) UpsertScramCredential(_ context.Context, user string, mech ScramMechanism, cred ScramCredential) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users[user] == nil {
		m.users[user] = map[ScramMechanism]ScramCredential{}
	}
	m.users[user][mech] = cred
	return nil
}

func (m *memScram) DeleteScramCredential(_ context.Context, user string, mech ScramMechanism) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[user][mech]; !ok {
		return fmt.Errorf("%s %s: %w", user, mech, ErrUnknownScramUser)
	}
	delete(m.users[user], mech)
	if len(m.users[user]) == 0 {
		delete(m.users, user)
	}
	return nil
}

// add stores user's password for mechs.
func (m *memScram) add(t testing.TB, user, pass string, mechs ...ScramMechanism) {
	t.Helper()
	for _, mech := range mechs {
		c, err := NewScramCredential(mech, pass, MinScramIterations)
		if err != nil {
			t.Fatalf("credential: %v", err)
		}
		if err := m.UpsertScramCredential(context.Background(), user, mech, c); err != nil {
			t.Fatalf("upsert: %v", err)
		}
	}
}

// principalBackend records the principal each Metadata call sees.
type principalBackend struct {
	Backend
	mu   sync.Mutex
	seen []string // principal strings; "" for anonymous
}

func (b *principalBackend) Metadata(ctx context.Context, q MetadataQuery) (*ClusterMetadata, error) {
	p, ok := PrincipalFrom(ctx)
	b.mu.Lock()
	if ok {
		b.seen = append(b.seen, p.String())
	} else {
		b.seen = append(b.seen, "")
	}
	b.mu.Unlock()
	return b.Backend.Metadata(ctx, q)
}

func (b *principalBackend) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seen) == 0 {
		return "<none>"
	}
	return b.seen[len(b.seen)-1]
}

// saslServer starts a server with SASL mechs over creds (and TLS when
// tlsCfg is set), its Backend recording principals.
func saslServer(t *testing.T, creds *memScram, tlsCfg *tls.Config, mechs ...string) (*testServer, *principalBackend) {
	t.Helper()
	var pb *principalBackend
	ts := startServer(t, func(c *Config) {
		pb = &principalBackend{Backend: c.Backend}
		c.Backend = pb
		c.SASL = SASLConfig{Mechanisms: mechs, Credentials: creds, Users: creds}
		c.TLS = tlsCfg
		c.TLSHandshakeTimeout = 2 * time.Second
	})
	return ts, pb
}

// kgoClient returns a client of ts with opts, closed at cleanup.
func kgoClient(t *testing.T, ts *testServer, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(ts.addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second),
		kgo.DialTimeout(3 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadata asks for all topics' metadata through cl.
func metadata(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	_, err := req.RequestWith(ctx, cl)
	return err
}

func TestSASLScramSuccess(t *testing.T) {
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA256, ScramSHA512)
	ts, pb := saslServer(t, creds, nil, MechanismScramSHA256, MechanismScramSHA512)
	for _, mech := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism(),
	} {
		t.Run(mech.Name(), func(t *testing.T) {
			cl := kgoClient(t, ts, kgo.SASL(mech))
			if err := metadata(cl); err != nil {
				t.Fatalf("metadata with %s: %v", mech.Name(), err)
			}
			if got := pb.last(); got != "User:alice" {
				t.Fatalf("handler saw principal %q, want User:alice", got)
			}
		})
	}
}

// scramClient is a hand-written SCRAM client over raw frames.
type scramClient struct {
	t    *testing.T
	c    net.Conn
	corr int32
	// finalNonce, when set, turns the server's combined nonce into the
	// one the client-final-message carries.
	finalNonce func(combined string) string
}

func (s *scramClient) roundTrip(req kmsg.Request, resp kmsg.Response) {
	s.t.Helper()
	s.corr++
	if _, err := s.c.Write(frame(req, s.corr)); err != nil {
		s.t.Fatalf("write: %v", err)
	}
	resp.SetVersion(req.GetVersion())
	if corr := readResponse(s.t, s.c, resp); corr != s.corr {
		s.t.Fatalf("correlation id %d, want %d", corr, s.corr)
	}
}

func (s *scramClient) handshake(mech string) *kmsg.SASLHandshakeResponse {
	s.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	s.roundTrip(req, resp)
	return resp
}

func (s *scramClient) authenticate(b []byte) *kmsg.SASLAuthenticateResponse {
	s.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = b
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	s.roundTrip(req, resp)
	return resp
}

// scram runs a SCRAM exchange as user with pass after a handshake; it
// returns the answers to the first and (when the first succeeded) final
// message.
func (s *scramClient) scram(mech ScramMechanism, user, pass string) (first, final *kmsg.SASLAuthenticateResponse) {
	s.t.Helper()
	if hs := s.handshake(mech.String()); hs.ErrorCode != 0 {
		s.t.Fatalf("handshake %s: error %d", mech, hs.ErrorCode)
	}
	bare := "n=" + user + ",r=clientnonce123"
	first = s.authenticate([]byte("n,," + bare))
	if first.ErrorCode != 0 {
		return first, nil
	}
	serverFirst := string(first.SASLAuthBytes)
	var nonce, salt64 string
	var iters int32
	for f := range strings.SplitSeq(serverFirst, ",") {
		switch {
		case strings.HasPrefix(f, "r="):
			nonce = f[2:]
		case strings.HasPrefix(f, "s="):
			salt64 = f[2:]
		case strings.HasPrefix(f, "i="):
			if _, err := fmt.Sscan(f[2:], &iters); err != nil {
				s.t.Fatalf("iterations in %q: %v", serverFirst, err)
			}
		}
	}
	if !strings.HasPrefix(nonce, "clientnonce123") || len(nonce) < len("clientnonce123")+16 {
		s.t.Fatalf("server nonce %q does not extend the client's with enough randomness", nonce)
	}
	if iters < MinScramIterations {
		s.t.Fatalf("iterations %d below %d", iters, MinScramIterations)
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		s.t.Fatalf("salt %q: %v", salt64, err)
	}
	salted, err := SaltPassword(mech, pass, salt, iters)
	if err != nil {
		s.t.Fatalf("salt password: %v", err)
	}
	h := func() hash.Hash { return sha256.New() }
	if mech == ScramSHA512 {
		h = func() hash.Hash { return sha512.New() }
	}
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	st := h()
	st.Write(clientKey)
	if s.finalNonce != nil {
		nonce = s.finalNonce(nonce)
	}
	withoutProof := "c=biws,r=" + nonce
	auth := []byte(bare + "," + serverFirst + "," + withoutProof)
	sig := hmacSum(h, st.Sum(nil), auth)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	final = s.authenticate([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)))
	if final.ErrorCode == 0 {
		want := "v=" + base64.StdEncoding.EncodeToString(hmacSum(h, hmacSum(h, salted, []byte("Server Key")), auth))
		if string(final.SASLAuthBytes) != want {
			s.t.Fatalf("server signature %q, want %q", final.SASLAuthBytes, want)
		}
	}
	return first, final
}

func TestSASLScramRawExchange(t *testing.T) {
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA512)
	ts, pb := saslServer(t, creds, nil, MechanismScramSHA512, MechanismScramSHA256)

	t.Run("success", func(t *testing.T) {
		s := &scramClient{t: t, c: ts.dial(t)}
		if _, final := s.scram(ScramSHA512, "alice", "s3cret"); final == nil || final.ErrorCode != 0 {
			t.Fatalf("final answer %+v, want success", final)
		}
		s.roundTrip(metadataReq(9), kmsg.NewPtrMetadataResponse())
		if got := pb.last(); got != "User:alice" {
			t.Fatalf("principal %q, want User:alice", got)
		}
	})
	// A wrong password and an unknown user fail alike, at the final
	// message, and the connection closes after the answer.
	for _, tc := range []struct{ name, user, pass string }{
		{"wrong password", "alice", "nope"},
		{"unknown user", "mallory", "s3cret"},
		{"mechanism without credential", "alice", "s3cret"}, // SCRAM-SHA-256: alice has only 512
	} {
		t.Run(tc.name, func(t *testing.T) {
			mech := ScramSHA512
			if tc.name == "mechanism without credential" {
				mech = ScramSHA256
			}
			s := &scramClient{t: t, c: ts.dial(t)}
			first, final := s.scram(mech, tc.user, tc.pass)
			if first.ErrorCode != 0 || final == nil {
				t.Fatalf("first answer error %d: an unknown user must not be told apart at the first message", first.ErrorCode)
			}
			if final.ErrorCode != kerr.SaslAuthenticationFailed.Code || final.ErrorMessage == nil || *final.ErrorMessage != authFailedMessage {
				t.Fatalf("final answer error %d message %v, want SASL_AUTHENTICATION_FAILED %q", final.ErrorCode, final.ErrorMessage, authFailedMessage)
			}
			expectClosed(t, s.c)
		})
	}
	ts.waitLog(t, reasonAuth)

	// librdkafka repeats its own nonce before the combined one; Kafka
	// accepts a nonce ending with the server's, so we do. One without
	// the server's random part is refused.
	t.Run("librdkafka nonce", func(t *testing.T) {
		s := &scramClient{t: t, c: ts.dial(t), finalNonce: func(n string) string { return "clientnonce123" + n }}
		if _, final := s.scram(ScramSHA512, "alice", "s3cret"); final == nil || final.ErrorCode != 0 {
			t.Fatalf("final answer %+v, want success", final)
		}
	})
	t.Run("nonce without the server's part", func(t *testing.T) {
		s := &scramClient{t: t, c: ts.dial(t), finalNonce: func(string) string { return "clientnonce123" }}
		if _, final := s.scram(ScramSHA512, "alice", "s3cret"); final == nil || final.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("final answer %+v, want SASL_AUTHENTICATION_FAILED", final)
		}
	})

	t.Run("unknown user salt is stable", func(t *testing.T) {
		salts := map[string]bool{}
		for range 2 {
			s := &scramClient{t: t, c: ts.dial(t)}
			s.handshake(MechanismScramSHA512)
			first := s.authenticate([]byte("n,,n=ghost,r=abcdefgh"))
			parts := strings.Split(string(first.SASLAuthBytes), ",")
			if len(parts) != 3 {
				t.Fatalf("server-first %q", first.SASLAuthBytes)
			}
			salts[parts[1]] = true
		}
		if len(salts) != 1 {
			t.Fatalf("an unknown user got different salts %v: tells it from a known one", salts)
		}
	})
}

func TestSASLUnsupportedMechanism(t *testing.T) {
	ts, _ := saslServer(t, newMemScram(), nil, MechanismScramSHA512, MechanismPlain)
	s := &scramClient{t: t, c: ts.dial(t)}
	for _, mech := range []string{"GSSAPI", MechanismScramSHA256, MechanismPlain} { // PLAIN: not over plain text
		hs := s.handshake(mech)
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
			t.Fatalf("handshake %s: error %d, want UNSUPPORTED_SASL_MECHANISM", mech, hs.ErrorCode)
		}
		if !slices.Equal(hs.SupportedMechanisms, []string{MechanismScramSHA512}) {
			t.Fatalf("handshake %s: mechanisms %v, want [SCRAM-SHA-512] (PLAIN needs TLS)", mech, hs.SupportedMechanisms)
		}
	}
	// The connection stays usable for a supported mechanism.
	if hs := s.handshake(MechanismScramSHA512); hs.ErrorCode != 0 {
		t.Fatalf("handshake after refusals: error %d", hs.ErrorCode)
	}
}

func TestSASLPlainOverPlainTextRefused(t *testing.T) {
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA512)
	ts, _ := saslServer(t, creds, nil, MechanismPlain, MechanismScramSHA512)
	cl := kgoClient(t, ts, kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
	err := metadata(cl)
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN over plain text: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}

func TestSASLRequestBeforeAuthCloses(t *testing.T) {
	ts, _ := saslServer(t, newMemScram(), nil, MechanismScramSHA512)
	// ApiVersions is served before authentication and lists the SASL APIs.
	s := &scramClient{t: t, c: ts.dial(t)}
	av := kmsg.NewPtrApiVersionsResponse()
	s.roundTrip(apiVersionsReq(3), av)
	var keys []int16
	for _, k := range av.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	for _, k := range []int16{saslHandshakeKey, saslAuthenticateKey, 50, 51} {
		if !slices.Contains(keys, k) {
			t.Fatalf("ApiVersions keys %v lack %d", keys, k)
		}
	}
	// Metadata before authentication closes the connection.
	if _, err := s.c.Write(frame(metadataReq(9), 5)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, s.c)
	ts.waitLog(t, reasonAuthState)

	// So does one after a handshake but before the exchange ends.
	s = &scramClient{t: t, c: ts.dial(t)}
	s.handshake(MechanismScramSHA512)
	if _, err := s.c.Write(frame(metadataReq(9), 9)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, s.c)

	// SaslAuthenticate before a handshake: ILLEGAL_SASL_STATE, then closed.
	s = &scramClient{t: t, c: ts.dial(t)}
	if resp := s.authenticate([]byte("n,,n=a,r=b")); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate before handshake: error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
	}
	expectClosed(t, s.c)
}

func TestSASLWrongPasswordKgo(t *testing.T) {
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA256)
	ts, _ := saslServer(t, creds, nil, MechanismScramSHA256)
	for _, a := range []scram.Auth{{User: "alice", Pass: "wrong"}, {User: "nobody", Pass: "s3cret"}} {
		cl := kgoClient(t, ts, kgo.SASL(a.AsSha256Mechanism()))
		err := metadata(cl)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), authFailedMessage) {
			t.Fatalf("user %s: %v, want SASL_AUTHENTICATION_FAILED %q", a.User, err, authFailedMessage)
		}
	}
}

func TestSASLLookupFailureCloses(t *testing.T) {
	creds := newMemScram()
	creds.err = errors.New("store down")
	ts, _ := saslServer(t, creds, nil, MechanismScramSHA256)
	s := &scramClient{t: t, c: ts.dial(t)}
	s.handshake(MechanismScramSHA256)
	if _, err := s.c.Write(frame(func() kmsg.Request {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte("n,,n=alice,r=abc")
		return r
	}(), 3)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectClosed(t, s.c)
	ts.waitLog(t, reasonAuthLookup)
}

func TestSASLScramUserAPIs(t *testing.T) {
	creds := newMemScram()
	creds.add(t, "admin", "adminpw", ScramSHA512)
	ts, _ := saslServer(t, creds, nil, MechanismScramSHA512, MechanismScramSHA256)
	cl := kgoClient(t, ts, kgo.SASL(scram.Auth{User: "admin", Pass: "adminpw"}.AsSha512Mechanism()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bobpw"},
	})
	if err != nil {
		t.Fatalf("alter: %v", err)
	}
	if r := res["bob"]; r.Err != nil {
		t.Fatalf("upsert bob: %v", r.Err)
	}
	// kadm refuses too few iterations itself: ask raw.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "carol", 2, 100, []byte("salt"), []byte("salted")
	raw.Upsertions = append(raw.Upsertions, u)
	rawResp, err := raw.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("raw alter: %v", err)
	}
	if len(rawResp.Results) != 1 || rawResp.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Fatalf("upsert carol with 100 iterations: %+v, want UNACCEPTABLE_CREDENTIAL", rawResp.Results)
	}
	// bob can now authenticate; the stored credential holds no password.
	if err := metadata(kgoClient(t, ts, kgo.SASL(scram.Auth{User: "bob", Pass: "bobpw"}.AsSha256Mechanism()))); err != nil {
		t.Fatalf("bob after upsert: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if d := desc["bob"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 || d.CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe bob: %+v", d)
	}
	if _, ok := desc["admin"]; !ok || len(desc) != 2 {
		t.Fatalf("describe all: %v, want admin and bob", desc)
	}
	desc, err = adm.DescribeUserSCRAMs(ctx, "nobody")
	if err != nil {
		t.Fatalf("describe nobody: %v", err)
	}
	if d := desc["nobody"]; !errors.Is(d.Err, kerr.ResourceNotFound) {
		t.Fatalf("describe nobody: %+v, want RESOURCE_NOT_FOUND", d)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}, {User: "nobody", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if res["bob"].Err != nil || !errors.Is(res["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("delete results %+v", res)
	}
	if err := metadata(kgoClient(t, ts, kgo.SASL(scram.Auth{User: "bob", Pass: "bobpw"}.AsSha256Mechanism()))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bob after delete: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

func TestPlanScramAlter(t *testing.T) {
	up := func(name string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iters, []byte("salt"), []byte("salted")
		return u
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("a", 1), del("dup", 2), del("badmech", 9)}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("a", 2, 4096), up("dup", 2, 4096), up("few", 1, 4095), up("many", 1, 16385), up("", 1, 4096), up("ok", 1, 16384),
	}
	order, ops, refused := planScramAlter(req)
	if want := []string{"a", "dup", "badmech", "few", "many", "", "ok"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	wantRefused := map[string]int16{
		"dup": kerr.DuplicateResource.Code, "badmech": kerr.UnsupportedSaslMechanism.Code,
		"few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code, "": kerr.UnacceptableCredential.Code,
	}
	if len(refused) != len(wantRefused) {
		t.Fatalf("refused %v, want %v", refused, wantRefused)
	}
	for u, code := range wantRefused {
		if refused[u] != code {
			t.Fatalf("refused[%q] = %d, want %d", u, refused[u], code)
		}
	}
	if len(ops["a"]) != 2 || !ops["a"][0].delete || ops["a"][1].delete || len(ops["ok"]) != 1 || len(ops) != 2 {
		t.Fatalf("ops %+v", ops)
	}
}

func TestVerifyPassword(t *testing.T) {
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		c, err := NewScramCredential(m, "pw", MinScramIterations)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !VerifyPassword(m, c, "pw") || VerifyPassword(m, c, "pw2") || VerifyPassword(m, c, "") {
			t.Fatalf("%s: VerifyPassword accepts the wrong password or refuses the right one", m)
		}
	}
	if _, err := NewScramCredential(ScramSHA256, "pw", MinScramIterations-1); err == nil {
		t.Fatal("a credential below the minimum iterations was made")
	}
}

// pki is a CA and the certificates of one test.
type testPKI struct {
	ca   *certs.KeyPair
	pool *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatalf("CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testPKI{ca: ca, pool: pool}
}

// serverTLS returns a tlsconf server config for a host certificate.
func (p *testPKI) serverTLS(t *testing.T, auth tls.ClientAuthType) *tls.Config {
	t.Helper()
	kp, err := p.ca.IssueHost("host1", nil, time.Hour)
	if err != nil {
		t.Fatalf("host cert: %v", err)
	}
	dir := t.TempDir()
	files := tlsconf.Files{Cert: dir + "/h.crt", Key: dir + "/h.key", CA: dir + "/ca.crt"}
	if err := kp.WriteFiles(files.Cert, files.Key); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := p.ca.WriteFiles(files.CA, dir+"/ca.key"); err != nil {
		t.Fatalf("write CA: %v", err)
	}
	r, err := tlsconf.NewReloader(files, nil)
	if err != nil {
		t.Fatalf("reloader: %v", err)
	}
	return r.ServerConfig(auth)
}

// clientTLS returns a client config trusting p's CA, presenting a client
// certificate for user when user is set (issued by from, p's CA when nil).
func (p *testPKI) clientTLS(t *testing.T, user string, from *testPKI) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if user != "" {
		if from == nil {
			from = p
		}
		kp, err := from.ca.IssueClient(user, time.Hour)
		if err != nil {
			t.Fatalf("client cert: %v", err)
		}
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: kp.Key, Leaf: kp.Cert}}
	}
	return cfg
}

func TestTLSListener(t *testing.T) {
	p := newTestPKI(t)
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA512)
	var pb *principalBackend
	ts := startServer(t, func(c *Config) {
		pb = &principalBackend{Backend: c.Backend}
		c.Backend = pb
		c.TLS = p.serverTLS(t, tls.VerifyClientCertIfGiven)
		c.TLSHandshakeTimeout = 2 * time.Second
	})

	t.Run("mTLS principal", func(t *testing.T) {
		if err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(p.clientTLS(t, "carol", nil)))); err != nil {
			t.Fatalf("mTLS metadata: %v", err)
		}
		if got := pb.last(); got != "User:carol" {
			t.Fatalf("principal %q, want User:carol", got)
		}
	})
	t.Run("TLS without client certificate is anonymous", func(t *testing.T) {
		if err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(p.clientTLS(t, "", nil)))); err != nil {
			t.Fatalf("TLS metadata: %v", err)
		}
		if got := pb.last(); got != "" {
			t.Fatalf("principal %q, want none", got)
		}
	})
	t.Run("plain-text client refused", func(t *testing.T) {
		c := ts.dial(t)
		if _, err := c.Write(frame(apiVersionsReq(3), 1)); err != nil {
			t.Fatalf("write: %v", err)
		}
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatalf("deadline: %v", err)
		}
		// The server answers a TLS alert at most, never a Kafka frame, and closes.
		buf := make([]byte, 64)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("plain-text connection still open after 5 s")
				}
				break
			}
		}
		ts.waitLog(t, reasonTLS)
	})
	t.Run("certificate from another CA refused", func(t *testing.T) {
		other := newTestPKI(t)
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ts.addr, p.clientTLS(t, "eve", other))
		if err == nil {
			// TLS 1.3: the client learns of the refusal at its first read.
			defer c.Close()
			if _, err = c.Write(frame(apiVersionsReq(3), 1)); err == nil {
				_, _, err = readResponseFrame(c)
			}
		}
		if err == nil {
			t.Fatal("a certificate from another CA was accepted")
		}
	})
	t.Run("handshake timeout", func(t *testing.T) {
		c := ts.dial(t) // says nothing
		expectClosedWithin(t, c, 5*time.Second)
	})
}

// expectClosedWithin checks that the server closes c within d.
func expectClosedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after %v", d)
			}
			return
		}
	}
}

func TestSASLOverTLS(t *testing.T) {
	p := newTestPKI(t)
	creds := newMemScram()
	creds.add(t, "alice", "s3cret", ScramSHA512)
	ts, pb := saslServer(t, creds, p.serverTLS(t, tls.RequireAndVerifyClientCert), MechanismPlain, MechanismScramSHA512)
	cfg := p.clientTLS(t, "carol", nil)
	t.Run("PLAIN", func(t *testing.T) {
		if err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(cfg), kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))); err != nil {
			t.Fatalf("PLAIN over TLS: %v", err)
		}
		// SASL's principal wins over the certificate's.
		if got := pb.last(); got != "User:alice" {
			t.Fatalf("principal %q, want User:alice", got)
		}
		err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(cfg), kgo.SASL(plain.Auth{User: "alice", Pass: "bad"}.AsMechanism())))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("PLAIN wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("SCRAM", func(t *testing.T) {
		if err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(cfg), kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism()))); err != nil {
			t.Fatalf("SCRAM over TLS: %v", err)
		}
	})
	t.Run("no client certificate refused", func(t *testing.T) {
		err := metadata(kgoClient(t, ts, kgo.DialTLSConfig(p.clientTLS(t, "", nil)), kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism())))
		if err == nil {
			t.Fatal("RequireAndVerifyClientCert served a client without a certificate")
		}
	})
}

func TestSASLConfigValidation(t *testing.T) {
	creds := newMemScram()
	for _, tc := range []struct {
		name string
		sasl SASLConfig
		ok   bool
	}{
		{"off", SASLConfig{}, true},
		{"scram", SASLConfig{Mechanisms: []string{MechanismScramSHA512}, Credentials: creds}, true},
		{"unknown mechanism", SASLConfig{Mechanisms: []string{"GSSAPI"}, Credentials: creds}, false},
		{"twice", SASLConfig{Mechanisms: []string{MechanismPlain, MechanismPlain}, Credentials: creds}, false},
		{"no credentials", SASLConfig{Mechanisms: []string{MechanismPlain}}, false},
		{"users without SASL", SASLConfig{Users: creds}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(Config{Backend: &fakeBackend{}, SASL: tc.sasl})
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadConfig)) {
				t.Fatalf("NewServer: %v, want ok=%v (else ErrBadConfig)", err, tc.ok)
			}
			if srv != nil {
				if err := srv.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
			}
		})
	}
	got, err := ParseSASLMechanisms(" scram-sha-512, PLAIN,,SCRAM-SHA-512 ")
	if err != nil || !slices.Equal(got, []string{MechanismScramSHA512, MechanismPlain}) {
		t.Fatalf("ParseSASLMechanisms: %v, %v", got, err)
	}
	if _, err := ParseSASLMechanisms("SCRAM-SHA-1"); err == nil {
		t.Fatal("SCRAM-SHA-1 accepted")
	}
}
