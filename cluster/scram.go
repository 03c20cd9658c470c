// scram.go holds the SCRAM credentials of the Kafka listener's users
// (issue 16), one key per user:
//
//	<prefix>users/scram/<escaped user>   JSON ScramUser: per mechanism the
//	                                     salt, iteration count, StoredKey
//	                                     and ServerKey (never the password
//	                                     nor the salted password)
//
// User names are path-escaped (url.PathEscape) so any name is one key.
// Every write is a compare-and-swap on the user's key (two writers of one
// user cannot lose each other's mechanism).
//
// Credentials are controller metadata, fenced like the other metadata
// writes: in a cluster only the elected controller writes them
// (actors/controller/acls.go, on the AlterUserScramCredentials of the
// hosts' Kafka listeners), with PutScramCredentialFenced and
// DeleteScramCredentialFenced, whose transactions also hold only while
// the controller's election key has its epoch's create revision — a
// deposed controller's write fails with ErrNotController and changes
// nothing. The unfenced PutScramCredential and DeleteScramCredential
// remain for where there is no controller to ask: the CLI's
// straight-to-etcd mode (`actorlog users --etcd-endpoints`, an admin tool
// like etcdctl, for the first users before any host runs) and tests.
// Values are validated on write and on read (a corrupt value is an error
// wrapping ErrCorruptMetadata, never a credential).

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SCRAM mechanism names, as in SASL.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// SCRAM iteration bounds (Kafka's).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// maxScramUserName bounds a user name (bytes).
const maxScramUserName = 256

// ErrUnknownScramUser is wrapped when a user or a user's mechanism has no
// credential.
var ErrUnknownScramUser = errors.New("cluster: unknown SCRAM user")

// ErrInvalidScramCredential is wrapped by the validation errors of
// credentials and user names.
var ErrInvalidScramCredential = errors.New("cluster: invalid SCRAM credential")

// ScramCredential is one user's credential for one mechanism.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// ScramUser is what is stored for one user: its credential per mechanism.
type ScramUser struct {
	Name        string                     `json:"-"`
	Credentials map[string]ScramCredential `json:"credentials"`
}

// Mechanisms returns u's mechanisms, sorted.
func (u ScramUser) Mechanisms() []string {
	out := make([]string, 0, len(u.Credentials))
	for m := range u.Credentials {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// ScramStore keeps the SCRAM credentials. Store (etcd) and MemScramStore
// implement it; implementations are safe for concurrent use.
type ScramStore interface {
	// GetScramUser returns one user; false when it has no credential.
	GetScramUser(ctx context.Context, name string) (ScramUser, bool, error)
	// ListScramUsers returns every user, by name.
	ListScramUsers(ctx context.Context) ([]ScramUser, error)
	// PutScramCredential sets name's credential for mech (validated).
	PutScramCredential(ctx context.Context, name, mech string, c ScramCredential) error
	// DeleteScramCredential removes name's credential for mech (the user
	// with its last one); an error wrapping ErrUnknownScramUser when there
	// is none.
	DeleteScramCredential(ctx context.Context, name, mech string) error
}

// FencedScramStore is the controller's ScramStore: its writes carry the
// controller's Fence and fail with an error wrapping ErrNotController,
// changing nothing, once the fence no longer holds. Store (etcd) and
// MemScramStore implement it.
type FencedScramStore interface {
	ScramStore
	// PutScramCredentialFenced is PutScramCredential, fenced.
	PutScramCredentialFenced(ctx context.Context, fence Fence, name, mech string, c ScramCredential) error
	// DeleteScramCredentialFenced is DeleteScramCredential, fenced.
	DeleteScramCredentialFenced(ctx context.Context, fence Fence, name, mech string) error
}

// Compile-time checks.
var (
	_ FencedScramStore = (*Store)(nil)
	_ FencedScramStore = (*MemScramStore)(nil)
)

// ValidateScramUserName checks a user name: 1 to 256 bytes of UTF-8
// without control characters.
func ValidateScramUserName(name string) error {
	if name == "" || len(name) > maxScramUserName || !utf8.ValidString(name) {
		return fmt.Errorf("%w: user name %q: want 1 to %d bytes of UTF-8", ErrInvalidScramCredential, name, maxScramUserName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: user name %q has a control character", ErrInvalidScramCredential, name)
		}
	}
	return nil
}

// scramKeyLen is the key length of a mechanism, 0 for an unknown one.
func scramKeyLen(mech string) int {
	switch mech {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// ValidateScramCredential checks a credential for mech: a known
// mechanism, iterations within Kafka's bounds, a salt, and keys of the
// mechanism's hash size.
func ValidateScramCredential(mech string, c ScramCredential) error {
	n := scramKeyLen(mech)
	switch {
	case n == 0:
		return fmt.Errorf("%w: mechanism %q: want %s or %s", ErrInvalidScramCredential, mech, ScramSHA256, ScramSHA512)
	case c.Iterations < MinScramIterations || c.Iterations > MaxScramIterations:
		return fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalidScramCredential, c.Iterations, MinScramIterations, MaxScramIterations)
	case len(c.Salt) == 0:
		return fmt.Errorf("%w: empty salt", ErrInvalidScramCredential)
	case len(c.StoredKey) != n || len(c.ServerKey) != n:
		return fmt.Errorf("%w: %s keys of %d and %d bytes: want %d", ErrInvalidScramCredential, mech, len(c.StoredKey), len(c.ServerKey), n)
	}
	return nil
}

// decodeScramUser parses and validates a stored value.
func decodeScramUser(name string, b []byte) (ScramUser, error) {
	u := ScramUser{Name: name}
	if err := json.Unmarshal(b, &u); err != nil {
		return ScramUser{}, fmt.Errorf("%w: SCRAM user %q: %v", ErrCorruptMetadata, name, err)
	}
	for m, c := range u.Credentials {
		if err := ValidateScramCredential(m, c); err != nil {
			return ScramUser{}, fmt.Errorf("%w: SCRAM user %q: %v", ErrCorruptMetadata, name, err)
		}
	}
	return u, nil
}

// scramCASAttempts bounds the compare-and-swap retries of one write.
const scramCASAttempts = 10

// GetScramUser implements ScramStore.
func (s *Store) GetScramUser(ctx context.Context, name string) (ScramUser, bool, error) {
	u, _, err := s.getScramUser(ctx, name)
	if err != nil {
		return ScramUser{}, false, err
	}
	return u, len(u.Credentials) > 0, nil
}

// getScramUser reads one user and its key's mod revision (0: absent).
func (s *Store) getScramUser(ctx context.Context, name string) (ScramUser, int64, error) {
	resp, err := s.client.Get(ctx, s.keys.ScramUser(name))
	if err != nil {
		return ScramUser{}, 0, fmt.Errorf("cluster: get SCRAM user %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return ScramUser{Name: name}, 0, nil
	}
	u, err := decodeScramUser(name, resp.Kvs[0].Value)
	if err != nil {
		return ScramUser{}, 0, err
	}
	return u, resp.Kvs[0].ModRevision, nil
}

// ListScramUsers implements ScramStore. A corrupt value is an error.
func (s *Store) ListScramUsers(ctx context.Context) ([]ScramUser, error) {
	resp, err := s.client.Get(ctx, s.keys.ScramUsers(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list SCRAM users: %w", err)
	}
	out := make([]ScramUser, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		name, err := s.keys.scramUserFromKey(string(kv.Key))
		if err != nil {
			return nil, err
		}
		u, err := decodeScramUser(name, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b ScramUser) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutScramCredential implements ScramStore, unfenced: for the CLI's
// straight-to-etcd mode and tests only (see the file comment).
func (s *Store) PutScramCredential(ctx context.Context, name, mech string, c ScramCredential) error {
	return s.putScramCredential(ctx, nil, name, mech, c)
}

// PutScramCredentialFenced implements FencedScramStore.
func (s *Store) PutScramCredentialFenced(ctx context.Context, fence Fence, name, mech string, c ScramCredential) error {
	return s.putScramCredential(ctx, &fence, name, mech, c)
}

func (s *Store) putScramCredential(ctx context.Context, fence *Fence, name, mech string, c ScramCredential) error {
	if err := ValidateScramUserName(name); err != nil {
		return err
	}
	if err := ValidateScramCredential(mech, c); err != nil {
		return err
	}
	return s.updateScramUser(ctx, fence, name, func(u *ScramUser) error {
		if u.Credentials == nil {
			u.Credentials = map[string]ScramCredential{}
		}
		u.Credentials[mech] = c
		return nil
	})
}

// DeleteScramCredential implements ScramStore, unfenced: for the CLI's
// straight-to-etcd mode and tests only (see the file comment).
func (s *Store) DeleteScramCredential(ctx context.Context, name, mech string) error {
	return s.deleteScramCredential(ctx, nil, name, mech)
}

// DeleteScramCredentialFenced implements FencedScramStore.
func (s *Store) DeleteScramCredentialFenced(ctx context.Context, fence Fence, name, mech string) error {
	return s.deleteScramCredential(ctx, &fence, name, mech)
}

func (s *Store) deleteScramCredential(ctx context.Context, fence *Fence, name, mech string) error {
	return s.updateScramUser(ctx, fence, name, func(u *ScramUser) error {
		if _, ok := u.Credentials[mech]; !ok {
			return fmt.Errorf("%w: %q has no %s credential", ErrUnknownScramUser, name, mech)
		}
		delete(u.Credentials, mech)
		return nil
	})
}

// updateScramUser applies fn to name's stored value with a
// compare-and-swap on its mod revision, retrying on a concurrent change;
// a user left without credentials is deleted. With a fence, the swap also
// holds only while the fence does (else an error wrapping
// ErrNotController, nothing written).
func (s *Store) updateScramUser(ctx context.Context, fence *Fence, name string, fn func(*ScramUser) error) error {
	key := s.keys.ScramUser(name)
	for range scramCASAttempts {
		u, rev, err := s.getScramUser(ctx, name)
		if err != nil {
			return err
		}
		if err := fn(&u); err != nil {
			return err
		}
		op := clientv3.OpDelete(key)
		if len(u.Credentials) > 0 {
			b, err := json.Marshal(u)
			if err != nil {
				return fmt.Errorf("cluster: encode SCRAM user %q: %w", name, err)
			}
			op = clientv3.OpPut(key, string(b))
		}
		swap := clientv3.Compare(clientv3.ModRevision(key), "=", rev)
		var resp *clientv3.TxnResponse
		if fence == nil {
			resp, err = s.client.Txn(ctx).If(swap).Then(op).Commit()
		} else {
			resp, err = s.fenced(ctx, *fence, []clientv3.Cmp{swap}, []clientv3.Op{op})
		}
		if err != nil {
			return fmt.Errorf("cluster: write SCRAM user %q: %w", name, err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("cluster: write SCRAM user %q: changed concurrently %d times", name, scramCASAttempts)
}
