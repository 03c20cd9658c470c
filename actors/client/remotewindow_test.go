// remotewindow_test.go: the remote's connections advertise the static
// flow-control window RemoteConfig sets (FlowControlWindow), as server and
// as dialer, read from the HTTP/2 frames on the wire. With grpc-go's
// default (64 KiB, grown from a bandwidth estimate) a fetch answer of a few
// MiB crossed in many window-update round trips and perf produce/consume
// ran at about half speed (issue 15).

package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"

	"github.com/actorlog/actorlog/cluster/netlimit"
)

// requireAdvertisedWindow sends the peer on fr our (empty) SETTINGS and
// requires that its own advertise FlowControlWindow as the initial stream
// window and that it raise the connection window to the same.
func requireAdvertisedWindow(t *testing.T, who string, fr *http2.Framer) {
	t.Helper()
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	stream, conn, err := windowOf(fr)
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	if stream != FlowControlWindow || conn != FlowControlWindow {
		t.Fatalf("%s advertises stream window %d, connection window %d; want %d for both", who, stream, conn, FlowControlWindow)
	}
}

// windowOf reads frames from fr until it has seen a SETTINGS frame (not an
// ack, which it acknowledges) and a connection-level WINDOW_UPDATE, and
// returns the advertised initial stream window and the connection window
// (65,535 plus the update). A peer that sends no update within the frames
// read fails.
func windowOf(fr *http2.Framer) (stream, conn uint32, err error) {
	stream, conn = 65535, 0
	var sawSettings bool
	for i := 0; i < 10 && (!sawSettings || conn == 0); i++ {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, 0, fmt.Errorf("frame %d: %w", i, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			sawSettings = true
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				stream = v
			}
			if err := fr.WriteSettingsAck(); err != nil {
				return 0, 0, err
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				conn = 65535 + f.Increment
			}
		}
	}
	if !sawSettings || conn == 0 {
		return 0, 0, errors.New("no SETTINGS and connection WINDOW_UPDATE in the first frames")
	}
	return stream, conn, nil
}

func TestRemoteServerAdvertisesFlowControlWindow(t *testing.T) {
	addr, _ := startLimitedRemote(t, netlimit.Limits{MaxConnections: 10, MaxConnectionsPerIP: 10})
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	requireAdvertisedWindow(t, "server", http2.NewFramer(c, bufio.NewReader(c)))
}

func TestRemoteDialerAdvertisesFlowControlWindow(t *testing.T) {
	cfg, err := RemoteConfig("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc, err := grpc.NewClient(ln.Addr().String(), cfg.DialOptions...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { // make the client connect; the call fails when the test ends
		_, _ = remote.NewRemotingClient(cc).ListProcesses(ctx, &remote.ListProcessesRequest{})
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("client preface %q: %v", preface, err)
	}
	requireAdvertisedWindow(t, "dialer", http2.NewFramer(c, br))
}
