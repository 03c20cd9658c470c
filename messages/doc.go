// Package messages holds every message that actorlog actors exchange: the
// produce, fetch and offset requests and responses between clients and
// partition replicas, and between follower and leader replicas, with the
// ErrorCode each response carries.
//
// The messages are google.golang.org/protobuf types, so they cross hosts
// through protoactor-go's remote layer unchanged; every binary that talks to
// actorlog must link this package. Record data is never modelled field by
// field: it travels as Kafka RecordBatch v2 (magic 2) bytes in `records`
// fields, exactly as the log stores it on disk, so the broker fills in base
// offsets and leader epochs without decoding or re-encoding records.
//
// ErrorCode values are Kafka's protocol error codes. A non-zero code is a
// per-partition outcome reported to the peer, not a local fault; ErrorCode.Err
// and the responses' Err methods turn it into a Go error (*Error) for callers
// that want one, and ErrorCode.Retriable says whether to retry.
//
// The *.pb.go files are generated from the *.proto files beside them by
// scripts/genproto.sh (pinned protoc and protoc-gen-go); do not edit them. CI
// runs scripts/verify-genproto.sh, which fails when they are out of date.
package messages
