// names.go: the well-known actor ids that, with a host address, make the PIDs
// clients and hosts message directly.

package messages

import "strconv"

// Well-known actor ids on every host: with a host's address they form the
// PIDs clients and other hosts message directly.
const (
	// BrokerActorID is the broker actor: metadata and admin requests.
	BrokerActorID = "broker"
	// ControllerActorID is each host's controller candidate (the elected
	// one acts; the others stand by and forward to it).
	ControllerActorID = "controller"
)

// ReplicaActorID is the id of the replica actor of a partition, a child of
// the broker actor.
func ReplicaActorID(topic string, partition int32) string {
	return BrokerActorID + "/" + ReplicaActorName(topic, partition)
}

// ReplicaActorName is the name the broker spawns a replica actor under.
func ReplicaActorName(topic string, partition int32) string {
	return "p/" + topic + "/" + strconv.Itoa(int(partition))
}
