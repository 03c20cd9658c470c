// offsets.go holds the special ListOffsetsRequest timestamps, shared by the
// replicas that answer them and the clients and tools that send them.

package messages

// Special ListOffsetsRequest.timestamp values, as in Kafka.
const (
	// LatestTimestamp asks for the latest offset: the high watermark.
	LatestTimestamp = -1
	// EarliestTimestamp asks for the earliest offset: the log start offset.
	EarliestTimestamp = -2
	// MaxTimestamp asks for the offset and timestamp of the record with the
	// largest timestamp below the high watermark, the earliest on a tie
	// (Kafka's MAX_TIMESTAMP, KIP-734); offset and timestamp -1 when there
	// is none.
	MaxTimestamp = -3
)
