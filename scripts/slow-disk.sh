#!/usr/bin/env bash
# slow-disk.sh: one host on a slow disk creates a topic of many partitions;
# the host must keep its lease (no failed renewal, no fence).
#
# The host's writes are throttled to IOPS write operations a second with a
# cgroup (v1 blkio or v2 io.max: needs root), as on a small cloud volume.
# Its embedded etcd writes its WAL on the same disk, so every fsync the
# partitions make queues with the lease renewals.
#
#   sudo scripts/slow-disk.sh                 # 1,000 partitions at 100 IOPS
#   IOPS=50 PARTITIONS=2000 sudo scripts/slow-disk.sh
#
# Prints how long the replicas took to start and what the host logged about
# its lease; exits 1 if a renewal failed or the host fenced itself.
set -euo pipefail

IOPS=${IOPS:-100}
PARTITIONS=${PARTITIONS:-1000}
keep=${WORK:+yes} # a WORK given is kept; a temporary one removed
WORK=${WORK:-$(mktemp -d /var/tmp/actorlog-slowdisk.XXXXXX)}
PORT=${PORT:-17470} # actor remote; etcd +1/+2; HTTP PORT+10; Kafka PORT+20
root=$(cd "$(dirname "$0")/.." && pwd)

mkdir -p "$WORK/data"
dev=$(findmnt -no MAJ:MIN -T "$WORK" | head -1 | tr -d ' ')
# A partition's major:minor is throttled through its whole disk.
if [ -e "/sys/dev/block/$dev/partition" ]; then
	dev=$(cat "/sys/dev/block/$dev/../dev")
fi

# No way to throttle here (not root, no I/O controller, a read-only cgroup
# tree, a directory on no block device): exit 2, "cannot run here".
cg=""
cannot() {
	echo "slow-disk.sh: $*" >&2
	[ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true
	[ -n "$keep" ] || rm -rf "$WORK"
	exit 2
}
[ "$(id -u)" = 0 ] || cannot "needs root (cgroup I/O throttling)"
case "$dev" in 0:*) cannot "$WORK is on no block device ($dev)" ;; esac

if [ -d /sys/fs/cgroup/blkio ]; then
	cg=/sys/fs/cgroup/blkio/actorlog-slowdisk
	mkdir -p "$cg" 2>/dev/null || cannot "cannot make $cg"
	echo "$dev $IOPS" >"$cg/blkio.throttle.write_iops_device" 2>/dev/null || cannot "cannot throttle $dev in $cg"
	unthrottle() { echo "$dev 0" >"$cg/blkio.throttle.write_iops_device"; }
else
	unified=/sys/fs/cgroup
	[ -f "$unified/cgroup.subtree_control" ] || unified=/sys/fs/cgroup/unified
	grep -qw io "$unified/cgroup.controllers" 2>/dev/null || cannot "no blkio or io cgroup controller here"
	echo +io >"$unified/cgroup.subtree_control" 2>/dev/null || cannot "cannot enable the io controller in $unified"
	cg=$unified/actorlog-slowdisk
	mkdir -p "$cg" 2>/dev/null || cannot "cannot make $cg"
	echo "$dev wiops=$IOPS" >"$cg/io.max" 2>/dev/null || cannot "cannot throttle $dev in $cg"
	unthrottle() { echo "$dev wiops=max" >"$cg/io.max"; }
fi

bin=${BIN:-}
if [ -z "$bin" ]; then # BIN: a binary to try instead of this tree's
	bin=$WORK/actorlog
	(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/actorlog)
fi
log=$WORK/host.log
addr=127.0.0.1:$PORT
http=127.0.0.1:$((PORT + 10))
bash -c "echo \$\$ >'$cg/cgroup.procs'; exec '$bin' host --data-dir '$WORK/data' --listen $addr --http $http --kafka-listen 127.0.0.1:$((PORT + 20))" >"$log" 2>&1 &
hostpid=$!
cleanup() {
	kill -9 "$hostpid" 2>/dev/null || true
	unthrottle # a process killed in D state leaves once its I/O is let through
	wait "$hostpid" 2>/dev/null || true
	rmdir "$cg" 2>/dev/null || true
	[ -n "$keep" ] || rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq 1 300); do
	curl -sf "http://$http/healthz" >/dev/null && break
	sleep 0.2
done
start=$(date +%s.%N)
"$bin" topics create slow --partitions "$PARTITIONS" --bootstrap "$addr" >/dev/null
for _ in $(seq 1 3000); do
	[ "$(grep -c 'replica started' "$log")" -ge "$PARTITIONS" ] && break
	sleep 0.1
done
took=$(echo "$(date +%s.%N) - $start" | bc)
sleep 15 # a lease lost late in the start shows within a TTL or two
started=$(grep -c 'replica started' "$log" || true)
failed=$(grep -c 'lease renewals succeed again' "$log" || true)
lost=$(grep -c 'no lease renewal succeeded\|lease expired' "$log" || true)
fenced=$(grep -c 'lease lost: fenced' "$log" || true)
slowsync=$(grep -o 'slow fdatasync.*took=[0-9.]*[a-z]*' "$log" | grep -o 'took=.*' | tr '\n' ' ' || true)
echo "$PARTITIONS partitions at $IOPS write IOPS: $started replicas started in ${took%.*} s; lease: $failed renewal failures recovered, $lost lost, $fenced fenced; etcd slow fdatasync: ${slowsync:-none}"
[ "$failed" = 0 ] && [ "$lost" = 0 ] && [ "$fenced" = 0 ] && [ "$started" -ge "$PARTITIONS" ]
