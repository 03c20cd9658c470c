// This file holds SetProducer, which rewrites an encoded batch's idempotent
// producer fields (for a producer that re-stamps a batch after its producer
// id changed).

package record

import "encoding/binary"

// SetProducer writes the producer id, producer epoch and base sequence into
// an encoded v2 batch header in place and recomputes the CRC, which covers
// them. b must be a whole batch (HeaderSize bytes or more, as built by a
// Builder); the records are not touched. A producer that is not idempotent
// writes -1 in all three.
func SetProducer(b []byte, producerID int64, epoch int16, baseSequence int32) {
	be := binary.BigEndian
	be.PutUint64(b[offProducerID:], uint64(producerID))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offBaseSequence:], uint32(baseSequence))
	be.PutUint32(b[offCRC:], Checksum(b))
}
