// sasl_scram.go: the server side of SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802, RFC 7677) as Kafka speaks it, and the credentials Kafka stores
// for them (salt, iterations, StoredKey, ServerKey: never the password).
// Pure: no I/O besides crypto/rand for salts and nonces.
//
// As in Kafka, the password and user name are not SASLprep'ed (Kafka's
// ScramFormatter uses their UTF-8 bytes), the client-first message must
// have no channel binding ("n,,"; "biws" in the final message) and no
// extensions, and an authzid, when present, must equal the user name.

package kafka

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strings"
)

// ScramMechanism is a SCRAM mechanism, numbered as Kafka numbers them in
// DescribeUserScramCredentials and AlterUserScramCredentials.
type ScramMechanism int8

// The SCRAM mechanisms.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// SASL mechanism names.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SCRAM iteration bounds, Kafka's: AlterUserScramCredentials refuses
// others with UNACCEPTABLE_CREDENTIAL.
const (
	MinScramIterations     = 4096
	MaxScramIterations     = 16384
	DefaultScramIterations = 8192
)

// scramSaltBytes is the length of generated salts.
const scramSaltBytes = 32

// String returns the SASL mechanism name, e.g. "SCRAM-SHA-512".
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return MechanismScramSHA256
	case ScramSHA512:
		return MechanismScramSHA512
	}
	return fmt.Sprintf("SCRAM-UNKNOWN-%d", int8(m))
}

// Valid reports whether m is a known mechanism.
func (m ScramMechanism) Valid() bool { return m == ScramSHA256 || m == ScramSHA512 }

// ParseScramMechanism parses "SCRAM-SHA-256" or "SCRAM-SHA-512"
// (case-insensitively).
func ParseScramMechanism(s string) (ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case MechanismScramSHA256:
		return ScramSHA256, nil
	case MechanismScramSHA512:
		return ScramSHA512, nil
	}
	return 0, fmt.Errorf("kafka: unknown SCRAM mechanism %q (want %s or %s)", s, MechanismScramSHA256, MechanismScramSHA512)
}

func (m ScramMechanism) hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// ScramCredential is what is stored for one user and mechanism, as Kafka
// stores it: the salt and iteration count of the salted password and the
// two keys derived from it (StoredKey = H(HMAC(SaltedPassword, "Client
// Key")), ServerKey = HMAC(SaltedPassword, "Server Key")). Neither the
// password nor the salted password can be recovered from it.
type ScramCredential struct {
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// ScramCredentialFromSalted derives the stored credential from a salted
// password (what AlterUserScramCredentials carries).
func ScramCredentialFromSalted(m ScramMechanism, salt, saltedPassword []byte, iterations int32) ScramCredential {
	h := m.hash()
	clientKey := hmacSum(h, saltedPassword, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Salt:       bytes.Clone(salt),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, saltedPassword, []byte("Server Key")),
	}
}

// SaltPassword is SCRAM's Hi(password, salt, iterations): PBKDF2 with the
// mechanism's HMAC.
func SaltPassword(m ScramMechanism, password string, salt []byte, iterations int32) ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("kafka: salt password: unknown mechanism %d", m)
	}
	if iterations < 1 {
		return nil, fmt.Errorf("kafka: salt password: %d iterations", iterations)
	}
	k, err := pbkdf2.Key(m.hash(), password, salt, int(iterations), m.hash()().Size())
	if err != nil {
		return nil, fmt.Errorf("kafka: salt password: %w", err)
	}
	return k, nil
}

// NewScramCredential salts password with a fresh random salt and returns
// the credential to store. iterations must be within MinScramIterations
// and MaxScramIterations.
func NewScramCredential(m ScramMechanism, password string, iterations int32) (ScramCredential, error) {
	if !m.Valid() {
		return ScramCredential{}, fmt.Errorf("kafka: unknown SCRAM mechanism %d", m)
	}
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return ScramCredential{}, fmt.Errorf("kafka: %d iterations: want %d to %d", iterations, MinScramIterations, MaxScramIterations)
	}
	if password == "" {
		return ScramCredential{}, errors.New("kafka: empty password")
	}
	salt := make([]byte, scramSaltBytes)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, fmt.Errorf("kafka: salt: %w", err)
	}
	salted, err := SaltPassword(m, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramCredentialFromSalted(m, salt, salted, iterations), nil
}

// VerifyPassword reports whether password is the one cred was made from,
// deriving the keys as SCRAM does (so PLAIN can be checked against SCRAM
// credentials). Constant-time in the comparison.
func VerifyPassword(m ScramMechanism, cred ScramCredential, password string) bool {
	salted, err := SaltPassword(m, password, cred.Salt, cred.Iterations)
	if err != nil {
		return false
	}
	got := ScramCredentialFromSalted(m, cred.Salt, salted, cred.Iterations)
	return subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1
}

func hmacSum(h func() hash.Hash, key, msg []byte) []byte {
	mac := hmac.New(h, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// errScramProtocol is a malformed SCRAM message.
var errScramProtocol = errors.New("kafka: malformed SCRAM message")

// scramClientFirst is a parsed client-first-message.
type scramClientFirst struct {
	user  string // unescaped
	bare  string // client-first-message-bare
	nonce string
}

var scramUnescaper = strings.NewReplacer("=2C", ",", "=3D", "=")

// Patterns of RFC 5802 §7, after kfake's.
var reScramClientFirst, reScramClientFinal = func() (*regexp.Regexp, *regexp.Regexp) {
	const (
		value     = "[\x01-\x2b\x2d-\x7f]+"                      // all but NUL and ','
		printable = "[\x21-\x2b\x2d-\x7e]+"                      // all printable but ','
		saslName  = "(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+" // ',' and '=' escaped
		b64       = `[a-zA-Z0-9/+]+={0,3}`
	)
	// 1: authzid, 2: client-first-message-bare, 3: user, 4: nonce, 5: extensions
	first := fmt.Sprintf("^n,(?:a=(%s))?,((?:m=%s,)?n=(%s),r=(%s)((?:,[a-zA-Z]+=%s)*))$", saslName, value, saslName, printable, value)
	// 1: client-final-message-without-proof, 2: channel binding, 3: nonce, 4: proof
	final := fmt.Sprintf("^(c=(%s),r=(%s)),p=(%s)$", b64, printable, b64)
	return regexp.MustCompile(first), regexp.MustCompile(final)
}()

// parseScramClientFirst parses a client-first-message.
func parseScramClientFirst(b []byte) (scramClientFirst, error) {
	m := reScramClientFirst.FindStringSubmatch(string(b))
	if m == nil {
		return scramClientFirst{}, fmt.Errorf("%w: client-first-message does not parse", errScramProtocol)
	}
	if m[5] != "" {
		return scramClientFirst{}, fmt.Errorf("%w: extensions are not supported", errScramProtocol)
	}
	user := scramUnescaper.Replace(m[3])
	if m[1] != "" && scramUnescaper.Replace(m[1]) != user {
		return scramClientFirst{}, fmt.Errorf("%w: authzid differs from the user name", errScramProtocol)
	}
	return scramClientFirst{user: user, bare: m[2], nonce: m[4]}, nil
}

// scramServer is one SCRAM exchange after the client-first message: it
// holds what the server sent and checks the client's proof.
type scramServer struct {
	mech        ScramMechanism
	cred        ScramCredential
	clientFirst scramClientFirst
	serverFirst string
	nonce       string // client nonce + server nonce
}

// newScramServer answers clientFirst with the server-first-message for
// cred: the combined nonce (the client's plus 24 random bytes), the salt
// and the iteration count.
func newScramServer(m ScramMechanism, cred ScramCredential, cf scramClientFirst) (*scramServer, error) {
	var r [24]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, fmt.Errorf("kafka: scram nonce: %w", err)
	}
	nonce := cf.nonce + base64.RawStdEncoding.EncodeToString(r[:])
	sf := fmt.Sprintf("r=%s,s=%s,i=%d", nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return &scramServer{mech: m, cred: cred, clientFirst: cf, serverFirst: sf, nonce: nonce}, nil
}

// errScramProof is a client proof that does not match: a wrong password
// (or an unknown user, whose stand-in credential matches nothing).
var errScramProof = errors.New("kafka: scram client proof does not match")

// final checks the client-final-message and returns the
// server-final-message ("v=" and the server signature).
func (s *scramServer) final(b []byte) (string, error) {
	m := reScramClientFinal.FindStringSubmatch(string(b))
	if m == nil {
		return "", fmt.Errorf("%w: client-final-message does not parse", errScramProtocol)
	}
	withoutProof, channel, nonce, proof64 := m[1], m[2], m[3], m[4]
	if channel != "biws" { // base64("n,,")
		return "", fmt.Errorf("%w: channel binding is not supported", errScramProtocol)
	}
	// Kafka's ScramSaslServer accepts a nonce that ends with the
	// server's, and librdkafka relies on it: it sends its own nonce
	// again before the combined one. The server's random part is still
	// required, so a replayed exchange does not verify.
	if !strings.HasSuffix(nonce, s.nonce) {
		return "", fmt.Errorf("%w: nonce differs from the server's", errScramProtocol)
	}
	h := s.mech.hash()
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != h().Size() {
		return "", fmt.Errorf("%w: client proof is not a base64 %d-byte value", errScramProtocol, h().Size())
	}
	authMessage := []byte(s.clientFirst.bare + "," + s.serverFirst + "," + withoutProof)
	clientSig := hmacSum(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	stored := h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), s.cred.StoredKey) != 1 {
		return "", errScramProof
	}
	return "v=" + base64.StdEncoding.EncodeToString(hmacSum(h, s.cred.ServerKey, authMessage)), nil
}

// decoyScramCredential is the credential an unknown user is answered
// with, so that the exchange fails at the proof exactly as a wrong
// password does (no user enumeration from the server-first message): a
// salt derived from the user name and secret (stable across attempts), the
// default iteration count, and keys nothing matches.
func decoyScramCredential(secret []byte, m ScramMechanism, user string) ScramCredential {
	h := m.hash()
	salt := hmacSum(sha256.New, secret, []byte(m.String()+"\x00"+user))
	return ScramCredential{
		Salt:       salt,
		Iterations: DefaultScramIterations,
		StoredKey:  hmacSum(h, secret, append([]byte("stored\x00"), salt...)),
		ServerKey:  hmacSum(h, secret, append([]byte("server\x00"), salt...)),
	}
}
