package replica

import (
	"testing"

	"github.com/actorlog/actorlog/internal/frame"
	"github.com/actorlog/actorlog/messages"
)

// TestRecycleFetchedGivesBackPooledFramesOnly: a fetch answer whose
// records lie in a pooled frame (a host's codec received it) goes back to
// its pool once appended; records of another origin are left to the
// garbage collector; either way the answer lets go of them.
func TestRecycleFetchedGivesBackPooledFramesOnly(t *testing.T) {
	pooled := &messages.FetchResponse{Records: frame.AllocPooled(32 << 10)}
	plain := &messages.FetchResponse{Records: make([]byte, 32<<10)}
	before, framesBefore := FetchedFramesRecycled(), frame.Recycled()
	recycleFetched(plain)
	if FetchedFramesRecycled() != before || frame.Recycled() != framesBefore {
		t.Fatal("records outside a pooled frame were counted as recycled")
	}
	recycleFetched(pooled)
	if FetchedFramesRecycled() != before+1 || frame.Recycled() != framesBefore+1 {
		t.Fatalf("pooled frame: %d recycled by the follower, %d by frame, want 1 each",
			FetchedFramesRecycled()-before, frame.Recycled()-framesBefore)
	}
	if pooled.Records != nil || plain.Records != nil {
		t.Fatal("an answer still holds records after recycleFetched")
	}
}
