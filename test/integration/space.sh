#!/bin/sh
# Space, times and counts, on servers whose storage is one small disk: a
# 20 MiB tmpfs that four servers (`rpfs up -n 4`) share. Through the CLI
# and through a FUSE mount of it:
#   - df counts that disk once (rpfs df, df on the mount), names each
#     server by its config name and roles, and reports its real use;
#   - data writes and truncates change mtime and ctime (rpfs stat, FUSE
#     stat), while touch -d sticks until the next write;
#   - a dd through FUSE that hits ENOSPC leaves the file as long as dd says
#     it wrote, with those bytes;
#   - a full disk can always be emptied: rm (CLI and FUSE, many files) and
#     truncate work on it.
# Needs root (it mounts the tmpfs); otherwise it is skipped (exit 77), as
# the FUSE part is where there is no /dev/fuse, fusermount3 or rpfs-fuse.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
ADDR=127.0.0.1
DISK_MIB=20

[ "$(id -u)" = 0 ] || { echo "skipped: mounting a tmpfs needs root"; exit 77; }
TMP=$(mktemp -d /tmp/rpfs-space-XXXXXX) || exit 1
DISK=$TMP/disk
MNT=$TMP/mnt
D=$DISK/cluster
mkdir -p "$DISK" "$MNT"
fail=0

cleanup() {
	trap '' INT TERM
	if grep -q " $MNT fuse" /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	umount "$DISK" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! mount -t tmpfs -o size=${DISK_MIB}m tmpfs "$DISK" 2>"$TMP/mount.err"; then
	echo "skipped: can't mount a tmpfs: $(cat "$TMP/mount.err")"
	exit 77
fi

# shellcheck source=test/integration/checks.sh
. "$(dirname "$0")/checks.sh"
# The rest of the disk taken by a writer outside rpfs.
fill_disk() {
	dd if=/dev/zero of="$DISK/filler" bs=64k >/dev/null 2>&1
	avail=$(df -B1 --output=avail "$DISK" | tail -1 | tr -d ' ')
	[ "$avail" -lt 65536 ] || bad "the disk is not full after the filler ($avail bytes left)"
}

"$RPFS" up -n 4 --dir "$D" --address "$ADDR" >"$TMP/up" 2>&1 || {
	cat "$TMP/up"
	exit 1
}
export RPFS_CONFIG="$D/rpfs.conf"
disk_bytes=$(df -B1 --output=size "$DISK" | tail -1 | tr -d ' ')
head -c $((30 << 20)) /dev/urandom >"$TMP/src"
head -c 100000 /dev/urandom >"$TMP/small"

# ---- a full disk can be emptied: a new store has no free pages yet ---------------
"$RPFS" cp "$TMP/src" rpfs:/first >"$TMP/cp" 2>&1 && bad "cp of 30 MiB onto a $DISK_MIB MiB disk should fail"
check "rpfs cp fills the disk: No space left on device" grep -q 'No space left on device' "$TMP/cp"
# cp removes the file it made: a remove on the full disk
check "the failed cp removed what it made, on the full disk" \
	sh -c "! '$RPFS' stat /first >/dev/null 2>&1 && ! grep -qi 'partly\\|remove' '$TMP/cp'"
# a disk that something else filled: rpfs rm still works
"$RPFS" cp "$TMP/small" rpfs:/keep >/dev/null 2>&1 || bad "rpfs cp of 100000 bytes"
fill_disk
check "rpfs rm on a disk filled by another writer" "$RPFS" rm /keep
rm -f "$DISK/filler"

# ---- counts ------------------------------------------------------------------
"$RPFS" df >"$TMP/df" 2>&1 || bad "rpfs df" "$TMP/df"
check_eq "rpfs df: four servers on one disk count it once" \
	"$(awk '$1 == "total" { print $5 }' "$TMP/df")" "$disk_bytes"
check "rpfs df: the total says one file system" grep -q '^total (1 file system) ' "$TMP/df"
check_eq "rpfs df: every server on the same file system (fs 1)" \
	"$(awk '$1 ~ /^server\.[0-3]$/ && $8 == 1' "$TMP/df" | wc -l)" 4
check "rpfs df: servers by config name and roles" \
	sh -c "grep -q '^server\.0 ($ADDR:[0-9]*) *meta,io ' '$TMP/df' &&
	       grep -q '^server\.3 ($ADDR:[0-9]*) *io ' '$TMP/df'"

# ---- times through the CLI ----------------------------------------------------
mtime() { "$RPFS" stat "$1" | awk '$1 == "mtime:" { print $2, $3 }'; }
ctime() { "$RPFS" stat "$1" | awk '$1 == "ctime:" { print $2, $3 }'; }
"$RPFS" cp "$TMP/small" rpfs:/t >/dev/null
m1=$(mtime /t)
sleep 0.1
"$RPFS" cp "$TMP/small" rpfs:/t >/dev/null
m2=$(mtime /t)
c2=$(ctime /t)
check "rpfs stat: rewriting a file moves its mtime ($m1 -> $m2)" \
	sh -c "[ '$m2' \> '$m1' ]"
check_eq "rpfs stat: and its ctime with it" "$c2" "$m2"
"$RPFS" rm /t

# ---- FUSE ---------------------------------------------------------------------
fuse=1
[ -e /dev/fuse ] || { echo "skip FUSE part: no /dev/fuse"; fuse=0; }
command -v fusermount3 >/dev/null 2>&1 || { echo "skip FUSE part: no fusermount3"; fuse=0; }
[ -x "$(dirname "$RPFS")/rpfs-fuse" ] || { echo "skip FUSE part: no rpfs-fuse"; fuse=0; }
if [ $fuse = 1 ] && ! timeout 30 "$RPFS" mount "$MNT" --log "$TMP/fuse.log" >"$TMP/out" 2>&1; then
	bad "rpfs mount $MNT" "$TMP/out"
	fuse=0
fi
if [ $fuse = 1 ]; then
	ok "rpfs mount $MNT"
	# df on the mount: the disk's size once, and the disk's own use
	set -- $(df -B1 --output=size,used "$MNT" | tail -1)
	check_eq "df on the mount: the disk's size, once" "$1" "$disk_bytes"
	used=$(df -B1 --output=used "$DISK" | tail -1 | tr -d ' ')
	check "df on the mount: the disk's use ($2 vs $used bytes)" \
		sh -c "d=\$(( $2 - $used )); [ \$d -lt 1048576 ] && [ \$d -gt -1048576 ]"

	# times: writes, touch -d, chmod, writes again, truncate
	fm() { stat -c %y "$1"; }
	fc() { stat -c %z "$1"; }
	echo one >"$MNT/f"
	m1=$(fm "$MNT/f")
	sleep 0.1
	echo two >>"$MNT/f"
	m2=$(fm "$MNT/f")
	check "FUSE stat: an append moves mtime ($m1 -> $m2)" sh -c "[ '$m2' \> '$m1' ]"
	check_eq "FUSE stat: and ctime" "$(fc "$MNT/f")" "$m2"
	touch -d '2001-02-03 04:05:06' "$MNT/f"
	check_eq "FUSE stat: touch -d sets mtime" "$(fm "$MNT/f")" \
		"2001-02-03 04:05:06.000000000 +0000"
	chmod 600 "$MNT/f"
	check_eq "FUSE stat: chmod keeps it" "$(fm "$MNT/f")" \
		"2001-02-03 04:05:06.000000000 +0000"
	sleep 0.1
	echo three >>"$MNT/f"
	m3=$(fm "$MNT/f")
	check "FUSE stat: a write after touch -d moves mtime again ($m3)" \
		sh -c "[ '$m3' \> '$m2' ]"
	sleep 0.1
	truncate -s 2 "$MNT/f"
	m4=$(fm "$MNT/f")
	check "FUSE stat: truncate moves mtime ($m3 -> $m4)" sh -c "[ '$m4' \> '$m3' ]"
	check_eq "FUSE stat: and ctime" "$(fc "$MNT/f")" "$m4"
	touch -r "$MNT/f" "$TMP/ref"
	sleep 0.1
	echo four >>"$MNT/f"
	check "cp -u copies a file rewritten since" \
		sh -c "cp '$MNT/f' '$TMP/old' && touch -r '$TMP/ref' '$TMP/old' &&
		       cp -u '$MNT/f' '$TMP/old' && cmp '$MNT/f' '$TMP/old'"
	rm -f "$MNT/f"

	# a dd that fills the disk: the size is what dd says it wrote
	for bs in 128k 1M 5000; do
		dd if="$TMP/src" of="$MNT/dd" bs=$bs >"$TMP/dd" 2>&1 &&
			bad "dd bs=$bs of 30 MiB onto a $DISK_MIB MiB disk should fail"
		grep -q 'No space left on device' "$TMP/dd" ||
			bad "dd bs=$bs: not ENOSPC" "$TMP/dd"
		n=$(awk '/bytes/ && /copied/ { print $1 }' "$TMP/dd")
		check_eq "dd bs=$bs hit ENOSPC: the file is as long as dd wrote" \
			"$(stat -c %s "$MNT/dd")" "$n"
		check "dd bs=$bs: those bytes are there" cmp -n "$n" "$TMP/src" "$MNT/dd"
		check "rm through the mount on the full disk" rm "$MNT/dd"
	done

	# a full disk: truncate first works, and so does rm
	dd if="$TMP/src" of="$MNT/full" bs=1M >/dev/null 2>&1
	check "truncate through the mount on the full disk" truncate -s 0 "$MNT/full"
	check "rm through the mount after it" rm "$MNT/full"
	fusermount3 -u "$MNT" || bad "fusermount3 -u $MNT"
fi

# ---- many files on a full disk (CLI) ----------------------------------------------
for i in $(seq 1 20); do "$RPFS" cp "$TMP/small" rpfs:/s$i >/dev/null 2>&1; done
"$RPFS" cp "$TMP/src" rpfs:/big >"$TMP/cp" 2>&1 && bad "cp of 30 MiB onto a $DISK_MIB MiB disk should fail"
check "rpfs cp fills the disk again" grep -q 'No space left on device' "$TMP/cp"
check "the failed cp removed what it made, on the full disk, again" \
	sh -c "! '$RPFS' stat /big >/dev/null 2>&1"
fill_disk
n=0
for i in $(seq 1 20); do "$RPFS" rm /s$i >"$TMP/out" 2>&1 || n=$((n + 1)); done
check_eq "rpfs rm of 20 files on the full disk: none fails" "$n" 0
rm -f "$DISK/filler"
check_eq "the disk is empty again: rpfs ls /" "$("$RPFS" ls /)" ""
avail=$(df -B1 --output=avail "$DISK" | tail -1 | tr -d ' ')
check "and its space is back ($avail bytes available)" test "$avail" -gt $((15 << 20))

exit $fail
