// defaults.go: the default connection limits of a process, derived from
// its descriptor limit. The cluster package sizes partition capacity from
// the same reserve (cluster.PartitionCapacity); clients size their own
// remote's limiter with HostMaxConnections.

package netlimit

// ReservedDescriptors is the part of RLIMIT_NOFILE a host keeps out of its
// partition capacity (cluster.PartitionCapacity), for the embedded etcd,
// connections, HTTP and rolled segments; half of it is for connections.
// When the limit is below twice this, half the limit is reserved instead.
const ReservedDescriptors = 1024

// DefaultMaxConnections is max.connections for a process whose
// descriptor limit is nofile: half of the descriptors PartitionCapacity
// keeps in reserve (ReservedDescriptors, or nofile/2 below twice that), the
// other half staying for the embedded etcd's files and peers, outgoing
// connections and rolled segments. So a host at its partition capacity
// and at its connection limit still has descriptors left and etcd never
// sees EMFILE: 1024 -> 256, 2048 and above -> 512. Kafka has no finite
// default; a host that needs more connections raises RLIMIT_NOFILE and
// --max-connections together (every connection above this default comes
// out of the etcd half).
func DefaultMaxConnections(nofile uint64) int {
	return int(min(uint64(ReservedDescriptors), nofile/2) / 2)
}

// DefaultMaxConnectionsPerIP is max.connections.per.ip for a given
// max.connections: half of it, so that one address (a flood, or a client
// leaking connections) cannot take every slot from the other hosts and
// clients. Kafka's default is unlimited. Deployments with every peer on
// one address (loopback clusters, a proxy) share these slots: raise
// --max-connections-per-ip there.
func DefaultMaxConnectionsPerIP(maxConnections int) int { return max(maxConnections/2, 1) }

// HostMaxConnections is DefaultMaxConnections of this process's current
// RLIMIT_NOFILE (1024 when it cannot be read).
func HostMaxConnections() int {
	n, ok := DescriptorLimit()
	if !ok {
		n = 1024
	}
	return DefaultMaxConnections(n)
}
