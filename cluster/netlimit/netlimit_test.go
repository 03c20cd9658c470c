// netlimit_test.go: the limited listener and gRPC credentials over real
// loopback sockets — total and per-IP caps, refused connections closed at
// once and counted, slots given back on close, Accept surviving EMFILE,
// and the Prometheus collector.

package netlimit

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/actorlog/actorlog/internal/poll"
)

func newLimiter(t *testing.T, total, perIP int) *Limiter {
	t.Helper()
	l, err := New(Limits{MaxConnections: total, MaxConnectionsPerIP: perIP}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serve accepts on ln until it closes, keeping each connection open and
// sending it one byte so the dialer knows it was accepted; the
// connections are returned on the channel.
func serve(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	conns := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			if _, err := c.Write([]byte{1}); err != nil {
				t.Errorf("write to accepted connection: %v", err)
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("close listener: %v", err)
		}
		for c := range conns {
			c.Close()
		}
	})
	return conns
}

// dialFrom connects to addr from the loopback address local (127.0.0.x)
// and reports whether the server kept the connection (it sent a byte)
// or closed it (EOF).
func dialFrom(t *testing.T, local, addr string) (net.Conn, bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, local, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	_, err = c.Read(b[:])
	switch {
	case err == nil:
		return c, true
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return c, false
	default:
		t.Fatalf("read from %s: %v", addr, err)
		return nil, false
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestListenerCaps(t *testing.T) {
	tests := []struct {
		name         string
		total, perIP int
		// dials lists the source address of each connection, in order;
		// want says which are kept.
		dials []string
		want  []bool
		// refused counts by reason.
		refusedTotal, refusedPerIP uint64
	}{
		{"total", 3, Unlimited,
			[]string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1"},
			[]bool{true, true, true, false, false}, 2, 0},
		{"per ip", 10, 2,
			[]string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.2"},
			[]bool{true, true, false, true, true, false}, 0, 2},
		{"total before per ip", 3, 2,
			[]string{"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.3"},
			[]bool{true, true, true, false, false}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, tt.total, tt.perIP)
			ln := l.Listener("test", listen(t))
			serve(t, ln)
			for i, from := range tt.dials {
				if _, kept := dialFrom(t, from, ln.Addr().String()); kept != tt.want[i] {
					t.Errorf("connection %d from %s kept=%v, want %v", i, from, kept, tt.want[i])
				}
			}
			s := l.Stats()["test"]
			if s.RefusedTotal != tt.refusedTotal || s.RefusedPerIP != tt.refusedPerIP {
				t.Errorf("refused total/per-ip = %d/%d, want %d/%d", s.RefusedTotal, s.RefusedPerIP, tt.refusedTotal, tt.refusedPerIP)
			}
			kept := 0
			for _, k := range tt.want {
				if k {
					kept++
				}
			}
			if s.Open != kept || l.Open() != kept || s.Accepted != uint64(kept) {
				t.Errorf("open %d (limiter %d), accepted %d, want %d", s.Open, l.Open(), s.Accepted, kept)
			}
		})
	}
}

// A slot comes back when the server closes its connection, and a new
// connection from the same address is then kept.
func TestListenerReleasesOnClose(t *testing.T) {
	l := newLimiter(t, 1, 1)
	ln := l.Listener("test", listen(t))
	conns := serve(t, ln)
	if _, kept := dialFrom(t, "127.0.0.1", ln.Addr().String()); !kept {
		t.Fatal("first connection refused")
	}
	if _, kept := dialFrom(t, "127.0.0.1", ln.Addr().String()); kept {
		t.Fatal("second connection kept over max.connections=1")
	}
	first := <-conns
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err == nil {
		t.Error("second Close of a connection succeeded")
	}
	if n := l.Open(); n != 0 {
		t.Fatalf("open after close = %d, want 0 (a double Close must not give back twice)", n)
	}
	if _, kept := dialFrom(t, "127.0.0.1", ln.Addr().String()); !kept {
		t.Fatal("connection after a slot was freed refused")
	}
}

// A flood of connections far over the limit: every one beyond it is closed
// by the server (the peer reads EOF), none waits in the backlog, and the
// counters add up.
func TestListenerFlood(t *testing.T) {
	const limit, flood = 20, 300
	l := newLimiter(t, limit, Unlimited)
	ln := l.Listener("test", listen(t))
	serve(t, ln)
	kept := 0
	for range flood {
		if _, ok := dialFrom(t, "127.0.0.1", ln.Addr().String()); ok {
			kept++
		}
	}
	if kept != limit {
		t.Errorf("kept %d of %d connections, want %d", kept, flood, limit)
	}
	s := l.Stats()["test"]
	if s.RefusedTotal != flood-limit || s.Open != limit {
		t.Errorf("stats %+v, want %d refused and %d open", s, flood-limit, limit)
	}
}

// fakeListener fails its first Accepts with an error, then hands out
// connections of a pipe.
type fakeListener struct {
	net.Listener // nil: only Accept, Close and Addr are used
	fails        atomic.Int32
	err          error
	closed       chan struct{}
}

func (f *fakeListener) Accept() (net.Conn, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, f.err
	}
	select {
	case <-f.closed:
		return nil, net.ErrClosed
	default:
	}
	a, b := net.Pipe()
	go func() { <-f.closed; b.Close() }()
	return a, nil
}

func (f *fakeListener) Close() error { close(f.closed); return nil }

func TestListenerRetriesEMFILE(t *testing.T) {
	f := &fakeListener{err: &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}, closed: make(chan struct{})}
	f.fails.Store(3)
	l := newLimiter(t, 10, 10)
	ln := l.Listener("test", f)
	start := time.Now()
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept after EMFILE: %v", err)
	}
	c.Close()
	if took := time.Since(start); took < 5*time.Millisecond+10*time.Millisecond+20*time.Millisecond {
		t.Errorf("three EMFILEs retried in %v, want pauses of 5, 10 and 20 ms", took)
	}
	if n := l.Stats()["test"].AcceptErrors; n != 3 {
		t.Errorf("accept errors = %d, want 3", n)
	}

	// Another error ends Accept; Close ends a pause.
	f.err = errors.New("boom")
	f.fails.Store(1)
	if _, err := ln.Accept(); err == nil || err.Error() != "boom" {
		t.Errorf("Accept with a final error = %v, want boom", err)
	}
	f.err = &net.OpError{Op: "accept", Net: "tcp", Err: syscall.ENFILE}
	f.fails.Store(1 << 20)
	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	// Close once Accept has had its first ENFILE and is pausing.
	poll.Until(t, 5*time.Second, func() error {
		if f.fails.Load() == 1<<20 {
			return errors.New("Accept not called yet")
		}
		return nil
	})
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept ended by Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Accept's pause")
	}
}

func TestWeight(t *testing.T) {
	l := newLimiter(t, 7, Unlimited)
	ln := l.Listener("relay", listen(t), WithWeight(3))
	serve(t, ln)
	var kept int
	for range 4 {
		if _, ok := dialFrom(t, "127.0.0.1", ln.Addr().String()); ok {
			kept++
		}
	}
	if kept != 2 || l.Open() != 6 {
		t.Errorf("kept %d connections of weight 3 under 7 slots (open %d), want 2 (6)", kept, l.Open())
	}
}

// The gRPC credentials: a real grpc server with MaxConnections=2; a
// third client connection fails, and when a client closes, its slot comes
// back.
func TestCredentials(t *testing.T) {
	l := newLimiter(t, 2, Unlimited)
	srv := grpc.NewServer(grpc.Creds(l.Credentials("remote", insecure.NewCredentials())))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := listen(t)
	go func() {
		if err := srv.Serve(lis); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(srv.Stop)

	check := func(cc *grpc.ClientConn) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	dial := func() *grpc.ClientConn {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	a, b, c := dial(), dial(), dial()
	defer a.Close()
	defer b.Close()
	defer c.Close()
	if err := check(a); err != nil {
		t.Fatalf("first client: %v", err)
	}
	if err := check(b); err != nil {
		t.Fatalf("second client: %v", err)
	}
	if err := check(c); err == nil {
		t.Fatal("third client served over max.connections=2")
	}
	if s := l.Stats()["remote"]; s.RefusedTotal == 0 || s.Open != 2 {
		t.Fatalf("stats %+v, want refusals and 2 open", s)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := l.Open(); n != 1 {
			return errors.New("slot not given back after the client closed")
		}
		return nil
	})
	poll.Until(t, 10*time.Second, func() error { return check(c) })
}

func TestCollector(t *testing.T) {
	l := newLimiter(t, 1, Unlimited)
	ln := l.Listener("http", listen(t))
	serve(t, ln)
	dialFrom(t, "127.0.0.1", ln.Addr().String())
	dialFrom(t, "127.0.0.1", ln.Addr().String())
	reg := prometheus.NewRegistry()
	reg.MustRegister(l)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, lp := range m.GetLabel() {
				key += "," + lp.GetName() + "=" + lp.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"actorlog_connections_open,listener=http":                                        1,
		"actorlog_connections_accepted_total,listener=http":                              1,
		"actorlog_connections_refused_total,listener=http,reason=max_connections":        1,
		"actorlog_connections_refused_total,listener=http,reason=max_connections_per_ip": 0,
		"actorlog_accept_errors_total,listener=http":                                     0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want exactly %v", got, want)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, lim := range []Limits{{0, 1}, {1, 0}, {-1, 5}} {
		if _, err := New(lim, nil); err == nil {
			t.Errorf("New(%+v) accepted", lim)
		}
	}
}
