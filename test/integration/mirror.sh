#!/bin/sh
# Mirrored files (layout kind mirror:N, issue 29): the data path through
# servers lost, stopped and damaged. Four servers from `rpfs up -n 4`, fast
# heartbeats; a directory with `setstripe -N mirror:2` (2 data slots, each
# with a copy on another server):
#   - a file written through it is on 4 servers and its copies' datafiles
#     are byte for byte the same;
#   - 4 writers at once on overlapping ranges of one file, many rounds
#     (through the mount): the copies still agree byte for byte (the
#     primary orders and forwards: server/io_forward.c);
#   - a damaged block in one copy (a byte flipped on disk): the file reads
#     back right (the other copy), the damaged copy's server says so and
#     has the copy mended: it is rewritten from the other copy (the copies
#     agree again);
#   - an I/O server holding copies killed (-9): the files read back right, stat
#     gives their size, ls -l lists them, a new mirrored file is made and
#     reads right; writes to a file with a copy on it go on (the primary
#     marks the copy stale) and read back right;
#   - it restarts: the stale copy is resynced by itself (rpfs verify
#     passes, rpfs stats counts it); then the server holding the other copy
#     is killed: the file reads back right from the resynced copy, takes
#     writes, and is resynced again when that server returns;
#   - another I/O server is stopped (SIGSTOP): the files read
#     back right once the metadata server noticed, without a timeout_ms
#     wait (the open reply's down list; measured against the same read
#     with every server up), then after SIGCONT;
#   - a server's storage directory wiped (a disk replaced) and the server
#     started on it: the files read back right at once and take writes;
#     every copy it held is rebuilt (rpfs verify passes, rpfs stats counts
#     the copies marked); then the server holding the other copies is
#     killed: every file reads back right from the rebuilt copies; the
#     rebuilt server's storage passes rpfsd --check;
#   - rpfs df's copies column says which servers hold stale copies
#     (needs-resync), then good again;
#   - with resync_mbps=2 a resync goes at that pace (its log line's time);
#   - a copy that was away while a file was rewritten with 64 KiB changed
#     gets those units only (the resync's log line: bytes sent of compared,
#     rpfs stats' mirror.resync_same_bytes), and reads back right;
#   - copies that differ with neither stale (a block taken as it is by
#     rpfsd --check --accept-damaged): rpfs verify (and -r) names them,
#     rpfs verify --repair has the copy rewritten from its primary;
#     rpfsd --check --copies on the stopped server finds the difference by
#     digest (and none once mended), and with --repair has it mended;
#   - with scrub_mbps set, a damaged block no read touches is found by the
#     scrub and the copy mended.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
PROVIDER=${RPFS_PROVIDER:-tcp}
X=${RPFS_TEST_SCALE:-1}
TMP=$(mktemp -d /tmp/rpfs-mirror-XXXXXX) || exit 1
D=$TMP/cluster

cleanup() {
	trap '' INT TERM
	if [ -n "${MNT:-}" ] && grep -q " $MNT fuse" /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	for p in "$D"/rpfsd.*.pid; do
		[ -f "$p" ] && kill -CONT "$(cat "$p")" 2>/dev/null
	done
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# shellcheck source=test/integration/checks.sh
. "$(dirname "$0")/checks.sh"
# The I/O servers of a file's slots in slot order (copies after the data
# slots), space separated.
servers_of() {
	"$RPFS" stat "$1" |
		sed -n 's/^  \(copy [0-9]* of \)\{0,1\}slot [0-9]*: io server \([0-9]*\) .*/\2/p' |
		tr '\n' ' '
}
# copies_agree FILE: for each data slot s of a mirror:2 file of 2 data
# slots, the datafiles of slot s and slot s+2 are the same bytes.
copies_agree() {
	h=$(handle_of "$1")
	set -- $(servers_of "$1")
	[ $# -eq 4 ] || { echo "not 4 slots: $*"; return 1; }
	cmp "$D/s$1/data/$h" "$D/s$3/data/$h" && cmp "$D/s$2/data/$h" "$D/s$4/data/$h"
}

export RPFS_HEARTBEAT_MS=200 RPFS_HEARTBEAT_TIMEOUT_MS=$((1000 * X)) RPFS_IO_OFFLINE_S=$((30 * X))
export RPFS_TIMEOUT_MS=$((3000 * X))
"$RPFS" up -n 4 --dir "$D" --address "$ADDR" --provider "$PROVIDER" >"$TMP/up" 2>&1 || {
	cat "$TMP/up"
	exit 1
}
export RPFS_CONFIG="$D/rpfs.conf"
head -c 5000000 /dev/urandom >"$TMP/src"
for n in 0 1 2 3; do check_in "server.$n online" wait_state $n online 5; done

check "mkdir /m; setstripe -N mirror:2 /m" sh -c "'$RPFS' mkdir /m && '$RPFS' setstripe -N mirror:2 /m"
for f in a b c; do
	check "a mirrored file /m/$f" "$RPFS" cp "$TMP/src" "rpfs:/m/$f"
done
check_eq "/m/a is on all 4 servers" "$(servers_of /m/a | tr ' ' '\n' | sort | tr '\n' ' ')" "0 1 2 3 "
check "... reads back right" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src'"
check_in "... its copies are the same bytes" copies_agree /m/a
check "... rpfs verify says so" sh -c "'$RPFS' verify /m/a | grep -q 'copies agree'"
check "... rpfs stats counts the forwarded writes" sh -c "'$RPFS' stats | awk '\$1 == \"mirror.forwarded\" && \$2 > 0 { f = 1 } END { exit !f }'"

# ---- concurrent overlapping writers ------------------------------------------------
FUSE=$(dirname "$RPFS")/rpfs-fuse
if [ "$(id -u)" = 0 ] && [ -x "$FUSE" ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	MNT=$TMP/mnt
	mkdir -p "$MNT"
	check "rpfs mount" "$RPFS" mount "$MNT"
	head -c 2000000 /dev/urandom >"$TMP/w"
	check "a mirrored file for the writers, /m/w" "$RPFS" cp "$TMP/src" rpfs:/m/w
	# 4 writers, 20 rounds each, 47008-byte records at offsets that
	# overlap the others' (stride 30000 bytes, shifted per writer).
	for w in 0 1 2 3; do
		(
			r=0
			while [ $r -lt 20 ]; do
				dd if="$TMP/w" of="$MNT/m/w" bs=47008 count=1 \
					seek=$(((r * 4 + w) * 30000)) oflag=seek_bytes \
					skip=$((w * 7)) conv=notrunc status=none || exit 1
				r=$((r + 1))
			done
		) &
	done
	wait
	check_in "4 overlapping writers: the copies are the same bytes" copies_agree /m/w
	check "... rpfs verify says so" "$RPFS" verify /m/w
	check "rpfs umount" "$RPFS" umount "$MNT"
	MNT=
else
	echo "skip the concurrent writers: needs root, rpfs-fuse, /dev/fuse and fusermount3"
fi

# ---- a damaged block in one copy ---------------------------------------------------
h=$(handle_of /m/b)
set -- $(servers_of /m/b)
dmg=$3 # the copy of data slot 0
for off in 100 1048676 2097252; do
	printf 'X' | dd of="$D/s$dmg/data/$h" bs=1 seek=$off conv=notrunc status=none
done
# wait_verify FILE SECONDS: rpfs verify passes within SECONDS (a resync)
wait_verify() {
	i=0
	while [ $i -lt "$2" ]; do
		"$RPFS" verify "$1" && return 0
		sleep 1
		i=$((i + 1))
	done
	return 1
}
check_fails "a damaged copy: rpfs verify names the damaged copy's server" "io server $dmg " \
	"$RPFS" verify /m/b
check "... /m/b reads back right" sh -c "'$RPFS' cat /m/b | cmp - '$TMP/src'"
check "... the damaged copy's server said so" grep -q "checksum mismatch" "$D/rpfsd.$dmg.log"
check "... and had it mended" grep -q "has a damaged block: it is rewritten" "$D/rpfsd.$dmg.log"
check_in "... mended from the other copy: rpfs verify passes" wait_verify /m/b $((30 * X))
check_in "... the copies are the same bytes again" copies_agree /m/b
check "... /m/b reads back right" sh -c "'$RPFS' cat /m/b | cmp - '$TMP/src'"

# ---- a server killed ---------------------------------------------------------------
# server.0 is the metadata server: the victims are I/O-only servers
# first_io_only [EXCEPT]: the first of /m/a's servers other than 0 and EXCEPT
first_io_only() {
	for s in $(servers_of /m/a); do
		[ "$s" != 0 ] && [ "$s" != "${1:-}" ] && { echo "$s"; return; }
	done
}
# k and buddy: the two copies of one of /m/a's slots, neither on server.0
set -- $(servers_of /m/a)
if [ "$1" != 0 ] && [ "$3" != 0 ]; then k=$1 buddy=$3; else k=$2 buddy=$4; fi
kill -9 "$(pid_of "$k")"
check_in "server.$k killed: unreachable" wait_state "$k" unreachable 3
for f in a c; do
	check "server.$k down: /m/$f reads back right" sh -c "'$RPFS' cat /m/$f | cmp - '$TMP/src'"
done
check_eq "... stat gives /m/a's size" "$("$RPFS" stat /m/a | sed -n 's/^ *size: //p')" "$(wc -c <"$TMP/src" | tr -d ' ')"
check "... ls -l lists /m" sh -c "'$RPFS' ls -l /m | grep -q ' a$'"
check "... a new mirrored file" "$RPFS" cp "$TMP/src" rpfs:/m/new
check "... which reads back right" sh -c "'$RPFS' cat /m/new | cmp - '$TMP/src'"
# degraded writes: the primary marks the missing copy stale and writes on
head -c 3000000 /dev/urandom >"$TMP/src2"
check "... a write to /m/a goes on without it" "$RPFS" cp "$TMP/src2" rpfs:/m/a
check "... and reads back right" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src2'"
check "... written again" "$RPFS" cp "$TMP/src" rpfs:/m/a
check "... and reads back right again" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src'"
check "... the primary marked the copy stale (rpfs stats)" \
	sh -c "'$RPFS' stats | grep -Eq 'mirror.marked_stale[^0-9]*[1-9]'"
# wait_copies N PATTERN SECONDS: df's copies column for server.N matches
# PATTERN (a case pattern) within SECONDS
wait_copies() {
	i=0
	while [ $i -lt $(($3 * 10)) ]; do
		eval "case \"\$(copies_of $1)\" in $2) return 0 ;; esac"
		sleep 0.1
		i=$((i + 1))
	done
	echo "server.$1's copies: '$(copies_of "$1")', not $2"
	return 1
}
check_in "... rpfs df shows server.$k's copies needing a resync" \
	wait_copies "$k" "needs-resync*" $((5 * X))

# ---- it returns; another stopped ---------------------------------------------------
check_fails "... rpfs verify says /m/a's copy on it is stale" "stale" "$RPFS" verify /m/a
check "rpfs up starts server.$k again" "$RPFS" up --dir "$D"
check_in "server.$k online again" wait_state "$k" online 5
check "... /m/a still reads right (never from a stale copy)" \
	sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src'"
check_in "... /m/a's stale copy resynced by itself: rpfs verify passes" \
	wait_verify /m/a $((30 * X))
check_in "... rpfs df shows server.$k's copies good" wait_copies "$k" good $((5 * X))
check "... rpfs stats counts the resync" \
	sh -c "'$RPFS' stats | grep -Eq 'mirror.resyncs_done[^0-9]*[1-9]'"
kill -9 "$(pid_of "$buddy")"
check_in "server.$buddy (the other copy) killed: unreachable" wait_state "$buddy" unreachable 3
check "... /m/a reads back right from the resynced copy" \
	sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src'"
check "... and takes a write" "$RPFS" cp "$TMP/src2" rpfs:/m/a
check "... which reads back right" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src2'"
check "... and another" "$RPFS" cp "$TMP/src" rpfs:/m/a
check "rpfs up starts server.$buddy again" "$RPFS" up --dir "$D"
check_in "server.$buddy online again" wait_state "$buddy" online 5
check_in "... resynced again: rpfs verify passes" wait_verify /m/a $((30 * X))
check "... /m/a reads back right" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src'"
check "/m/b rewritten" "$RPFS" cp "$TMP/src" rpfs:/m/b
check_in "... its copies agree again" copies_agree /m/b
st=$(first_io_only "$k")
# each read's time with every server up: a client that waited for the
# stopped server would add timeout_ms to it (under emulation a client's
# start alone takes seconds)
for f in a b c new; do
	start=$(date +%s%N)
	"$RPFS" cat /m/$f >/dev/null 2>&1
	eval "base_$f=$((($(date +%s%N) - start) / 1000000))"
done
kill -STOP "$(pid_of "$st")"
check_in "server.$st stopped: unreachable" wait_state "$st" "unreachable|offline" 10
for f in a b c new; do
	start=$(date +%s%N)
	check "server.$st stopped: /m/$f reads back right" sh -c "'$RPFS' cat /m/$f | cmp - '$TMP/src'"
	ms=$((($(date +%s%N) - start) / 1000000))
	base=$(eval echo "\$base_$f")
	if [ "$ms" -lt $((base + RPFS_TIMEOUT_MS * 3 / 4)) ]; then
		ok "... in $ms ms ($base ms with all up: no timeout_ms wait)"
	else
		bad "... took $ms ms ($base ms with all up; timeout_ms $RPFS_TIMEOUT_MS)"
	fi
done
kill -CONT "$(pid_of "$st")"
check_in "server.$st continued: online" wait_state "$st" online 5
check "every file reads back right" sh -c "for f in a b c new; do '$RPFS' cat /m/\$f | cmp - '$TMP/src' || exit 1; done"

# ---- a server's storage replaced -----------------------------------------------------
all_right() {
	for f in a b c new; do "$RPFS" cat /m/$f | cmp - "$TMP/src" || return 1; done
}
# wait_verify_all SECONDS: rpfs verify passes on every file within SECONDS
wait_verify_all() {
	i=0
	while [ $i -lt "$1" ]; do
		ok_all=1
		for f in $("$RPFS" ls /m); do
			"$RPFS" verify "/m/$f" >/dev/null 2>&1 || ok_all=0
		done
		[ $ok_all = 1 ] && return 0
		sleep 1
		i=$((i + 1))
	done
	"$RPFS" ls /m | while read -r f; do "$RPFS" verify "/m/$f"; done
	return 1
}
kill -9 "$(pid_of "$k")"
check_in "server.$k killed: unreachable" wait_state "$k" unreachable 3
rm -rf "$D/s$k/data"
check "rpfs up starts server.$k again on an empty storage directory" "$RPFS" up --dir "$D"
check "... the metadata server's log says what it marked for the rebuild" \
	grep -q "rebuild of I/O server .* copies it held .* marked stale" "$D/rpfsd.0.log"
check_in "... every file reads back right at once (the other copies)" all_right
check "... a write to /m/a goes on" "$RPFS" cp "$TMP/src2" rpfs:/m/a
check "... and reads back right" sh -c "'$RPFS' cat /m/a | cmp - '$TMP/src2'"
check "... written back" "$RPFS" cp "$TMP/src" rpfs:/m/a
check_in "... every copy it held rebuilt: rpfs verify passes on every file" \
	wait_verify_all $((60 * X))
check_in "... rpfs df shows its copies good" wait_copies "$k" good $((5 * X))
check "... rpfs stats counts the copies marked for the rebuild" \
	sh -c "'$RPFS' stats | grep -Eq 'mirror.rebuild_marked[^0-9]*[1-9]'"
check "... its datafiles are back" sh -c "ls '$D/s$k/data' | grep -q '^$(handle_of /m/a)\$'"
kill -9 "$(pid_of "$buddy")"
check_in "server.$buddy (the other copies) killed: unreachable" wait_state "$buddy" unreachable 3
check_in "... every file reads back right from the rebuilt copies" all_right
check "rpfs up starts server.$buddy again" "$RPFS" up --dir "$D"
check_in "server.$buddy online again" wait_state "$buddy" online 5
check "rpfs down" "$RPFS" down --dir "$D"
check "rpfsd --check: the rebuilt server's storage is clean" \
	"$(dirname "$RPFS")/rpfsd" --config "$D/rpfs.conf" --name "server.$k" --check

# ---- the resync's pace ---------------------------------------------------------------
# resync_mbps=2: a stale copy of 6 MB takes its 2 MiB pieces in turn, one
# every second or so (unpaced it would take a few ms)
export RPFS_RESYNC_MBPS=2
# (and the scrub, for the last section)
export RPFS_SCRUB_MBPS=50
# (servers logging at info: the resync's own line gives bytes and time)
check "rpfs up with resync_mbps=2" env RPFS_LOG=info "$RPFS" up --dir "$D"
for n in 0 1 2 3; do check_in "server.$n online" wait_state $n online 5; done
head -c 12000000 /dev/urandom >"$TMP/big"
check "a 12 MB mirrored file /m/big" "$RPFS" cp "$TMP/big" rpfs:/m/big
case " $(servers_of /m/big)" in
*" $k "*) ok "... with a copy on server.$k" ;;
*) bad "... no copy on server.$k: $(servers_of /m/big)" ;;
esac
# resync_lines_since BASE SECONDS: the resync lines of handle $h the
# servers logged that are not in BASE (those logged before), waiting up to
# SECONDS for the first. A copy serves again (and rpfs verify passes) a
# moment before its source logs the line; and a source that could not
# report to the metadata server is asked again and logs a second resync,
# of nothing: the callers sum or pick among the lines.
resync_lines_since() {
	i=0
	while :; do
		grep -h "resynced handle $h " "$D"/rpfsd.*.log | grep -vxF -f "$1" >"$TMP/rlines"
		[ -s "$TMP/rlines" ] || [ $i -ge $(($2 * 10)) ] && break
		sleep 0.1
		i=$((i + 1))
	done
	cat "$TMP/rlines"
}
h=$(handle_of /m/big)
kill -9 "$(pid_of "$k")"
check_in "server.$k killed: unreachable" wait_state "$k" unreachable 3
# (other bytes: the copy's own differ everywhere, and all of them go)
head -c 12000000 /dev/urandom >"$TMP/big2"
check "... /m/big written again without it" "$RPFS" cp "$TMP/big2" rpfs:/m/big
grep -h "resynced handle $h " "$D"/rpfsd.*.log >"$TMP/rbase"
check "rpfs up starts server.$k again" "$RPFS" up --dir "$D"
check_in "... /m/big resynced: rpfs verify passes" wait_verify /m/big $((60 * X))
# the line that sent the most (a later one of nothing may follow)
line=$(resync_lines_since "$TMP/rbase" $((10 * X)) |
	sed -n 's/.*: \([0-9]*\) bytes in \([0-9.]*\) s.*/\1 &/p' | sort -n | tail -1 | cut -d' ' -f2-)
bytes=$(echo "$line" | sed -n 's/.*: \([0-9]*\) bytes in \([0-9.]*\) s.*/\1/p')
secs=$(echo "$line" | sed -n 's/.*: \([0-9]*\) bytes in \([0-9.]*\) s.*/\2/p')
if [ -n "$bytes" ] && [ "$bytes" -ge 5000000 ] &&
	awk -v b="$bytes" -v t="$secs" 'BEGIN { exit !(t >= 0.95 * (b - 2097152) / 2e6) }'; then
	ok "... at resync_mbps: $bytes bytes in $secs s"
else
	bad "... not paced at 2 MB/s: '$line'"
fi
check "... /m/big reads back right" sh -c "'$RPFS' cat /m/big | cmp - '$TMP/big2'"

# ---- a resync sends what the copy missed ---------------------------------------------
# /m/big rewritten whole with 64 KiB changed while server.$k is away: its
# copy is stale, and the resync compares 64 KiB units (IO_DIGEST) and sends
# the few that differ, not the 6 MB of its datafile
cp "$TMP/big2" "$TMP/big3"
head -c 65536 /dev/urandom | dd of="$TMP/big3" bs=1 seek=5000000 conv=notrunc status=none
kill -9 "$(pid_of "$k")"
check_in "server.$k killed again: unreachable" wait_state "$k" unreachable 3
check "... /m/big rewritten with 64 KiB changed" "$RPFS" cp "$TMP/big3" rpfs:/m/big
grep -h "resynced handle $h " "$D"/rpfsd.*.log >"$TMP/rbase"
check "rpfs up starts server.$k again" "$RPFS" up --dir "$D"
check_in "... /m/big resynced: rpfs verify passes" wait_verify /m/big $((60 * X))
# bytes sent over every resync of it since (one, or a second of nothing),
# the most compared by one
line=$(resync_lines_since "$TMP/rbase" $((10 * X)) | tr '\n' ' ')
# (the same lines, as resync_lines_since left them in $TMP/rlines)
set -- $(sed -n 's/.*: \([0-9]*\) bytes in [0-9.]* s (sent of \([0-9]*\) compared).*/\1 \2/p' \
	"$TMP/rlines" |
	awk '{ s += $1; if ($2 > c) c = $2; n++ } END { if (n) print s, c }')
bytes=${1:-}
cmpd=${2:-}
# 64 KiB over at most two stripe units of a datafile: at most four units
if [ -n "$bytes" ] && [ "$bytes" -gt 0 ] && [ "$bytes" -le 262144 ] &&
	[ "${cmpd:-0}" -ge 5000000 ]; then
	ok "... it sent $bytes bytes of the $cmpd it compared"
else
	bad "... not only what it missed: '$line'"
fi
same=$("$RPFS" stats 2>/dev/null | awk '$1 == "mirror.resync_same_bytes" { s += $2 } END { print s + 0 }')
if [ "$same" -ge 5000000 ]; then
	ok "... rpfs stats: mirror.resync_same_bytes $same"
else
	bad "... rpfs stats: mirror.resync_same_bytes $same"
fi
check "... /m/big reads back right" sh -c "'$RPFS' cat /m/big | cmp - '$TMP/big3'"
# the other copy of server.$k's slot (slot s and s+2 are copies), unless it
# is server.0 (the metadata server)
set -- $(servers_of /m/big)
other=""
[ "$1" = "$k" ] && other=$3
[ "$3" = "$k" ] && other=$1
[ "$2" = "$k" ] && other=$4
[ "$4" = "$k" ] && other=$2
if [ -n "$other" ] && [ "$other" != 0 ]; then
	kill -9 "$(pid_of "$other")"
	check_in "... server.$other killed: unreachable" wait_state "$other" unreachable 3
	check "... /m/big reads back right from the resynced copy" \
		sh -c "'$RPFS' cat /m/big | cmp - '$TMP/big3'"
	check "rpfs up starts server.$other again" "$RPFS" up --dir "$D"
	for n in 0 1 2 3; do check_in "server.$n online" wait_state $n online 5; done
fi

# ---- copies that differ with neither stale: rpfs verify --repair ---------------------
# a byte of one copy changed while its server was stopped, and taken as it
# is by rpfsd --check --repair --accept-damaged: both copies pass their
# checksums and differ (as over a write that failed midway)
h=$(handle_of /m/c)
set -- $(servers_of /m/c)
if [ "$3" != 0 ]; then v=$3; else v=$4; fi # a copy on an I/O-only server
stop_server "$v"
printf 'Z' | dd of="$D/s$v/data/$h" bs=1 seek=100 conv=notrunc status=none
check "rpfsd --check --repair --accept-damaged takes server.$v's changed copy as it is" \
	sh -c "'$(dirname "$RPFS")/rpfsd' --config '$D/rpfs.conf' --name server.$v --check --repair --accept-damaged | grep -q 'accepted as it is'"
# the storage side finds it too, by digest, while the others run
check_fails "rpfsd --check --copies on server.$v: its copy of /m/c differs from copy 0" \
	"slot [0-9]* differs from its copy in slot [0-9]* on io server [0-9]* from offset 0 (" \
	"$(dirname "$RPFS")/rpfsd" --config "$D/rpfs.conf" --name "server.$v" --check --copies
check "rpfs up starts server.$v again" "$RPFS" up --dir "$D"
check_in "server.$v online again" wait_state "$v" online 5
check_fails "rpfs verify: the copies of /m/c differ" "differ at file offset" \
	"$RPFS" verify /m/c
check_fails "rpfs verify -r /m names /m/c" "/m/c: .*differ" "$RPFS" verify -r /m
check "rpfs verify --repair /m/c: the copy rewritten from its primary, then they agree" \
	sh -c "'$RPFS' verify --repair /m/c | grep -q 'copies agree'"
check "... the metadata server's log says so" \
	grep -q "/m/c: the copy in slot .* differs from its primary" "$D/rpfsd.0.log"
check_in "... the copies are the same bytes" copies_agree /m/c
check "... /m/c reads back right" sh -c "'$RPFS' cat /m/c | cmp - '$TMP/src'"
check "rpfs verify -r /m: every file's copies agree" "$RPFS" verify -r /m
# and the storage side agrees: no copy of server.$v's differs now
stop_server "$v"
check "rpfsd --check --copies on server.$v: clean, its mirrored datafiles compared" \
	sh -c "'$(dirname "$RPFS")/rpfsd' --config '$D/rpfs.conf' --name server.$v --check --copies >'$TMP/copies.out' 2>&1 && grep -q ': [1-9][0-9]* mirrored datafiles\\{0,1\\} compared with their copies' '$TMP/copies.out' && ! grep -q 'compared with their copies (some' '$TMP/copies.out'"
check "rpfs up starts server.$v again" "$RPFS" up --dir "$D"
check_in "server.$v online again" wait_state "$v" online 5

# ---- rpfsd --check --copies --repair -------------------------------------------------
# the same kind of change again, mended from the storage side: the copy that
# is not copy 0 is marked stale, and the resync rewrites it once its server
# runs again
stop_server "$v"
printf 'Y' | dd of="$D/s$v/data/$h" bs=1 seek=200 conv=notrunc status=none
check "rpfsd --check --repair --accept-damaged takes server.$v's changed copy again" \
	sh -c "'$(dirname "$RPFS")/rpfsd' --config '$D/rpfs.conf' --name server.$v --check --repair --accept-damaged | grep -q 'accepted as it is'"
check "rpfsd --check --copies --repair on server.$v marks its copy of /m/c stale" \
	sh -c "'$(dirname "$RPFS")/rpfsd' --config '$D/rpfs.conf' --name server.$v --check --copies --repair | grep -q 'differs from its copy in slot .*\\[repaired\\]'"
check "rpfs up starts server.$v again" "$RPFS" up --dir "$D"
check_in "server.$v online again" wait_state "$v" online 5
check_in "... /m/c resynced from copy 0: rpfs verify passes" wait_verify /m/c $((60 * X))
check_in "... the copies are the same bytes" copies_agree /m/c
check "... /m/c reads back right" sh -c "'$RPFS' cat /m/c | cmp - '$TMP/src'"

# ---- the scrub ---------------------------------------------------------------------
# a byte of a copy changed on disk and the file not read: the scrub
# (scrub_mbps=50 since the restart above) finds it and has the copy mended
h=$(handle_of /m/big)
set -- $(servers_of /m/big)
if [ "$3" != 0 ]; then v=$3; else v=$4; fi
printf 'S' | dd of="$D/s$v/data/$h" bs=1 seek=4096 conv=notrunc status=none
# wait_grep FILE PATTERN SECONDS
wait_grep() {
	i=0
	while [ $i -lt $(($3 * 10)) ]; do
		grep -q "$2" "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "no '$2' in $1 after $3 s"
	return 1
}
check_in "the scrub finds a damaged block of server.$v's copy that no read touched" \
	wait_grep "$D/rpfsd.$v.log" "the scrub found damaged data in datafile .*$h" $((60 * X))
check_in "... the copy is mended: rpfs verify passes" wait_verify /m/big $((60 * X))
check_in "... the copies are the same bytes" copies_agree /m/big
check "... /m/big reads back right" sh -c "'$RPFS' cat /m/big | cmp - '$TMP/big3'"
check "... rpfs stats counts the scrub's passes and the damage" \
	sh -c "'$RPFS' stats | grep -Eq 'scrub.damaged[^0-9]*[1-9]' && '$RPFS' stats | grep -Eq 'scrub.passes[^0-9]*[1-9]'"

exit $fail
