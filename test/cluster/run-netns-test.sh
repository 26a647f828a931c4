#!/bin/sh
# run-netns-test.sh: rpfs on a cluster of "hosts" made of network
# namespaces (test/cluster/netns.sh): one rpfsd per host namespace, each
# started from one `rpfs genconfig` config by its name and listening on
# its host's address only, MPI clients (mpiexec's own launcher) in a client
# namespace, veth links through a bridge.
#
# Usage: test/cluster/run-netns-test.sh MPICH_PREFIX
# Environment: RPFS_BIN (directory of rpfs and rpfsd; default: on PATH),
#   NS_HOSTS_N (hosts, default 4), TEST_TIMEOUT (seconds per MPI run, 120).
#
# What it checks:
#   - every server answers from the client namespace, and listens on its
#     own address only;
#   - collective write (4 processes) then reads by 2 and 3 processes, each
#     byte checked, independent and through a strided view (list I/O);
#     the strided example (examples/mpi_io_demo);
#   - striping across hosts: `rpfs stat` puts the slots on every host, and
#     every host's storage holds its share of the bytes (they add up);
#   - quick scaling on shaped links (tc tbf, 40 Mbit each way per host):
#     a file striped over 4 hosts moves faster than one on 1 host (the
#     full measurement is bench/netns-scaling);
#   - a host whose link goes down: every MPI rank gets an error naming that
#     server within a bounded time, and so does the rpfs command; no hang;
#     MPI jobs reading a mirrored file (mirror:2) over every host, running
#     as the link goes down, complete with every byte right, and so does
#     the rpfs command;
#     rpfs df shows it unreachable and new files go to the other hosts;
#     its link up again: online, new files use every host.
# Prints PASS/FAIL lines and "N passed, N failed"; where namespaces cannot
# be made (not root, no netns), "skipped: why" and "0 passed, 0 failed".
set -u

MPICH_PREFIX=${1:-${MPICH_PREFIX:-}}
[ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpicc" ] ||
	{ echo "usage: $0 MPICH_PREFIX (from scripts/build-mpich.sh)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN=${RPFS_BIN:-$(dirname "$(command -v rpfs 2>/dev/null || echo /nonexistent/rpfs)")}
RPFS=$BIN/rpfs
RPFSD=$BIN/rpfsd
[ -x "$RPFS" ] && [ -x "$RPFSD" ] ||
	{ echo "rpfs and rpfsd not found (set RPFS_BIN to the directory holding them)" >&2; exit 2; }
N=${NS_HOSTS_N:-4}
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
MPIEXEC=$MPICH_PREFIX/bin/mpiexec
# the rpfs library next to the binaries, before the one MPICH was built with
[ -d "$BIN/../lib" ] && export LD_LIBRARY_PATH="$(cd "$BIN/../lib" && pwd):$MPICH_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# shellcheck source=test/cluster/netns.sh
. "$HERE/netns.sh"
# shellcheck source=test/support/suite.sh
. "$REPO/test/support/suite.sh"

why=$(ns_unavailable)
[ -z "$why" ] || suite_skip "$why"

WORK=$(mktemp -d /tmp/rpfs-netns.XXXXXX)
cleanup() {
	ns_down "$WORK"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# in the client namespace, with the cluster's config
client() { ip netns exec "$NS_C" env RPFS_CONFIG="$CONF" "$@"; }
mpirun_c() { # NP PROGRAM ARGS...: mpiexec in the client namespace, in $WORK/run
	np=$1
	shift
	(cd "$WORK/run" && client timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n "$np" "$@")
}

echo "building the MPI programs with $MPICH_PREFIX/bin/mpicc"
mkdir -p "$WORK/bin" "$WORK/run"
for src in "$REPO/test/mpi/mpi_coll_rw.c" "$REPO/test/mpi/mpi_server_kill.c" \
	"$REPO/test/mpi/mpi_mirror.c" \
	"$REPO/examples/mpi_io_demo.c" "$REPO/bench/mpiio_bw.c"; do
	t=$(basename "$src" .c)
	"$MPICH_PREFIX/bin/mpicc" -O2 -o "$WORK/bin/$t" "$src" >"$WORK/$t.build.log" 2>&1 ||
		{ fail "build $t" "$WORK/$t.build.log"; finish; }
done

# ---- the cluster -----------------------------------------------------------
if ! ns_up "$N" >"$WORK/up.log" 2>&1; then
	fail "make $N host namespaces, a client namespace and a bridge" "$WORK/up.log"
	finish
fi
pass "$N host namespaces and a client namespace on a bridge (prefix $NS_P)"
hosts=""
i=0
while [ $i -lt "$N" ]; do
	hosts="$hosts --host $(ns_addr $i):7100,dir=$WORK/s$i.d"
	i=$((i + 1))
done
# timeout_ms: a silent server is given up after 3 s (the default is 30 s)
# shellcheck disable=SC2086
if "$RPFS" genconfig $hosts --provider tcp --stripe-unit 64K --set timeout_ms=3000 \
	--out "$WORK/conf" >"$WORK/gen.log" 2>&1; then
	pass "rpfs genconfig for $N hosts (server ids 0..$((N - 1)))"
else
	fail "rpfs genconfig" "$WORK/gen.log"
	finish
fi
CONF=$WORK/conf/rpfs.conf
if ns_servers "$RPFSD" "$CONF" "$WORK" >"$WORK/servers.log" 2>&1; then
	pass "one rpfsd per host namespace, each from the same config by its name"
else
	fail "start the servers" "$WORK/servers.log"
	finish
fi
if client "$RPFS" ping >"$WORK/ping.log" 2>&1 &&
	[ "$(grep -c '^io server .*(10\.77\.0\.' "$WORK/ping.log")" -eq "$N" ]; then
	pass "the client namespace reaches all $N servers (rpfs ping)"
else
	fail "rpfs ping from the client namespace" "$WORK/ping.log"
fi
bad_bind=""
i=0
while [ $i -lt "$N" ]; do
	ip netns exec "$(ns_host $i)" ss -Hltn 'sport = :7100' | awk '{print $4}' >"$WORK/ss.$i"
	[ "$(cat "$WORK/ss.$i")" = "$(ns_addr $i):7100" ] || bad_bind="$bad_bind s$i:$(tr '\n' ' ' <"$WORK/ss.$i")"
	i=$((i + 1))
done
[ -z "$bad_bind" ] && pass "each rpfsd listens on its configured address only" ||
	fail "servers listening elsewhere than their address:$bad_bind"

# ---- MPI-IO from the client namespace --------------------------------------
client "$RPFS" mkdir /t >/dev/null 2>&1
log=$WORK/coll.log
if mpirun_c 4 "$WORK/bin/mpi_coll_rw" write rpfs:/t/coll 768 5000 >"$log" 2>&1 &&
	grep -q "No Errors" "$log"; then
	pass "collective write, 4 processes (two-phase over $N hosts)"
else
	fail "collective write, 4 processes" "$log"
fi
for np in 2 3; do
	log=$WORK/read$np.log
	if mpirun_c $np "$WORK/bin/mpi_coll_rw" read rpfs:/t/coll 768 5000 >"$log" 2>&1 &&
		grep -q "No Errors" "$log"; then
		pass "read back by $np processes, contiguous and strided (list I/O), every byte checked"
	else
		fail "read back by $np processes" "$log"
	fi
done
log=$WORK/demo.log
if mpirun_c 4 "$WORK/bin/mpi_io_demo" rpfs:/t/demo >"$log" 2>&1; then
	pass "examples/mpi_io_demo: subarray view, collective write, list-I/O read (np=4)"
else
	fail "examples/mpi_io_demo (np=4)" "$log"
fi
[ -z "$(ls -A "$WORK/run")" ] || fail "local files appeared where the MPI jobs ran: $(ls -A "$WORK/run")"

# ---- striping across hosts ---------------------------------------------------
client "$RPFS" stat /t/coll >"$WORK/stat.log" 2>&1
size=$(sed -n 's/^ *size: //p' "$WORK/stat.log")
handle=$(sed -n 's/^handle: 0x//p' "$WORK/stat.log")
slots=$(grep -c "^ *slot [0-9]*: io server [0-9]* (10\.77\.0\." "$WORK/stat.log")
hosts_used=$(sed -n 's/^ *slot [0-9]*: io server [0-9]* (\(10\.77\.0\.[0-9]*\):.*/\1/p' \
	"$WORK/stat.log" | sort -u | wc -l)
if [ "$slots" -eq "$N" ] && [ "$hosts_used" -eq "$N" ]; then
	pass "rpfs stat: /t/coll has $N stripe slots on $N different hosts"
else
	fail "rpfs stat: stripes on $hosts_used hosts, not $N" "$WORK/stat.log"
fi
total=0
shares=""
empty=0
i=0
while [ $i -lt "$N" ]; do
	b=$(stat -c %s "$WORK/s$i.d/data/$handle" 2>/dev/null || echo 0)
	[ "$b" -gt 0 ] || empty=1
	total=$((total + b))
	shares="$shares s$i=$b"
	i=$((i + 1))
done
if [ -n "$size" ] && [ "$empty" -eq 0 ] && [ "$total" -eq "$size" ]; then
	pass "every host stores a share of /t/coll, and the shares add up to its $size bytes:$shares"
else
	fail "bytes per host:$shares (total $total) for a file of ${size:-?} bytes" "$WORK/stat.log"
fi

# a mirrored file over every host, for the reads while a host is cut off
# (written before the links are shaped)
mv=$((N - 1))
mlog=$WORK/mirror.log
if mpirun_c 4 "$WORK/bin/mpi_mirror" write rpfs:/t/mirror >"$mlog" 2>&1 &&
	grep -q "No Errors" "$mlog" && client "$RPFS" stat /t/mirror >>"$mlog" 2>&1 &&
	grep -q "io server $mv ($(ns_addr $mv):" "$mlog" &&
	client "$RPFS" cat /t/mirror >"$WORK/mirror.ref" 2>>"$mlog"; then
	pass "a mirrored file (mirror:2) written by 4 processes, with a copy on host s$mv"
else
	fail "a mirrored file (mirror:2) with a copy on host s$mv" "$mlog"
fi

# ---- quick scaling on shaped links -------------------------------------------
if ns_shape 40mbit >"$WORK/shape.log" 2>&1; then
	for s in 1 4; do
		mpirun_c 2 "$WORK/bin/mpiio_bw" --file "rpfs:/t/scale$s" --system rpfs \
			--exp scaling --tag "servers=$s" --hint striping_factor=$s \
			--expect-servers $s --sizes 1M --bytes 8M --max-count 8 --reps 1 \
			--layouts shared --patterns contig --modes indep >"$WORK/scale$s.log" 2>&1
	done
	w1=$(awk -F, '$1=="scaling" && $3=="write" {print $(NF-1)}' "$WORK/scale1.log" | head -1)
	w4=$(awk -F, '$1=="scaling" && $3=="write" {print $(NF-1)}' "$WORK/scale4.log" | head -1)
	r1=$(awk -F, '$1=="scaling" && $3=="read" {print $(NF-1)}' "$WORK/scale1.log" | head -1)
	r4=$(awk -F, '$1=="scaling" && $3=="read" {print $(NF-1)}' "$WORK/scale4.log" | head -1)
	if [ -n "$w1" ] && [ -n "$w4" ] && [ -n "$r1" ] && [ -n "$r4" ] &&
		awk -v a="$w1" -v b="$w4" -v c="$r1" -v d="$r4" 'BEGIN { exit !(b >= 1.5 * a && d >= 1.5 * c) }'; then
		pass "shaped links (40 Mbit per host): 1 -> 4 servers, write $w1 -> $w4 MB/s, read $r1 -> $r4 MB/s"
	else
		fail "shaped links: 4 servers not 1.5x faster than 1 (write ${w1:-?} -> ${w4:-?}, read ${r1:-?} -> ${r4:-?} MB/s)" "$WORK/scale4.log"
	fi
else
	fail "tc tbf on the host links" "$WORK/shape.log"
fi
# The failure tests run on unshaped links: at 40 Mbit a rank's 4 MiB
# reads queued behind others' on one host take longer than the 3 s
# timeout_ms, so a healthy host would be given up for silence (a
# timeout_ms must cover moving the calls in flight over the slowest link).
ns_unshape

# ---- a host goes down ---------------------------------------------------------
v=$((N - 1)) # an I/O-only server: the metadata server (s0) stays up
vaddr=$(ns_addr $v)
# jobs reading it one after the other while the link goes down: the
# first is running when it does, the second starts with it down
# (until the job that sees the link go down has ended, at least 2; at
# most 100, a bound for a hang)
(
	i=0
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		mpirun_c 4 "$WORK/bin/mpi_mirror" read rpfs:/t/mirror share || exit 1
		[ $i -ge 2 ] && [ -e "$WORK/mirror.stop" ] && exit 0
	done
	exit 0
) >"$WORK/mirror-read.log" 2>&1 &
mjob=$!
sleep 1
ready=$WORK/ready
log=$WORK/down.log
(cd "$WORK/run" && client timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 4 \
	"$WORK/bin/mpi_server_kill" rpfs:/t/down "$ready" 60) >"$log" 2>&1 &
job=$!
i=0
while [ ! -e "$ready" ] && [ $i -lt 300 ] && kill -0 $job 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
start=$(date +%s)
ip -n "$(ns_host $v)" link set eth0 down
wait $job
rc=$?
secs=$(($(date +%s) - start))
# each rank's error (MPI's error stack: the next line names the server;
# the job writes blocking and nonblocking in turn, so either may be first)
failed_ranks=$(grep -c "^rank [0-9]*: independent [a-z]* *write failed" "$log")
named=$(grep -c "ADIOI_RPFS_\(WRITECONTIG\|AIO\).*io server $v ($vaddr:" "$log")
if [ $rc -eq 0 ] && grep -q "No Errors" "$log" && [ "$failed_ranks" -eq 4 ] &&
	[ "$named" -ge 4 ] && [ $secs -le 45 ]; then
	pass "host s$v's link down during a job: all 4 ranks got an error naming $vaddr, the job ended in ${secs}s"
	grep -A1 "^rank.*independent" "$log" | head -2 | cut -c1-160 | sed 's/^/    /'
else
	fail "host s$v's link down during a job (exit $rc after ${secs}s, $failed_ranks ranks failed, $named errors name $vaddr)" "$log"
fi
touch "$WORK/mirror.stop"
wait $mjob
rc=$?
reads=$(grep -c "No Errors" "$WORK/mirror-read.log")
if [ $rc -eq 0 ] && [ "$reads" -ge 2 ]; then
	pass "$reads MPI jobs read the mirrored file right as host s$v's link went down (4 processes each)"
else
	fail "MPI jobs reading the mirrored file as host s$v's link went down (exit $rc, $reads jobs right)" \
		"$WORK/mirror-read.log"
fi
start=$(date +%s)
if client timeout -k 5 60 "$RPFS" cat /t/mirror >"$WORK/mirror.cat" 2>"$WORK/mcat.log" &&
	[ -s "$WORK/mirror.ref" ] && cmp -s "$WORK/mirror.cat" "$WORK/mirror.ref"; then
	pass "rpfs cat of the mirrored file with host s$v cut off: the same $(wc -c <"$WORK/mirror.cat") bytes, in $(($(date +%s) - start))s"
else
	fail "rpfs cat of the mirrored file with host s$v cut off" "$WORK/mcat.log"
fi
rm -f "$WORK/mirror.cat" "$WORK/mirror.ref"
# a write with the host cut off: its copy is marked stale, the write goes on
head -c 3000000 /dev/urandom >"$WORK/mirror.new"
start=$(date +%s)
if client timeout -k 5 60 "$RPFS" cp "$WORK/mirror.new" rpfs:/t/mirror 2>"$WORK/mcp.log" &&
	client timeout -k 5 60 "$RPFS" cat /t/mirror 2>>"$WORK/mcp.log" | cmp -s - "$WORK/mirror.new"; then
	pass "rpfs cp onto the mirrored file with host s$v cut off: written and read back right, in $(($(date +%s) - start))s (its copy marked stale)"
else
	fail "rpfs cp onto the mirrored file with host s$v cut off" "$WORK/mcp.log"
fi
start=$(date +%s)
client timeout -k 5 60 "$RPFS" cat /t/coll >/dev/null 2>"$WORK/cat.log"
rc=$?
secs=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "$vaddr" "$WORK/cat.log" && [ $secs -le 30 ]; then
	pass "rpfs cat of a file on the down host fails in ${secs}s naming it"
	cut -c1-200 "$WORK/cat.log" | sed 's/^/    /'
else
	fail "rpfs cat with host s$v down (exit $rc after ${secs}s)" "$WORK/cat.log"
fi

# ---- new files while the host is cut off ----------------------------------------
# The metadata server's heartbeats find it unreachable (server/io_states.c):
# rpfs df says so, and new files go to the other hosts.
# wait_df PATTERN: rpfs df (in $WORK/df.log) matches it within 30 tries
wait_df() {
	i=0
	while [ $i -lt 30 ]; do
		client "$RPFS" df >"$WORK/df.log" 2>&1
		grep -q "$1" "$WORK/df.log" && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}
if wait_df "$vaddr:7100).*unreachable"; then
	pass "rpfs df: the host cut off is unreachable"
else
	fail "rpfs df does not show $vaddr unreachable" "$WORK/df.log"
fi
head -c 1000000 /dev/urandom >"$WORK/cut.src"
if client "$RPFS" cp "$WORK/cut.src" rpfs:/t/cut >"$WORK/cut.log" 2>&1 &&
	client "$RPFS" stat /t/cut >>"$WORK/cut.log" 2>&1 &&
	! grep -q "slot [0-9]*: io server [0-9]* ($vaddr:" "$WORK/cut.log" &&
	[ "$(grep -c "slot [0-9]*: io server" "$WORK/cut.log")" -eq $((N - 1)) ] &&
	client "$RPFS" cat /t/cut | cmp -s - "$WORK/cut.src"; then
	pass "a new file while $vaddr is cut off: on the other $((N - 1)) hosts, read back right"
else
	fail "a new file while $vaddr is cut off" "$WORK/cut.log"
fi
ip -n "$(ns_host $v)" link set eth0 up
if wait_df "$vaddr:7100).* online  *[a-z-]" &&
	client "$RPFS" cp "$WORK/cut.src" rpfs:/t/back >"$WORK/back.log" 2>&1 &&
	client "$RPFS" stat /t/back >>"$WORK/back.log" 2>&1 &&
	[ "$(grep -c "slot [0-9]*: io server" "$WORK/back.log")" -eq "$N" ]; then
	pass "its link up again: online, new files on all $N hosts"
else
	fail "its link up again" "$WORK/df.log"
	cat "$WORK/back.log" 2>/dev/null | sed 's/^/    /'
fi
# the mirrored file's copy on the host that came back: resynced by itself
i=0
while [ $i -lt 60 ] && ! client "$RPFS" verify /t/mirror >"$WORK/mverify.log" 2>&1; do
	sleep 1
	i=$((i + 1))
done
if [ $i -lt 60 ] && client "$RPFS" cat /t/mirror 2>>"$WORK/mverify.log" | cmp -s - "$WORK/mirror.new"; then
	pass "the mirrored file's stale copy on s$v resynced in ${i}s (rpfs verify), the bytes right"
else
	fail "the mirrored file's stale copy on s$v resynced" "$WORK/mverify.log"
fi

finish
