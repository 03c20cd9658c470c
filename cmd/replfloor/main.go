// replfloor: the least work replication can do on this machine, with
// nothing of actorlog in it, so the ratio issue 15's goal 4 asks of
// actorlog (replication factor 3 against 1 on the same three loopback
// hosts) can be set against the same ratio for bare syscalls.
//
// One process plays three hosts and a producer. A partition's leader
// reads the producer's batches from a TCP connection, checks their CRC-32C
// (as every host checks a batch it is given), writes them to a file with
// pwrite and, with --rf 3, lets two followers on the other hosts have
// them: each follower's sender goroutine ships what the leader's file
// holds past what it sent (with sendfile, Kafka's way, or --follower-read
// pread: read into memory and write to the socket, actorlog's way) over a
// TCP connection of its own; the follower checks the CRC, pwrites and
// answers with its log end. The leader answers the producer once both
// followers have a batch (acks=all). The producer keeps --in-flight
// batches of --batch bytes outstanding on each of --partitions
// partitions, whose leaders are spread over the hosts.
//
// There are no records, no protocol, no actors and no allocation per
// batch: what is left is what any replicated log pays per byte here —
// loopback socket copies, page-cache writes, the CRC — so its ratio is
// an upper bound for any implementation's on the same machine.
//
// Usage:
//
//	replfloor --dir /tmp/floor [--rounds 3] [--duration 5s] [--record-size 1024] [--batch 1048576]
//	          [--in-flight 10] [--partitions 3] [--follower-read sendfile|pread]
//
// Rounds alternate RF=1 and RF=3 (round r starts with the other one than
// round r-1); each run's data is removed before the next. It prints every
// run, the medians and the ratio.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

func main() {
	dir := flag.String("dir", "", "directory for the hosts' files (required; removed run by run)")
	rounds := flag.Int("rounds", 3, "RF=1/RF=3 pairs of runs")
	duration := flag.Duration("duration", 5*time.Second, "length of each run")
	recordSize := flag.Int("record-size", 1024, "bytes per record: only converts bytes/s into records/s")
	batch := flag.Int("batch", 1<<20, "bytes per produce batch (actorlog's default batch size)")
	inFlight := flag.Int("in-flight", 10, "batches outstanding per partition (actorlog's default max in flight)")
	partitions := flag.Int("partitions", 3, "partitions; partition p is led by host p mod 3")
	followerRead := flag.String("follower-read", "sendfile", "how a leader ships its file to a follower: sendfile or pread")
	flag.Parse()
	cfg := config{dir: *dir, duration: *duration, batch: *batch, inFlight: *inFlight, partitions: *partitions,
		sendfile: *followerRead == "sendfile"}
	if *dir == "" || *rounds < 1 || *duration <= 0 || *recordSize < 1 || *batch < 1 || *inFlight < 1 || *partitions < 1 ||
		(*followerRead != "sendfile" && *followerRead != "pread") {
		fmt.Fprintln(os.Stderr, "replfloor: --dir is required; --rounds, --duration, --record-size, --batch, --in-flight and --partitions must be positive; --follower-read is sendfile or pread")
		os.Exit(2)
	}
	var rates [2][]float64 // by rf index: 0 is RF=1, 1 is RF=3
	for r := range *rounds {
		order := []int{1, 3}
		if r%2 == 1 {
			order = []int{3, 1}
		}
		for _, rf := range order {
			cfg.rf = rf
			res, err := run(cfg)
			if err != nil {
				fmt.Fprintln(os.Stderr, "replfloor:", err)
				os.Exit(1)
			}
			recs := res.bytesPerSec() / float64(*recordSize)
			rates[rf/3] = append(rates[rf/3], recs)
			fmt.Printf("round %d rf=%d: %.0f MB/s acked, %.0f records/s of %d B, CPU %.2f s (user %.2f, system %.2f) over %s, %.2f µs/record\n",
				r+1, rf, res.bytesPerSec()/1e6, recs, *recordSize, res.cpu().Seconds(), res.user.Seconds(), res.system.Seconds(),
				res.elapsed.Round(time.Millisecond), float64(res.cpu().Microseconds())/(recs*res.elapsed.Seconds()))
		}
	}
	m1, m3 := median(rates[0]), median(rates[1])
	fmt.Printf("medians: rf=1 %.0f records/s, rf=3 %.0f records/s, ratio %.2f (follower read: %s, batch %d B, in flight %d)\n",
		m1, m3, m3/m1, *followerRead, *batch, *inFlight)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
