#!/bin/sh
# run-fuse-test.sh: rpfs through a FUSE mount (rpfs mount, rpfs-fuse).
#
# Starts its own server set (rpfs up -n 4), mounts it with `rpfs mount` in
# a scratch directory and checks, with real assertions, what POSIX tools
# see: ls/ls -l, mkdir, cp of a 20 MiB random file in and out (cmp), cat,
# stat sizes, truncate (shrink, grow with zeros), mv (rename, into another
# directory), rm/rmdir, permission denied on a mode-0000 file (as user
# nobody through allow_other when run as root, else as the owner), dd with
# bs=4M and the largest write the mount received (>= 1 MiB; reads too as
# root, who may raise the readahead), concurrent
# writers of different files, a file written through the mount read by
# `rpfs cat` and one written by `rpfs cp` read through the mount, touch -d,
# df, EIO and a log line naming the server when an I/O server is killed;
# then test/mpi/mpi_hdf5.c (built with Debian's h5pcc.mpich, run on
# the rebuilt MPICH as test/mpi/run-hdf5-test.sh does) writes
# rpfs:/h5/test.h5 by MPI-IO and h5dump reads its datasets and attribute
# through the mount. The mount is unmounted and the servers stopped on
# every exit path; rpfs-fuse is killed if unmounting fails.
#
# Usage: test/fuse/run-fuse-test.sh [MPICH_PREFIX]
#   MPICH_PREFIX  the rebuilt MPICH (scripts/build-mpich.sh) for the HDF5
#                 part; without it that part is skipped (said, not counted)
# Environment:
#   RPFS_BIN      directory holding rpfs and rpfs-fuse (default: on PATH)
# Each check prints PASS or FAIL; the last line is "N passed, N failed".
# Where FUSE cannot run (no /dev/fuse, no fusermount3, a refused mount) it
# prints "skipped: <why>" and "0 passed, 0 failed".
set -u

MPICH_PREFIX=${1:-${MPICH_PREFIX:-}}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=test/support/suite.sh
. "$TOP/test/support/suite.sh"
suite_find_cli
RPFS_LIB=$(cd "$(dirname "$RPFS_CLI")/../lib" 2>/dev/null && pwd || true)

[ -e /dev/fuse ] || suite_skip "no /dev/fuse in this machine (modprobe fuse, or a container without it)"
command -v fusermount3 >/dev/null 2>&1 || suite_skip "no fusermount3 (apt-get install fuse3)"
[ -x "$(dirname "$RPFS_CLI")/rpfs-fuse" ] ||
    suite_skip "no rpfs-fuse beside $RPFS_CLI (configure found no libfuse3-dev)"

WORK=$(mktemp -d /tmp/rpfs-fuse-test.XXXXXX)
CLUSTER="$WORK/cluster"
MNT="$WORK/mnt"
LOG="$WORK/rpfs-fuse.log"
mkdir -p "$MNT" "$WORK/cwd"
# everything under $WORK must be reachable by user nobody for its checks
chmod 755 "$WORK"

mounted() { grep -q " $MNT fuse" /proc/mounts; }
# rpfs-fuse of this mount: the process whose arguments hold our mount point
fuse_pid() {
    for d in /proc/[0-9]*; do
        args=$({ tr '\0' '\n' <"$d/cmdline"; } 2>/dev/null) || continue
        case "$(printf '%s\n' "$args" | head -1)" in
        *rpfs-fuse) printf '%s\n' "$args" | grep -qx "$MNT" && echo "${d#/proc/}" ;;
        esac
    done
}
cleanup() {
    trap '' INT TERM # a second signal must not cut the cleanup short
    if mounted; then
        pid=$(fuse_pid)
        if ! fusermount3 -u "$MNT" 2>/dev/null; then
            [ -n "$pid" ] && kill -9 $pid 2>/dev/null
            fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
        fi
    fi
    suite_cluster_down
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# A broken mount must fail a check, not hang the test.
t() { timeout -k 5 120 "$@"; }

suite_cluster_up 4
echo "servers: RPFS_CONFIG=$RPFS_CONFIG"

ROOT=0
[ "$(id -u)" = 0 ] && ROOT=1
OPTS=
[ $ROOT = 1 ] && OPTS="-o allow_other"
# shellcheck disable=SC2086
# a dead server (the EIO check at the end) fails calls within 5 s
if ! RPFS_TIMEOUT_MS=5000 t "$RPFS_CLI" mount "$MNT" $OPTS --log "$LOG" >"$WORK/mount.log" 2>&1; then
    case "$(cat "$WORK/mount.log")" in
    *"can't reach the cluster"*) fail "rpfs mount $MNT" "$WORK/mount.log"; finish ;;
    esac
    suite_skip "mounting was refused: $(tr '\n' ' ' <"$WORK/mount.log")"
fi
FUSE_PID=$(fuse_pid)
if mounted && [ -n "$FUSE_PID" ]; then
    pass "rpfs mount $MNT $OPTS (rpfs-fuse pid $FUSE_PID)"
else
    fail "rpfs mount returned 0 but $MNT is not a fuse mount" "$WORK/mount.log"
    finish
fi

# ---- directories and a 20 MiB file ------------------------------------------
head -c $((20 << 20)) /dev/urandom >"$WORK/big"
check "mkdir $MNT/dir" t mkdir "$MNT/dir"
check "ls shows dir" sh -c "timeout 60 ls '$MNT' | grep -qx dir"
check "cp of a 20 MiB random file in" t cp "$WORK/big" "$MNT/dir/big"
check "cmp through the mount" t cmp "$WORK/big" "$MNT/dir/big"
check "cp out again, cmp" sh -c "timeout 120 cp '$MNT/dir/big' '$WORK/big.out' && cmp '$WORK/big' '$WORK/big.out'"
size=$(t stat -c %s "$MNT/dir/big")
[ "$size" = 20971520 ] && pass "stat size 20971520" || fail "stat size is '$size', not 20971520"
lsz=$(t ls -l "$MNT/dir" | awk '$NF == "big" { print $5 }')
[ "$lsz" = 20971520 ] && pass "ls -l size 20971520" || fail "ls -l size is '$lsz'"
rsz=$("$RPFS_CLI" stat /dir/big | awk '$1 == "size:" { print $2 }')
[ "$rsz" = 20971520 ] && pass "rpfs stat agrees (20971520)" || fail "rpfs stat size '$rsz'"
printf 'hello, rpfs\n' >"$WORK/small"
t cp "$WORK/small" "$MNT/dir/small"
[ "$(t cat "$MNT/dir/small")" = "hello, rpfs" ] && pass "cat of a small file" ||
    fail "cat of a small file"
printf 'one\n' >>"$MNT/dir/append"
printf 'two\n' >>"$MNT/dir/append"
[ "$(t cat "$MNT/dir/append")" = "one
two" ] && pass "O_APPEND writes go to the end" || fail "O_APPEND: '$(cat "$MNT/dir/append")'"

# ---- truncate ----------------------------------------------------------------
t cp "$WORK/big" "$MNT/dir/tr"
t truncate -s 1000 "$MNT/dir/tr"
head -c 1000 "$WORK/big" >"$WORK/tr.expect"
check "truncate shrinks to 1000 bytes (stat)" test "$(stat -c %s "$MNT/dir/tr")" = 1000
check "truncate keeps the first 1000 bytes" t cmp "$WORK/tr.expect" "$MNT/dir/tr"
t truncate -s 3000 "$MNT/dir/tr"
head -c 2000 /dev/zero >>"$WORK/tr.expect"
check "truncate grows to 3000 bytes, the new ones zeros" t cmp "$WORK/tr.expect" "$MNT/dir/tr"
: >"$WORK/empty"
check "open with O_TRUNC empties a file" sh -c ": > '$MNT/dir/tr' && cmp '$WORK/empty' '$MNT/dir/tr'"

# ---- rename --------------------------------------------------------------------
t mkdir "$MNT/other"
check "mv renames a file" t mv "$MNT/dir/small" "$MNT/dir/small2"
check "the old name is gone" sh -c "! test -e '$MNT/dir/small'"
check "mv into another directory" t mv "$MNT/dir/small2" "$MNT/other/small3"
check "the moved file reads the same" t cmp "$WORK/small" "$MNT/other/small3"
check "rpfs stat sees the new name" "$RPFS_CLI" stat /other/small3
t cp "$WORK/big" "$MNT/dir/victim"
printf 'replacement\n' >"$WORK/repl"
t cp "$WORK/repl" "$MNT/dir/repl"
check "mv replaces an existing file" sh -c \
    "timeout 60 mv -f '$MNT/dir/repl' '$MNT/dir/victim' && cmp '$WORK/repl' '$MNT/dir/victim'"
t mkdir -p "$MNT/tree/sub"
t cp "$WORK/small" "$MNT/tree/sub/f"
check "mv of a directory into another one keeps its files" sh -c \
    "timeout 60 mv '$MNT/tree' '$MNT/other/tree' && cmp '$WORK/small' '$MNT/other/tree/sub/f'"
t rm -r "$MNT/other/tree" "$MNT/dir/victim"

# ---- rm, rmdir -------------------------------------------------------------------
check "rmdir of a non-empty directory fails" sh -c \
    "timeout 60 rmdir '$MNT/other' 2>&1 | grep -q 'not empty'"
check "rm a file" t rm "$MNT/other/small3"
check "rmdir the empty directory" t rmdir "$MNT/other"
check "ls no longer shows it" sh -c "! timeout 60 ls '$MNT' | grep -qx other"
check "rpfs stat: gone" sh -c "! '$RPFS_CLI' stat /other >/dev/null 2>&1"

# ---- permissions ---------------------------------------------------------------
printf 'secret\n' >"$MNT/secret"
t chmod 0000 "$MNT/secret"
mode=$("$RPFS_CLI" stat /secret | awk '$1 == "mode:" { print $2 }')
[ "$mode" = 0000 ] && pass "chmod 0000 reaches the servers (rpfs stat: $mode)" ||
    fail "rpfs stat mode '$mode' after chmod 0000"
if [ $ROOT = 1 ] && command -v setpriv >/dev/null 2>&1; then
    NOBODY=$(id -u nobody)
    NOGROUP=$(id -g nobody)
    as_nobody() { setpriv --reuid="$NOBODY" --regid="$NOGROUP" --clear-groups "$@"; }
    check "user nobody gets 'Permission denied' on the mode-0000 file" sh -c \
        "setpriv --reuid=$NOBODY --regid=$NOGROUP --clear-groups cat '$MNT/secret' 2>&1 | grep -q 'Permission denied'"
    check "root reads it (as on any POSIX file system)" t cat "$MNT/secret"
    check "user nobody may not create in root's 0755 directory" sh -c \
        "! setpriv --reuid=$NOBODY --regid=$NOGROUP --clear-groups sh -c 'echo x > $MNT/dir/n' 2>/dev/null"
    t mkdir "$MNT/pub"
    t chmod 1777 "$MNT/pub"
    as_nobody sh -c "echo mine > '$MNT/pub/n'"
    own=$("$RPFS_CLI" stat /pub/n | awk '$1 == "mode:" { print $5 }')
    [ "$own" = "$NOBODY" ] && pass "a file nobody creates belongs to nobody (rpfs stat uid $own)" ||
        fail "a file nobody created has uid '$own' on rpfs"
else
    check "the owner gets 'Permission denied' on its mode-0000 file" sh -c \
        "cat '$MNT/secret' 2>&1 | grep -q 'Permission denied'"
fi

# ---- big writes, concurrency -------------------------------------------------------
check "dd bs=4M of 20 MiB into the mount" t dd if="$WORK/big" of="$MNT/dir/dd" bs=4M status=none
check "dd's file reads back equal" t cmp "$WORK/big" "$MNT/dir/dd"
pids=
for k in 1 2 3 4; do
    head -c $((3 << 20)) /dev/urandom >"$WORK/c$k"
done
for k in 1 2 3 4; do
    t cp "$WORK/c$k" "$MNT/dir/c$k" &
    pids="$pids $!"
done
ok=1
for p in $pids; do wait "$p" || ok=0; done
for k in 1 2 3 4; do t cmp "$WORK/c$k" "$MNT/dir/c$k" >/dev/null 2>&1 || ok=0; done
[ $ok = 1 ] && pass "4 concurrent writers of different files, each file equal" ||
    fail "4 concurrent writers of different files"

# ---- the mount and the rpfs CLI see the same files -----------------------------------
check "a file written through the mount reads equal with rpfs cat" sh -c \
    "'$RPFS_CLI' cat /dir/big | cmp '$WORK/big' -"
"$RPFS_CLI" cp "$WORK/c1" rpfs:/fromcli >/dev/null
check "a file written by rpfs cp reads equal through the mount" t cmp "$WORK/c1" "$MNT/fromcli"

# ---- times, df -------------------------------------------------------------------
t touch -d "2021-02-03 04:05:06 UTC" "$MNT/fromcli"
mt=$(TZ=UTC stat -c %y "$MNT/fromcli")
case "$mt" in
"2021-02-03 04:05:06"*) pass "touch -d sets the modification time ($mt)" ;;
*) fail "touch -d: mtime is '$mt'" ;;
esac
dfsz=$(t df -k "$MNT" | awk 'NR == 2 { print $2 }')
[ -n "$dfsz" ] && [ "$dfsz" -gt 0 ] 2>/dev/null && pass "df shows the cluster's capacity (${dfsz} KiB)" ||
    fail "df on the mount: '$dfsz'"

# ---- HDF5 written by MPI-IO, read by h5dump through the mount ----------------------
hdf5_part() {
    MPIEXEC="$MPICH_PREFIX/bin/mpiexec"
    command -v h5dump >/dev/null 2>&1 || { fail "h5dump not found (apt-get install hdf5-tools)"; return; }
    command -v h5pcc.mpich >/dev/null 2>&1 ||
        { fail "h5pcc.mpich not found (apt-get install libhdf5-mpich-dev)"; return; }
    # -shlib: Debian's shared libhdf5, linked to libmpich.so.12, which the
    # rebuilt MPICH replaces (test/mpi/run-hdf5-test.sh)
    if ! h5pcc.mpich -shlib -O2 -o "$WORK/mpi_hdf5" "$TOP/test/mpi/mpi_hdf5.c" \
        >"$WORK/h5build.log" 2>&1; then
        fail "build test/mpi/mpi_hdf5.c with h5pcc.mpich" "$WORK/h5build.log"
        return
    fi
    t mkdir -p "$MNT/h5"
    if (cd "$WORK/cwd" &&
        LD_LIBRARY_PATH="$MPICH_PREFIX/lib${RPFS_LIB:+:$RPFS_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            t "$MPIEXEC" -n 4 "$WORK/mpi_hdf5" rpfs:/h5/test.h5) >"$WORK/h5run.log" 2>&1 &&
        grep -q "No Errors" "$WORK/h5run.log"; then
        pass "mpi_hdf5 wrote rpfs:/h5/test.h5 by MPI-IO (4 processes)"
    else
        fail "mpi_hdf5 on rpfs:/h5/test.h5" "$WORK/h5run.log"
        return
    fi
    check "mpi_hdf5 left no local file (its working directory is empty)" sh -c \
        "test -z \"\$(ls -A '$WORK/cwd')\""
    F="$MNT/h5/test.h5"
    # /contig: row * 1024 + col + 0.25; /chunked: -(col * 512 + row) - 0.5
    check "h5dump /contig through the mount: (1,2) (1,3) = 1026.25, 1027.25" sh -c \
        "timeout 60 h5dump -m %.2f -d /contig -s 1,2 -c 1,2 '$F' >'$WORK/h5a' &&
         grep -qF '(1,2): 1026.25' '$WORK/h5a' && grep -qF '(1,3): 1027.25' '$WORK/h5a'"
    check "h5dump /contig: the last rank's row, (1023,1022) = 1048574.25" sh -c \
        "timeout 60 h5dump -m %.2f -d /contig -s 1023,1022 -c 1,1 '$F' | grep -qF '(1023,1022): 1048574.25'"
    check "h5dump /chunked: (0,0) (0,1) = -0.5, -512.5" sh -c \
        "timeout 60 h5dump -m %.2f -d /chunked -s 0,0 -c 1,2 '$F' >'$WORK/h5b' &&
         grep -qF '(0,0): -0.50' '$WORK/h5b' && grep -qF '(0,1): -512.50' '$WORK/h5b'"
    check "h5dump the attribute /contig/answer = 424242" sh -c \
        "timeout 60 h5dump -a /contig/answer '$F' | grep -q 424242"
}
if [ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpiexec" ]; then
    hdf5_part
else
    echo "SKIP  h5dump of an MPI-IO HDF5 file (no MPICH_PREFIX given; not counted)"
fi

# ---- unmount ---------------------------------------------------------------------
t cp "$WORK/big" "$MNT/eio"
check "rm -r of a tree through the mount" t rm -r "$MNT/dir"
if grep -q EIO "$LOG"; then
    fail "rpfs-fuse logged errors" "$LOG"
else
    pass "rpfs-fuse logged no error"
fi

# ---- a dead I/O server: EIO, and a log line naming it ---------------------------------
kill -9 "$(cat "$CLUSTER/rpfsd.3.pid")"
check "with io server 3 killed, reading a file striped over it fails with EIO" sh -c \
    "timeout 60 cat '$MNT/eio' 2>&1 >/dev/null | grep -q 'Input/output error'"
check "the log names the server and the cause" sh -c \
    "grep -E ' /eio: .*io server 3 .*EIO' '$LOG' || { cat '$LOG'; false; }"
check "rpfs umount" t "$RPFS_CLI" umount "$MNT"
check "no longer mounted" sh -c "! grep -q ' $MNT fuse' /proc/mounts"
# rpfs-fuse writes its last log line as it exits, after the unmount
n=0
while [ -d "/proc/$FUSE_PID" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
check "rpfs-fuse exits after the unmount" sh -c "! test -d /proc/$FUSE_PID"
largest=$(sed -n 's/.*unmounted: [0-9]* writes, largest \([0-9]*\) bytes.*/\1/p' "$LOG" | tail -1)
[ -n "$largest" ] && [ "$largest" -ge 1048576 ] &&
    pass "big writes: the largest write the mount received was $largest bytes" ||
    fail "big writes: largest write '$largest' (< 1 MiB)" "$LOG"
if [ $ROOT = 1 ]; then
    # rpfs-fuse raises the mount's readahead (sysfs, root only)
    rd=$(sed -n 's/.* reads, largest \([0-9]*\) bytes.*/\1/p' "$LOG" | tail -1)
    [ -n "$rd" ] && [ "$rd" -ge 1048576 ] &&
        pass "big reads: the largest read the mount received was $rd bytes" ||
        fail "big reads: largest read '$rd' (< 1 MiB)" "$LOG"
fi
finish
