// fetchstate_test.go: table tests of one partition's fetch state machine —
// every event from every state it can meet, step by step, with the state
// after each step and what the answer to a fetch is worth.

package consumer

import (
	"strings"
	"testing"
)

// fetchStep is one event on a fetchState and the state it must leave.
type fetchStep struct {
	// event is one of: resolve, resolved, send <corr>, answer <corr>,
	// abandon, hand, handed, pause, resume, fail, seek, revoke.
	event string
	want  fetchPhase
	// answer, for "answer" events: "stale", "use" or "drop".
	answer string
}

// apply runs ev on f and returns what an answer was worth ("" for other
// events).
func (s fetchStep) apply(t *testing.T, f *fetchState) string {
	t.Helper()
	name, arg, _ := strings.Cut(s.event, " ")
	corr := int64(len(arg)) // "send x" is fetch 1, "send xx" fetch 2
	switch name {
	case "resolve":
		f.resolve()
	case "resolved":
		f.resolved()
	case "send":
		f.send(corr)
	case "answer":
		switch stale, use := f.answered(corr); {
		case stale:
			return "stale"
		case use:
			return "use"
		default:
			return "drop"
		}
	case "abandon":
		f.abandon()
	case "hand":
		f.hand()
	case "handed":
		f.handed()
	case "pause":
		f.pause()
	case "resume":
		f.resume()
	case "fail":
		f.fail()
	case "seek":
		f.seek()
	case "revoke":
		f.revoke()
	default:
		t.Fatalf("unknown event %q", s.event)
	}
	return ""
}

func TestFetchState(t *testing.T) {
	tests := []struct {
		name  string
		steps []fetchStep
	}{
		{"look up the start, fetch, use the answer, fetch again", []fetchStep{
			{event: "resolve", want: fetchResolving},
			{event: "resolved", want: fetchIdle},
			{event: "send x", want: fetchFetching},
			{event: "answer x", want: fetchIdle, answer: "use"},
			{event: "send xx", want: fetchFetching},
		}},
		{"a handler target: hand off, then fetch once answered", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "answer x", want: fetchIdle, answer: "use"},
			{event: "hand", want: fetchHanding},
			{event: "handed", want: fetchIdle},
		}},
		{"an abandoned fetch's late answer is stale", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "abandon", want: fetchIdle},
			{event: "send xx", want: fetchFetching},
			{event: "answer x", want: fetchFetching, answer: "stale"},
			{event: "answer xx", want: fetchIdle, answer: "use"},
			{event: "answer xx", want: fetchIdle, answer: "stale"},
		}},
		{"paused while fetching: the answer is dropped", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "pause", want: fetchFetching},
			{event: "answer x", want: fetchPaused, answer: "drop"},
			{event: "resume", want: fetchIdle},
		}},
		{"paused and resumed before the answer: it is used", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "pause", want: fetchFetching},
			{event: "resume", want: fetchFetching},
			{event: "answer x", want: fetchIdle, answer: "use"},
		}},
		{"paused while handing: the hand-off ends first", []fetchStep{
			{event: "hand", want: fetchHanding},
			{event: "pause", want: fetchHanding},
			{event: "handed", want: fetchPaused},
			{event: "pause", want: fetchPaused},
			{event: "resume", want: fetchIdle},
			{event: "resume", want: fetchIdle},
		}},
		{"paused while resolving", []fetchStep{
			{event: "resolve", want: fetchResolving},
			{event: "pause", want: fetchResolving},
			{event: "resolved", want: fetchPaused},
		}},
		{"failed: only a seek clears it", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "answer x", want: fetchIdle, answer: "use"},
			{event: "fail", want: fetchFailed},
			{event: "resume", want: fetchFailed},
			{event: "seek", want: fetchIdle},
		}},
		{"an undecodable batch after records handed to a target", []fetchStep{
			{event: "fail", want: fetchFailed},
			{event: "hand", want: fetchHanding},
			{event: "handed", want: fetchFailed},
		}},
		{"failed, then paused: resume leaves it failed", []fetchStep{
			{event: "fail", want: fetchFailed},
			{event: "pause", want: fetchPaused},
			{event: "resume", want: fetchFailed},
		}},
		{"failed, then paused: a seek clears the failure, not the pause", []fetchStep{
			{event: "fail", want: fetchFailed},
			{event: "pause", want: fetchPaused},
			{event: "seek", want: fetchPaused},
			{event: "resume", want: fetchIdle},
		}},
		{"a seek forgets a fetch in flight and a lookup", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "seek", want: fetchIdle},
			{event: "answer x", want: fetchIdle, answer: "stale"},
			{event: "resolve", want: fetchResolving},
			{event: "seek", want: fetchIdle},
			{event: "resolved", want: fetchIdle},
		}},
		{"a seek leaves a hand-off in progress", []fetchStep{
			{event: "hand", want: fetchHanding},
			{event: "seek", want: fetchHanding},
			{event: "handed", want: fetchIdle},
		}},
		{"a lookup that overtakes a seek's fetch leaves the fetch", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "resolve", want: fetchFetching},
			{event: "resolved", want: fetchFetching},
		}},
		{"revoked while fetching: abandoned, final", []fetchStep{
			{event: "send x", want: fetchFetching},
			{event: "revoke", want: fetchRevoking},
			{event: "answer x", want: fetchRevoking, answer: "stale"},
			{event: "pause", want: fetchRevoking},
			{event: "resume", want: fetchRevoking},
			{event: "seek", want: fetchRevoking},
			{event: "fail", want: fetchRevoking},
		}},
		{"revoked while handing: the hand-off ends first", []fetchStep{
			{event: "hand", want: fetchHanding},
			{event: "revoke", want: fetchHanding},
			{event: "handed", want: fetchRevoking},
		}},
		{"revoked while paused over a failure", []fetchStep{
			{event: "fail", want: fetchFailed},
			{event: "pause", want: fetchPaused},
			{event: "revoke", want: fetchRevoking},
			{event: "resume", want: fetchRevoking},
		}},
		{"revoked while resolving: the lookup ends first", []fetchStep{
			{event: "resolve", want: fetchResolving},
			{event: "revoke", want: fetchResolving},
			{event: "resolved", want: fetchRevoking},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fetchState
			if !f.ready() || f.state() != fetchIdle {
				t.Fatalf("zero value %v, want idle and ready", f.state())
			}
			for i, s := range tt.steps {
				got := s.apply(t, &f)
				if got != s.answer {
					t.Fatalf("step %d (%s): answer %q, want %q", i, s.event, got, s.answer)
				}
				if f.state() != s.want {
					t.Fatalf("step %d (%s): state %v, want %v", i, s.event, f.state(), s.want)
				}
				if f.ready() != (s.want == fetchIdle) {
					t.Fatalf("step %d (%s): ready %v in state %v", i, s.event, f.ready(), f.state())
				}
				if (f.corr != 0) != f.fetching() {
					t.Fatalf("step %d (%s): corr %d while %v", i, s.event, f.corr, f.state())
				}
				if f.revoking() != (f.hold == fetchRevoking) || f.handing() != (f.step == fetchHanding) || f.resolving() != (f.step == fetchResolving) {
					t.Fatalf("step %d (%s): queries disagree with %+v", i, s.event, f)
				}
			}
		})
	}
}
