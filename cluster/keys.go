// keys.go holds the etcd key layout of the cluster metadata. Everything
// lives under one prefix (DefaultPrefix, "/actorlog/", unless configured),
// so several clusters can share an etcd and `etcdctl get --prefix` shows
// one cluster's state:
//
//	<prefix>hosts/<host id>          messages.HostInfo, proto; put under the
//	                                 host's lease (its broker epoch), so it
//	                                 disappears when the host stops renewing
//	<prefix>topics/<topic name>      messages.TopicMetadata, proto: configs,
//	                                 partitions, replicas, leader, ISR, epochs;
//	                                 written only by the controller, fenced
//	<prefix>controller/election/<lease id, hex>
//	                                 the controller election (etcd
//	                                 concurrency.Election); the value is the
//	                                 candidate's description (e.g. its host
//	                                 id and address). The key with the lowest
//	                                 create revision is the controller, and
//	                                 that create revision is the controller
//	                                 epoch that fences every metadata write.
//	<prefix>users/scram/<user name, path-escaped>
//	                                 the Kafka listener's SCRAM credentials
//	                                 (scram.go): JSON, salted keys only;
//	                                 written by any host or the CLI with a
//	                                 compare-and-swap, not fenced
//	<prefix>acls/<RESOURCE>/<PATTERN>/<name>/<principal>/<host>/<OPERATION>/<PERMISSION>
//	                                 one Kafka ACL binding (acl_store.go):
//	                                 JSON acl.Binding; the key is derived
//	                                 from the value (enums by Kafka name,
//	                                 strings path-escaped), so adding a
//	                                 binding twice writes one key; not fenced
//
// Host ids are written in decimal without padding (hosts/3, hosts/12): keys
// are never relied on for ordering; ListHosts sorts by id. Topic names need
// no escaping: the allowed characters [a-zA-Z0-9._-] contain no '/'.

package cluster

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/actorlog/actorlog/internal/acl"
)

// DefaultPrefix is the key prefix used when none is configured.
const DefaultPrefix = "/actorlog/"

// Keys builds the etcd keys of one cluster. The zero value is not useful;
// use NewKeys. Keys is a value type, safe for concurrent use.
type Keys struct {
	prefix string
}

// NewKeys returns the key layout under prefix. An empty prefix means
// DefaultPrefix; a missing trailing '/' is added.
func NewKeys(prefix string) Keys {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Keys{prefix: prefix}
}

// Prefix is the common prefix of all keys, ending in '/'.
func (k Keys) Prefix() string { return k.prefix }

// Hosts is the prefix of all host registration keys.
func (k Keys) Hosts() string { return k.prefix + "hosts/" }

// Host is the registration key of one host.
func (k Keys) Host(id int32) string { return k.Hosts() + strconv.FormatInt(int64(id), 10) }

// Topics is the prefix of all topic keys.
func (k Keys) Topics() string { return k.prefix + "topics/" }

// Topic is the key of one topic.
func (k Keys) Topic(name string) string { return k.Topics() + name }

// Election is the controller election prefix, as given to
// concurrency.NewElection (which appends '/' and the session's lease id).
func (k Keys) Election() string { return k.prefix + "controller/election" }

// hostIDFromKey parses the host id out of a key under Hosts().
func (k Keys) hostIDFromKey(key string) (int32, error) {
	s, ok := strings.CutPrefix(key, k.Hosts())
	if !ok {
		return 0, fmt.Errorf("%w: key %q is not under %q", ErrCorruptMetadata, key, k.Hosts())
	}
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: key %q: host id: %v", ErrCorruptMetadata, key, err)
	}
	return int32(id), nil
}

// topicFromKey returns the topic name of a key under Topics().
func (k Keys) topicFromKey(key string) (string, error) {
	s, ok := strings.CutPrefix(key, k.Topics())
	if !ok {
		return "", fmt.Errorf("%w: key %q is not under %q", ErrCorruptMetadata, key, k.Topics())
	}
	return s, nil
}

// ScramUsers is the prefix of the SCRAM user keys.
func (k Keys) ScramUsers() string { return k.prefix + "users/scram/" }

// ScramUser is the key of one user's SCRAM credentials.
func (k Keys) ScramUser(name string) string { return k.ScramUsers() + url.PathEscape(name) }

// scramUserFromKey returns the user name of a key under ScramUsers().
func (k Keys) scramUserFromKey(key string) (string, error) {
	s, ok := strings.CutPrefix(key, k.ScramUsers())
	if !ok {
		return "", fmt.Errorf("%w: key %q is not under %q", ErrCorruptMetadata, key, k.ScramUsers())
	}
	name, err := url.PathUnescape(s)
	if err != nil {
		return "", fmt.Errorf("%w: key %q: %v", ErrCorruptMetadata, key, err)
	}
	return name, nil
}

// ACLs is the prefix of the ACL binding keys.
func (k Keys) ACLs() string { return k.prefix + "acls/" }

// ACLsOf is the prefix of the ACL binding keys of one resource type.
func (k Keys) ACLsOf(rt acl.ResourceType) string { return k.ACLs() + rt.String() + "/" }

// ACL is the key of one binding: every field of it, the strings
// path-escaped (no '/' left in them), so equal bindings have one key and
// different ones different keys. The binding should be valid.
func (k Keys) ACL(b acl.Binding) string {
	return k.ACLsOf(b.Resource) + b.Pattern.String() + "/" + url.PathEscape(b.Name) + "/" +
		url.PathEscape(b.Principal) + "/" + url.PathEscape(b.Host) + "/" +
		b.Operation.String() + "/" + b.Permission.String()
}
