// floor.go: one run — three hosts, a producer, --partitions partitions
// with --rf replicas each, for --duration.

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	hosts = 3
	// header is a stored batch's length and CRC-32C, before its bytes.
	header = 8
	// maxShip is the most a leader ships to a follower at once
	// (actorlog's replica fetch limit).
	maxShip = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type config struct {
	dir        string
	rf         int
	duration   time.Duration
	batch      int
	inFlight   int
	partitions int
	sendfile   bool
	// verify: before the data goes, check that every follower's file is
	// whole batches, a prefix of its leader's, holding what was acked
	verify bool
}

type result struct {
	acked                 int64 // payload bytes every replica had when the run ended
	elapsed, user, system time.Duration
}

func (r result) bytesPerSec() float64 { return float64(r.acked) / r.elapsed.Seconds() }
func (r result) cpu() time.Duration   { return r.user + r.system }

// runState is what every goroutine of a run shares: whether it is over
// (errors after that are the teardown's) and the first error before.
type runState struct {
	stopped atomic.Bool
	done    chan struct{} // closed when the run is over
	mu      sync.Mutex
	err     error
	closers []io.Closer
	wg      sync.WaitGroup
	parts   []*partition
	acked   []atomic.Int64
}

func (s *runState) fail(err error) {
	if s.stopped.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *runState) spawn(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil {
			s.fail(err)
		}
	}()
}

// connPair is a loopback TCP connection to l: the dialing and the
// accepted end.
func (s *runState) connPair(l net.Listener) (net.Conn, net.Conn, error) {
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", l.Addr(), err)
	}
	a, err := l.Accept()
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("accept on %s: %w", l.Addr(), err)
	}
	s.closers = append(s.closers, c, a)
	return c, a, nil
}

func (s *runState) open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s.closers = append(s.closers, f)
	return f, nil
}

// partition is one partition's leader side.
type partition struct {
	mu   sync.Mutex
	cond *sync.Cond
	leo  int64 // bytes in the leader's file
	// followers' log ends, as they acknowledged them
	acks []atomic.Int64
	// ackSignal wakes the goroutine answering the producer
	ackSignal chan struct{}
}

func run(cfg config) (res result, err error) {
	if err := os.RemoveAll(cfg.dir); err != nil {
		return res, fmt.Errorf("clear %s: %w", cfg.dir, err)
	}
	s := &runState{done: make(chan struct{})}
	var listeners [hosts]net.Listener
	for h := range hosts {
		if err := os.MkdirAll(filepath.Join(cfg.dir, fmt.Sprint("host-", h)), 0o700); err != nil {
			return res, fmt.Errorf("create host directory: %w", err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, fmt.Errorf("listen: %w", err)
		}
		listeners[h] = l
		s.closers = append(s.closers, l)
	}
	defer func() {
		s.stopped.Store(true)
		close(s.done)
		for _, st := range s.parts {
			st.mu.Lock() // a sender between its check and its Wait gets the broadcast
			st.mu.Unlock()
			st.cond.Broadcast()
		}
		for _, c := range s.closers {
			_ = c.Close() // teardown: the goroutines end on the closed connections
		}
		s.wg.Wait()
		if cfg.verify && err == nil {
			err = verify(cfg, s.acked)
		}
		if rmErr := os.RemoveAll(cfg.dir); rmErr != nil && err == nil {
			err = fmt.Errorf("remove %s: %w", cfg.dir, rmErr)
		}
	}()

	stored := int64(header + cfg.batch)
	acked := make([]atomic.Int64, cfg.partitions) // producer's view: bytes acknowledged per partition
	s.acked = acked
	for p := range cfg.partitions {
		if err := s.partition(cfg, listeners, p, &acked[p]); err != nil {
			return res, err
		}
	}
	before, err := rusage()
	if err != nil {
		return res, err
	}
	start := time.Now()
	time.Sleep(cfg.duration)
	var total int64
	for p := range acked {
		total += acked[p].Load() / stored * int64(cfg.batch)
	}
	res.elapsed = time.Since(start)
	after, err := rusage()
	if err != nil {
		return res, err
	}
	res.acked = total
	res.user = time.Duration(after.Utime.Nano() - before.Utime.Nano())
	res.system = time.Duration(after.Stime.Nano() - before.Stime.Nano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return res, s.err
	}
	if total == 0 {
		return res, errors.New("nothing was acknowledged")
	}
	return res, nil
}

func rusage() (syscall.Rusage, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return u, fmt.Errorf("getrusage: %w", err)
	}
	return u, nil
}

// partition wires partition p: the producer's connection to its leader
// (host p mod 3), and with RF=3 one connection to each follower, and
// starts their goroutines.
func (s *runState) partition(cfg config, listeners [hosts]net.Listener, p int, acked *atomic.Int64) error {
	leader := p % hosts
	file := fmt.Sprintf("%d.log", p)
	lf, err := s.open(filepath.Join(cfg.dir, fmt.Sprint("host-", leader), file))
	if err != nil {
		return err
	}
	producer, leaderIn, err := s.connPair(listeners[leader])
	if err != nil {
		return err
	}
	st := &partition{ackSignal: make(chan struct{}, 1)}
	st.cond = sync.NewCond(&st.mu)
	s.parts = append(s.parts, st)
	if cfg.rf > 1 {
		st.acks = make([]atomic.Int64, cfg.rf-1)
		for i := range cfg.rf - 1 {
			follower := (leader + 1 + i) % hosts
			ff, err := s.open(filepath.Join(cfg.dir, fmt.Sprint("host-", follower), file))
			if err != nil {
				return err
			}
			toFollower, followerIn, err := s.connPair(listeners[follower])
			if err != nil {
				return err
			}
			src, err := os.Open(lf.Name()) // its own offset, for sendfile
			if err != nil {
				return fmt.Errorf("open %s: %w", lf.Name(), err)
			}
			s.closers = append(s.closers, src)
			s.spawn(func() error { return s.ship(cfg, st, src, toFollower) })
			s.spawn(func() error { return followerAcks(toFollower, &st.acks[i], st.ackSignal) })
			s.spawn(func() error { return follow(followerIn, ff) })
		}
		s.spawn(func() error { return s.answer(st, leaderIn) })
	}
	s.spawn(func() error { return s.lead(cfg, st, leaderIn, lf) })
	s.spawn(func() error { return s.produce(cfg, producer, acked) })
	return nil
}

// produce keeps cfg.inFlight batches outstanding on conn and records the
// leader's cumulative acknowledgements in acked.
func (s *runState) produce(cfg config, conn net.Conn, acked *atomic.Int64) error {
	msg := make([]byte, header+cfg.batch)
	for i := header; i < len(msg); i++ {
		msg[i] = byte(i*7 + i>>8)
	}
	binary.BigEndian.PutUint32(msg, uint32(cfg.batch))
	binary.BigEndian.PutUint32(msg[4:], crc32.Checksum(msg[header:], castagnoli))
	tokens := make(chan struct{}, cfg.inFlight)
	s.spawn(func() error {
		var b [8]byte
		var prev int64
		for {
			if _, err := io.ReadFull(conn, b[:]); err != nil {
				return fmt.Errorf("producer: read ack: %w", err)
			}
			o := int64(binary.BigEndian.Uint64(b[:]))
			acked.Store(o) // always whole batches
			for range (o - prev) / int64(len(msg)) {
				<-tokens
			}
			prev = o
		}
	})
	for {
		select {
		case tokens <- struct{}{}:
		case <-s.done:
			return nil
		}
		if _, err := conn.Write(msg); err != nil {
			return fmt.Errorf("producer: write batch: %w", err)
		}
	}
}

// lead appends the producer's batches to the leader's file, after
// checking each one's CRC, and answers them at once with RF=1; with more
// replicas it wakes the senders and answer does.
func (s *runState) lead(cfg config, st *partition, in net.Conn, f *os.File) error {
	buf := make([]byte, header+cfg.batch)
	var leo int64
	for {
		if _, err := io.ReadFull(in, buf[:header]); err != nil {
			return fmt.Errorf("leader: read batch header: %w", err)
		}
		n := int(binary.BigEndian.Uint32(buf))
		if n != cfg.batch {
			return fmt.Errorf("leader: batch of %d bytes, want %d", n, cfg.batch)
		}
		if _, err := io.ReadFull(in, buf[header:]); err != nil {
			return fmt.Errorf("leader: read batch: %w", err)
		}
		if err := checkBatches(buf); err != nil {
			return fmt.Errorf("leader: %w", err)
		}
		if _, err := f.WriteAt(buf, leo); err != nil {
			return fmt.Errorf("leader: write: %w", err)
		}
		leo += int64(len(buf))
		if cfg.rf == 1 {
			if err := writeOffset(in, leo); err != nil {
				return fmt.Errorf("leader: answer: %w", err)
			}
			continue
		}
		st.mu.Lock()
		st.leo = leo
		st.mu.Unlock()
		st.cond.Broadcast()
	}
}

// ship sends a follower what the leader's file holds past what it sent,
// whole batches, up to maxShip at a time: a length, then the bytes, by
// sendfile or by a read into memory and a socket write.
func (s *runState) ship(cfg config, st *partition, src *os.File, conn net.Conn) error {
	stored := int64(header + cfg.batch)
	per := max(maxShip/stored, 1) * stored
	buf := []byte(nil)
	if !cfg.sendfile {
		buf = make([]byte, per)
	}
	var sent int64
	for {
		st.mu.Lock()
		for st.leo == sent && !s.stopped.Load() {
			st.cond.Wait()
		}
		leo := st.leo
		st.mu.Unlock()
		if s.stopped.Load() {
			return nil
		}
		n := min(leo-sent, per)
		if err := writeOffset(conn, n); err != nil {
			return fmt.Errorf("ship: write length: %w", err)
		}
		if cfg.sendfile {
			if _, err := src.Seek(sent, io.SeekStart); err != nil {
				return fmt.Errorf("ship: seek: %w", err)
			}
			if _, err := io.CopyN(conn, src, n); err != nil { // sendfile(2) via TCPConn.ReadFrom
				return fmt.Errorf("ship: sendfile: %w", err)
			}
		} else {
			if _, err := src.ReadAt(buf[:n], sent); err != nil {
				return fmt.Errorf("ship: pread: %w", err)
			}
			if _, err := conn.Write(buf[:n]); err != nil {
				return fmt.Errorf("ship: write: %w", err)
			}
		}
		sent += n
	}
}

// follow appends what the leader ships, checking every batch's CRC, and
// acknowledges its log end after each write.
func follow(in net.Conn, f *os.File) error {
	buf := make([]byte, maxShip+header+1<<20)
	var leo int64
	var b [8]byte
	for {
		if _, err := io.ReadFull(in, b[:]); err != nil {
			return fmt.Errorf("follower: read length: %w", err)
		}
		n := int64(binary.BigEndian.Uint64(b[:]))
		if n <= 0 || n > int64(len(buf)) {
			return fmt.Errorf("follower: %d bytes shipped at once", n)
		}
		chunk := buf[:n]
		if _, err := io.ReadFull(in, chunk); err != nil {
			return fmt.Errorf("follower: read: %w", err)
		}
		if err := checkBatches(chunk); err != nil {
			return fmt.Errorf("follower: %w", err)
		}
		if _, err := f.WriteAt(chunk, leo); err != nil {
			return fmt.Errorf("follower: write: %w", err)
		}
		leo += n
		if err := writeOffset(in, leo); err != nil {
			return fmt.Errorf("follower: acknowledge: %w", err)
		}
	}
}

// followerAcks records a follower's acknowledged log end and wakes answer.
func followerAcks(conn net.Conn, ack *atomic.Int64, signal chan struct{}) error {
	var b [8]byte
	for {
		if _, err := io.ReadFull(conn, b[:]); err != nil {
			return fmt.Errorf("leader: read follower's acknowledgement: %w", err)
		}
		ack.Store(int64(binary.BigEndian.Uint64(b[:])))
		select {
		case signal <- struct{}{}:
		default:
		}
	}
}

// answer tells the producer how far every follower has the log (acks=all
// with every replica in sync).
func (s *runState) answer(st *partition, conn net.Conn) error {
	var last int64
	for {
		select {
		case <-st.ackSignal:
		case <-s.done:
			return nil
		}
		hw := st.acks[0].Load()
		for i := range st.acks {
			hw = min(hw, st.acks[i].Load())
		}
		if hw > last {
			if err := writeOffset(conn, hw); err != nil {
				return fmt.Errorf("leader: answer: %w", err)
			}
			last = hw
		}
	}
}

// checkBatches checks the CRC of every stored batch in b.
func checkBatches(b []byte) error {
	for len(b) > 0 {
		if len(b) < header {
			return fmt.Errorf("%d bytes left, shorter than a batch header", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if n > len(b)-header {
			return fmt.Errorf("batch of %d bytes runs past the %d bytes left", n, len(b)-header)
		}
		if got, want := crc32.Checksum(b[header:header+n], castagnoli), binary.BigEndian.Uint32(b[4:]); got != want {
			return fmt.Errorf("batch CRC %08x, want %08x", got, want)
		}
		b = b[header+n:]
	}
	return nil
}

func writeOffset(w io.Writer, o int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(o))
	_, err := w.Write(b[:])
	return err
}

// verify checks every partition's files after a run: the leader's holds
// whole batches with good CRCs, and with RF=3 each follower's is a prefix
// of it at least as long as what the producer had acknowledged.
func verify(cfg config, acked []atomic.Int64) error {
	for p := range cfg.partitions {
		leader := p % hosts
		path := func(h int) string { return filepath.Join(cfg.dir, fmt.Sprint("host-", h), fmt.Sprintf("%d.log", p)) }
		lb, err := os.ReadFile(path(leader))
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if err := checkBatches(lb); err != nil {
			return fmt.Errorf("verify: partition %d's leader: %w", p, err)
		}
		if int64(len(lb)) < acked[p].Load() {
			return fmt.Errorf("verify: partition %d's leader has %d bytes, %d were acknowledged", p, len(lb), acked[p].Load())
		}
		for i := range cfg.rf - 1 {
			f := (leader + 1 + i) % hosts
			fb, err := os.ReadFile(path(f))
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			if int64(len(fb)) < acked[p].Load() || len(fb) > len(lb) || !bytes.Equal(fb, lb[:len(fb)]) {
				return fmt.Errorf("verify: partition %d's follower on host %d has %d bytes, not a prefix of the leader's %d holding the %d acknowledged",
					p, f, len(fb), len(lb), acked[p].Load())
			}
		}
	}
	return nil
}
