package client

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/sirupsen/logrus"
)

// TestPoolFetchAnswersNests: the client's codec pools fetch answers while
// any PoolFetchAnswers caller has not released, releasing twice counts
// once, and a client attached to a host's system changes nothing.
func TestPoolFetchAnswersNests(t *testing.T) {
	// A client as New makes one, without starting a remote: a second
	// remote in a test process races on grpc-go's logger (protoactor's
	// Remote.Start sets it).
	c := &Client{remote: &remote.Remote{}}
	codec := remoteCodec{fetchUsers: &c.fetchPoolUsers}
	if codec.poolsFetch() {
		t.Fatal("pools fetch answers before anyone asked")
	}
	a, b := c.PoolFetchAnswers(), c.PoolFetchAnswers()
	a()
	a()
	if !codec.poolsFetch() {
		t.Fatal("stopped pooling while one caller still holds it (or a second release counted twice)")
	}
	b()
	if codec.poolsFetch() {
		t.Fatalf("still pooling after every caller released (users %d)", c.fetchPoolUsers.Load())
	}

	att, err := Attach(actor.NewActorSystem(), Config{Bootstrap: []string{"127.0.0.1:1"}, Logger: logrus.NewEntry(logrus.New())})
	if err != nil {
		t.Fatal(err)
	}
	release := att.PoolFetchAnswers()
	release()
	if att.fetchPoolUsers.Load() != 0 || c.fetchPoolUsers.Load() != 0 {
		t.Fatal("an attached client counted a pooling user")
	}
	if !(remoteCodec{poolFetch: true}).poolsFetch() {
		t.Fatal("a host's codec (WithPooledFetchAnswers) does not pool fetch answers")
	}
}
