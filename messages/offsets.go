// offsets.go holds the special ListOffsetsRequest timestamps, shared by the
// replicas that answer them and the clients and tools that send them.

package messages

// Special ListOffsetsRequest.timestamp values, as in Kafka.
const (
	// LatestTimestamp asks for the latest offset: the high watermark.
	LatestTimestamp = -1
	// EarliestTimestamp asks for the earliest offset: the log start offset.
	EarliestTimestamp = -2
)
