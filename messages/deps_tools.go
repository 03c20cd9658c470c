//go:build tools

// This file pins the actor framework in go.mod before any package imports
// it (the host issue does): every host must run the same protoactor-go
// commit, because remote.proto changed between versions (DESIGN §8). The
// "tools" build tag keeps it out of every real build, while `go mod tidy`,
// which considers all tags, keeps the requirement.

package messages

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/asynkron/protoactor-go/cluster"
	_ "github.com/asynkron/protoactor-go/remote"
)
