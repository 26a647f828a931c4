#!/bin/sh
# Erasure-coded files (layout kind ec:K+P, issue 29, docs/design/
# erasure-coding.md) through the CLI, with servers killed, stopped and
# damaged. Four servers from `rpfs up -n 4` with ec_preview and fast
# heartbeats; a directory with `setstripe -N ec:2+1` (2 data slots and 1
# parity slot on 3 servers):
#   - a file written through it reads back right, rpfs verify finds the
#     parity agreeing with the data, rpfs stat names the parity member;
#   - a data member's server killed (-9), or stopped (SIGSTOP): rpfs
#     stat, ls -l and cat show the file's size and bytes (the size from the
#     parity member's record of its data members' sizes, the lost cells
#     decoded), also after truncates (made before) that cut the file in
#     that member's cell and grow it with a hole there; a truncate with it
#     down fails naming it and changes nothing;
#     with the parity member's record damaged as well, rpfs stat fails
#     naming the data member's server, never a wrong size;
#   - the parity member's server killed: the file is rewritten and reads
#     back right, rpfs verify says the parity member is stale naming its
#     server; restarted, it is re-encoded by itself (verify passes, rpfs
#     stats counts it);
#   - parity that disagrees with its data with neither stale (a block
#     taken as it is by rpfsd --check --accept-damaged): rpfs verify names
#     the parity member, verify --repair has it re-encoded, then it agrees
#     and the metadata server's log says why;
#   - a data member's block damaged on disk (a byte flipped under its
#     checksum): the file reads back right (decoded around it), rpfs
#     verify names the damage.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
PROVIDER=${RPFS_PROVIDER:-tcp}
X=${RPFS_TEST_SCALE:-1}
TMP=$(mktemp -d /tmp/rpfs-ec-XXXXXX) || exit 1
D=$TMP/cluster

cleanup() {
	trap '' INT TERM
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
# The I/O servers of an ec file's data slots, then of its parity slots,
# space separated.
servers_of() {
	"$RPFS" stat "$1" |
		sed -n 's/^  \(parity [0-9]* of group [0-9]*\|slot [0-9]*\): io server \([0-9]*\) .*/\2/p' |
		tr '\n' ' '
}
# flip FILE OFFSET: change one byte of FILE in place (its bits inverted:
# a byte that was already some chosen value would not change)
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059 # the octal escape is the point
	printf "\\$(printf %o $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
verify_agrees() { "$RPFS" verify "$1" 2>/dev/null | grep -q 'parity agrees'; }
# wait_agrees FILE SECONDS: rpfs verify passes within SECONDS
wait_agrees() {
	i=0
	while [ $i -lt "$2" ]; do
		verify_agrees "$1" && return 0
		sleep 1
		i=$((i + 1))
	done
	"$RPFS" verify "$1"
	return 1
}

export RPFS_EC_PREVIEW=1
export RPFS_HEARTBEAT_MS=200 RPFS_HEARTBEAT_TIMEOUT_MS=$((1000 * X)) RPFS_IO_OFFLINE_S=$((30 * X))
export RPFS_TIMEOUT_MS=$((3000 * X))
"$RPFS" up -n 4 --dir "$D" --address "$ADDR" --provider "$PROVIDER" >"$TMP/up" 2>&1 || {
	cat "$TMP/up"
	exit 1
}
export RPFS_CONFIG="$D/rpfs.conf"
head -c 3000000 /dev/urandom >"$TMP/src"
head -c 3000000 /dev/urandom >"$TMP/src2"
head -c 2500000 "$TMP/src" >"$TMP/src.2500000"
cp "$TMP/src.2500000" "$TMP/src.2800000" && truncate -s 2800000 "$TMP/src.2800000"
for n in 0 1 2 3; do check_in "server.$n online" wait_state $n online 5; done

check "mkdir /e; setstripe -N ec:2+1 /e" sh -c "'$RPFS' mkdir /e && '$RPFS' setstripe -N ec:2+1 /e"
# files until one has no member on server.0 (the metadata server, never
# killed here)
for f in a b c d e f g h; do
	"$RPFS" cp "$TMP/src" "rpfs:/e/$f" || break
	case " $(servers_of "/e/$f")" in
	*" 0 "*) ;;
	*)
		F=/e/$f
		break
		;;
	esac
done
check "an ec:2+1 file on three I/O servers other than server.0" test -n "${F:-}"
[ -n "${F:-}" ] || exit 1
# shellcheck disable=SC2046 # a list on purpose
set -- $(servers_of "$F")
D1=$2 P0=$3
check_eq "... 3 members" "$#" 3
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src'"
check_in "... rpfs verify: the parity agrees" verify_agrees "$F"
check "... rpfs stat names its parity member" sh -c "'$RPFS' stat $F | grep -q 'parity 0 of group 0: io server $P0'"
H=$(handle_of "$F")

# ---- a data member lost: its size from the parity member's record -------------------
# Slot 0 holds the file's last cell (3000000 bytes over 1 MiB cells), so
# the file's size is that member's: with it lost, the parity member's
# record of its data members' sizes says it (server/ec_ends.c).
D0=$1
size_of() { "$RPFS" stat "$1" | sed -n 's/^ *size: *\([0-9]*\).*/\1/p'; }
kill -9 "$(pid_of "$D0")"
check_in "server.$D0 killed: unreachable" wait_state "$D0" unreachable 3
check_eq "... rpfs stat $F: the size from the parity member's record" "$(size_of "$F")" 3000000
check "... rpfs ls -l shows it" sh -c "'$RPFS' ls -l /e | grep -q ' 3000000 .*${F#/e/}\$'"
check "... rpfs cat: the bytes, the lost cells decoded" sh -c "'$RPFS' cat $F | cmp - '$TMP/src'"
check_fails "... rpfs truncate fails naming io server $D0, and changes nothing" \
	"io server $D0 .*nothing was changed" "$RPFS" truncate -s 1500000 "$F"
check_eq "... rpfs stat: still 3000000" "$(size_of "$F")" 3000000
check "... still reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src'"
check "rpfs up starts server.$D0 again" "$RPFS" up --dir "$D"
check_in "server.$D0 online" wait_state "$D0" online 5
# killed, its crash list has the parity member re-encoded (a write may
# have been cut short): until then the member is stale, its record unused
check_in "... the parity re-encoded after the kill: verify passes" wait_agrees "$F" $((30 * X))
check "... truncated to 2500000 (its end in server.$D0's cell)" \
	"$RPFS" truncate -s 2500000 "$F"
kill -STOP "$(pid_of "$D0")"
check_in "server.$D0 stopped: unreachable" wait_state "$D0" unreachable 8
check_eq "... rpfs stat: 2500000, from the record the truncate set" "$(size_of "$F")" 2500000
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src.2500000'"
kill -CONT "$(pid_of "$D0")"
check_in "server.$D0 back: online" wait_state "$D0" online 5
check "... grown to 2800000 (a hole in server.$D0's cell)" \
	"$RPFS" truncate -s 2800000 "$F"
kill -9 "$(pid_of "$D0")"
check_in "server.$D0 killed: unreachable" wait_state "$D0" unreachable 3
check_eq "... rpfs stat: 2800000" "$(size_of "$F")" 2800000
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src.2800000'"
check "rpfs up starts server.$D0 again" "$RPFS" up --dir "$D"
check_in "server.$D0 online" wait_state "$D0" online 5
# killed, its crash list has the parity member re-encoded (a write may
# have been cut short): until then the member is stale, its record unused
check_in "... the parity re-encoded after the kill: verify passes" wait_agrees "$F" $((30 * X))
check_eq "... rpfs stat: 2800000 from the member itself" "$(size_of "$F")" 2800000
check "... $F rewritten whole" "$RPFS" cp "$TMP/src" "rpfs:$F"
kill -STOP "$(pid_of "$D0")"
check_in "server.$D0 stopped: unreachable" wait_state "$D0" unreachable 8
check_eq "... rpfs stat $F: the size from the record" "$(size_of "$F")" 3000000
check "... rpfs cat: the bytes" sh -c "'$RPFS' cat $F | cmp - '$TMP/src'"
# the record damaged too (the parity member's server stopped for it, so
# that it reads the file again): the size is refused, naming the member
stop_server "$P0"
flip "$D/s$P0/data/$H.ends" 20
check "rpfs up starts server.$P0 again" "$RPFS" up --dir "$D"
check_in "server.$P0 online" wait_state "$P0" online 5
check_fails "... the record damaged too: rpfs stat fails naming io server $D0" \
	"io server $D0 " "$RPFS" stat "$F"
check "... the parity server said why" grep -q "record of sizes .* is damaged" "$D/rpfsd.$P0.log"
kill -CONT "$(pid_of "$D0")"
check_in "server.$D0 back: online" wait_state "$D0" online 5
check "... $F reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src'"
# the next change of the file fails the delta there (the record can't
# take it): the member is marked stale, and its resync makes it again
check "... a truncate to its size" "$RPFS" truncate -s 3000000 "$F"
check_in "... the parity member re-encoded, its record made again: verify passes" \
	wait_agrees "$F" $((30 * X))
check "... the parity server said why" \
	grep -q "record of sizes .* is damaged: .* marked stale" "$D/rpfsd.$P0.log"
stop_server "$P0"
check "... rpfsd --check of server.$P0 finds nothing wrong (its records of sizes too)" \
	"$(dirname "$RPFS")/rpfsd" --config "$D/rpfs.conf" --name "server.$P0" --check
check "rpfs up starts server.$P0 again" "$RPFS" up --dir "$D"
check_in "server.$P0 online" wait_state "$P0" online 5
# ---- the parity member lost: writes go on, then it is re-encoded ----------------------
kill -9 "$(pid_of "$P0")"
check_in "server.$P0 killed: unreachable" wait_state "$P0" unreachable 3
check "... $F rewritten with the parity member down" "$RPFS" cp "$TMP/src2" "rpfs:$F"
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src2'"
check_fails "... rpfs verify: the parity member is stale, naming its server" \
	"parity 0 of group 0 .* on io server $P0 .*is stale" "$RPFS" verify "$F"
check "rpfs up starts server.$P0 again" "$RPFS" up --dir "$D"
check_in "server.$P0 online" wait_state "$P0" online 5
check_in "... re-encoded by itself: rpfs verify passes" wait_agrees "$F" $((30 * X))
check "... rpfs stats counts it" sh -c "'$RPFS' stats | grep -Eq 'ec.parity_resynced[^0-9]*[1-9]'"
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src2'"

# ---- parity that disagrees with neither stale: rpfs verify --repair ---------------------
stop_server "$P0"
flip "$D/s$P0/data/$H" 100
check "rpfsd --check --repair --accept-damaged takes server.$P0's changed parity as it is" \
	sh -c "'$(dirname "$RPFS")/rpfsd' --config '$D/rpfs.conf' --name server.$P0 --check --repair --accept-damaged | grep -q 'accepted as it is'"
check "rpfs up starts server.$P0 again" "$RPFS" up --dir "$D"
check_in "server.$P0 online again" wait_state "$P0" online 5
check_fails "rpfs verify: the parity disagrees, naming its member" \
	"parity 0 of group 0 .* on io server $P0 .*disagrees" "$RPFS" verify "$F"
check "rpfs verify --repair $F: the parity re-encoded, then it agrees" \
	sh -c "'$RPFS' verify --repair $F | grep -q 'parity agrees'"
check "... the metadata server's log says so" \
	grep -q "$F: the parity member in slot .* disagrees with its data" "$D/rpfsd.0.log"
check "... reads back right" sh -c "'$RPFS' cat $F | cmp - '$TMP/src2'"

# ---- a damaged block of a data member: read around it --------------------------------
check "another ec:2+1 file, /e/z" "$RPFS" cp "$TMP/src" rpfs:/e/z
# shellcheck disable=SC2046
set -- $(servers_of /e/z)
flip "$D/s$1/data/$(handle_of /e/z)" 70000
check "a byte of server.$1's cell flipped: /e/z reads back right (decoded)" \
	sh -c "'$RPFS' cat /e/z | cmp - '$TMP/src'"
check_fails "... rpfs verify names the damage and the server" "io server $1 .*damaged" \
	"$RPFS" verify /e/z
check "... the server said so" grep -q "checksum mismatch" "$D/rpfsd.$1.log"

exit $fail
