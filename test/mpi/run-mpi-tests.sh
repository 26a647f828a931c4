#!/bin/sh
# run-mpi-tests.sh: rpfs's own MPI tests (test/mpi/*.c, examples/mpi_io_demo.c)
# through the rebuilt MPICH and the rpfs ROMIO driver.
#
# Usage: test/mpi/run-mpi-tests.sh MPICH_PREFIX
#   MPICH_PREFIX  the prefix printed by scripts/build-mpich.sh
# Environment:
#   RPFS_BIN      directory holding the rpfs CLI (default: on PATH); the
#                 script starts its own server set (rpfs up -n 3) in a
#                 temporary directory and stops it at the end
#   TEST_TIMEOUT  seconds per run (default 120)
#   NPS           process counts of the tests run at several (default 1 2 4)
#   TILE_ARGS     extra tile_io options (default: --iters 2)
#   BIN_DIR       where the test programs are built (default: a temporary
#                 directory); NO_BUILD=1 runs the ones already there (the
#                 Soft-RoCE VM has no compiler: scripts/rxe-vm)
# Each test passes on exit 0 and " No Errors" AND when it shows that it ran
# on rpfs (on-rpfs.sh): the files it keeps are on rpfs, those it deletes are
# gone from rpfs, and nothing appeared in its scratch working directory.
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

MPICH_PREFIX=${1:-${MPICH_PREFIX:-}}
[ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpicc" ] ||
    { echo "usage: $0 MPICH_PREFIX (from scripts/build-mpich.sh)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MPICC="$MPICH_PREFIX/bin/mpicc"
MPIEXEC="$MPICH_PREFIX/bin/mpiexec"
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
NPS=${NPS:-1 2 4} # process counts of the tests that run at several
# shellcheck source=test/support/suite.sh
. "$REPO/test/support/suite.sh"
suite_find_cli
# shellcheck source=test/mpi/on-rpfs.sh
. "$HERE/on-rpfs.sh"

WORK=$(mktemp -d /tmp/rpfs-mpi-tests.XXXXXX)
CLUSTER="$WORK/cluster"
cleanup() {
    suite_cluster_down
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM


# run NAME NP KEPT DELETED PROGRAM ARGS...: passes on exit 0, " No Errors"
# and the proof that it ran on rpfs (KEPT and DELETED: rpfs paths).
run() {
    name=$1 np=$2 kept=$3 deleted=$4
    shift 4
    log="$WORK/$(echo "$name.$np" | tr ' /=,' '____').log"
    # shellcheck disable=SC2086
    if ! place_markers $deleted >"$log"; then
        fail "$name (np=$np, not run)" "$log"
        return
    fi
    cwd=$(scratch_dir "$name.$np")
    (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n "$np" "$@") >>"$log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "timeout after ${TEST_TIMEOUT}s" >>"$log"
    if ! proof=$(prove_on_rpfs "$cwd" "$kept" "$deleted"); then
        printf '%s\n' "$proof" >>"$log"
        fail "$name (np=$np, exit $rc, cannot show it ran on rpfs)" "$log"
    elif [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
        pass "$name (np=$np)"
    else
        fail "$name (np=$np, exit $rc)" "$log"
    fi
}

BIN="${BIN_DIR:-$WORK/bin}"
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd) # the tests run in scratch directories
if [ "${NO_BUILD:-0}" = 1 ]; then
    echo "using the test programs in $BIN"
    for t in mpi_errors mpi_hints mpi_sizes mpi_coll_rw mpi_overlap mpi_threads mpi_server_kill mpi_finalize_open mpi_write_eof mpi_io_demo tile_io mpi_fstype_force mpi_mirror; do
        [ -x "$BIN/$t" ] || fail "no $BIN/$t (build it first: run without NO_BUILD)"
    done
else
    echo "building the tests with $MPICC"
    for t in mpi_errors mpi_hints mpi_sizes mpi_coll_rw mpi_overlap mpi_threads mpi_server_kill mpi_finalize_open mpi_write_eof mpi_fstype_force mpi_mirror; do
        "$MPICC" -O2 -Wall -o "$BIN/$t" "$HERE/$t.c" >"$WORK/$t.build.log" 2>&1 ||
            fail "build $t" "$WORK/$t.build.log"
    done
    "$MPICC" -O2 -Wall -o "$BIN/mpi_io_demo" "$REPO/examples/mpi_io_demo.c" \
        >"$WORK/demo.build.log" 2>&1 || fail "build mpi_io_demo" "$WORK/demo.build.log"
    "$MPICC" -O2 -Wall -o "$BIN/tile_io" "$REPO/examples/tile_io.c" \
        >"$WORK/tile.build.log" 2>&1 || fail "build tile_io" "$WORK/tile.build.log"
fi

suite_cluster_up 3
echo "servers: RPFS_CONFIG=$RPFS_CONFIG"
"$RPFS_CLI" mkdir /t >/dev/null 2>&1 || true

# mpi_errors deletes all four of its files (BASE.missing twice, BASE.ro by
# delete-on-close, BASE.gone while open); mpi_hints and mpi_sizes delete their file at the end.
for np in $NPS; do
    run "error classes" $np "" "/t/err.$np.missing /t/err.$np.exists /t/err.$np.ro /t/err.$np.gone" \
        "$BIN/mpi_errors" rpfs:/t/err.$np
done
for np in $NPS; do
    run "hints round trip" $np "" /t/hints.$np "$BIN/mpi_hints" rpfs:/t/hints.$np 2
done
for np in $NPS; do
    run "sizes, append, nonblocking I/O" $np "" /t/sizes.$np "$BIN/mpi_sizes" rpfs:/t/sizes.$np
done
for np in $NPS; do
    run "threads: MPI_THREAD_MULTIPLE, blocking and nonblocking mixed" $np /t/threads.$np "" \
        "$BIN/mpi_threads" rpfs:/t/threads.$np 4
done
# Nonblocking I/O overlaps computation: 256 MiB with one rank, 64 MiB a
# rank with two (contiguous, strided view, iwrite_all/iread_all).
run "nonblocking I/O moves while the program computes" 1 /t/overlap.1 "" \
    "$BIN/mpi_overlap" rpfs:/t/overlap.1 "${OVERLAP_MIB:-256}"
run "nonblocking I/O moves while the program computes" 2 /t/overlap.2 "" \
    "$BIN/mpi_overlap" rpfs:/t/overlap.2 "${OVERLAP_MIB2:-64}"
run "collective write (list I/O)" 4 /t/coll4 "" "$BIN/mpi_coll_rw" write rpfs:/t/coll4
for np in 1 2 3; do
    run "independent read of a 4-process file" $np /t/coll4 "" "$BIN/mpi_coll_rw" read rpfs:/t/coll4
done
# 5000-byte blocks: below the driver's 16 KiB piece, so two-phase
run "collective write (two-phase)" 3 /t/coll3 "" "$BIN/mpi_coll_rw" write rpfs:/t/coll3 700 5000
for np in 1 4; do
    run "independent read of a 3-process file" $np /t/coll3 "" "$BIN/mpi_coll_rw" read rpfs:/t/coll3 700 5000
done

# A file left open at MPI_Finalize loses nothing: closed from a delete
# callback on MPI_COMM_SELF attached before the first open (as HDF5 does:
# MPI runs it after the driver's own) or after it, or never closed; a
# second run checks every rank's data.
for np in 1 2; do
    for mode in before after unclosed; do
        f=/t/finalize.$mode.$np
        case $mode in
            before) what="closed by a delete callback attached before the first open" ;;
            after) what="closed by a delete callback attached after the first open" ;;
            unclosed) what="never closed" ;;
        esac
        run "file left open at MPI_Finalize, $what" $np $f "" \
            "$BIN/mpi_finalize_open" $mode rpfs:$f
        run "  its data, read back by a second run ($mode)" $np $f "" \
            "$BIN/mpi_finalize_open" check rpfs:$f
    done
done

# the lines of mpi_write_eof's cases in a log
eof_cases() { grep -E ': write (ok|failed), read count' "$1"; }
# Writes of nothing past the end and writes that fail (contiguous, strided,
# nonblocking, collective) never make a later read past the end count
# bytes: each case's line (write ok/failed, read count, size) is the one
# ROMIO's ufs gives for the same program on a local file. The ufs run is a
# single process without the failing nonblocking writes: ROMIO 4.0.2's ufs
# never completes such a request (mpi_write_eof.c), and a strided write
# that fails keeps its data-sieving lock, so another rank's waits forever.
ufs_dir="$WORK/ufs/eof"
mkdir -p "$ufs_dir"
(cd "$ufs_dir" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 1 "$BIN/mpi_write_eof" \
    "ufs:$ufs_dir/file" no-failed-nonblocking) >"$ufs_dir.log" 2>&1
eof_cases "$ufs_dir.log" >"$ufs_dir.ufs"
if grep -q "No Errors" "$ufs_dir.log" && [ -s "$ufs_dir.ufs" ]; then
    pass "reads past the end after writes of nothing or failed writes on ufs (the reference, np=1)"
else
    fail "reads past the end after writes of nothing or failed writes on ufs (the reference, np=1)" \
        "$ufs_dir.log"
fi
for np in 1 2; do
    run "reads past the end after writes of nothing or failed writes" $np /t/eof.$np "" \
        "$BIN/mpi_write_eof" rpfs:/t/eof.$np
    eof_cases "$log" >"$ufs_dir.rpfs.$np"
    # each of ufs's cases with the same line on rpfs
    if [ -s "$ufs_dir.ufs" ] && ! grep -vxFf "$ufs_dir.rpfs.$np" "$ufs_dir.ufs" >"$ufs_dir.diff.$np"; then
        pass "  every case ufs runs as on ufs (np=$np, $(wc -l <"$ufs_dir.ufs") of $(wc -l <"$ufs_dir.rpfs.$np") cases)"
    else
        fail "  ufs's lines that rpfs does not print (np=$np)" "$ufs_dir.diff.$np"
    fi
done

# ROMIO_FSTYPE_FORCE=rpfs: sends names without a prefix to rpfs: relative
# ones relative to RPFS_CWD (else the rpfs root), and absolute ones whose
# directory exists only on rpfs (ROMIO no longer statfs()es it first).
for np in $NPS; do
    "$RPFS_CLI" mkdir /t/cwd.$np /t/onlyonrpfs.$np /t/onlyonrpfs.$np/dir >/dev/null 2>&1
    run "ROMIO_FSTYPE_FORCE=rpfs:, names relative to RPFS_CWD and absolute names only on rpfs" $np \
        "/t/cwd.$np/force.rel /t/onlyonrpfs.$np/dir/x" /t/cwd.$np/force.del \
        -genv ROMIO_FSTYPE_FORCE rpfs: -genv RPFS_CWD /t/cwd.$np \
        "$BIN/mpi_fstype_force" force.rel /t/onlyonrpfs.$np/dir/x force.del
done
"$RPFS_CLI" mkdir /t/onlyonrpfs.root /t/onlyonrpfs.root/dir >/dev/null 2>&1
run "ROMIO_FSTYPE_FORCE=rpfs:, names relative to the rpfs root" 2 \
    "/force.root /t/onlyonrpfs.root/dir/x" /force.root.del \
    -genv ROMIO_FSTYPE_FORCE rpfs: \
    "$BIN/mpi_fstype_force" force.root /t/onlyonrpfs.root/dir/x force.root.del

# the example prints no " No Errors": check its own line
log="$WORK/demo.log"
cwd=$(scratch_dir demo)
if (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 4 "$BIN/mpi_io_demo" rpfs:/t/demo.dat) \
    >"$log" 2>&1 && grep -q "data check ok" "$log" && prove_on_rpfs "$cwd" /t/demo.dat "" >>"$log"; then
    pass "examples/mpi_io_demo (np=4)"
    sed 's/^/    /' "$log"
else
    fail "examples/mpi_io_demo (np=4)" "$log"
fi

# tile I/O (mpi-tile-io parameters): list, pieces and collective, every read
# checked against what its write stored
log="$WORK/tile.log"
cwd=$(scratch_dir tile)
# shellcheck disable=SC2086
if (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 4 "$BIN/tile_io" \
    --filename rpfs:/t/tile --mode all --verify ${TILE_ARGS:---iters 2}) >"$log" 2>&1 &&
    grep -q "^list/pieces" "$log" && prove_on_rpfs "$cwd" /t/tile "" >>"$log"; then
    pass "tile I/O, list, pieces and collective, every read verified (np=4)"
    sed 's/^/    /' "$log"
else
    fail "tile I/O, list, pieces and collective, every read verified (np=4)" "$log"
fi

# the same with 768-byte rows: below the driver's 16 KiB piece, collective
# calls take ROMIO's two-phase path (ad_rpfs_coll.c), above it each rank's
# list I/O; both are checked byte for byte
log="$WORK/tile-small.log"
cwd=$(scratch_dir tile-small)
# shellcheck disable=SC2086
if (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 4 "$BIN/tile_io" \
    --filename rpfs:/t/tile-small --mode all --verify --sz_tile_x 32 --sz_tile_y 1024 \
    ${TILE_ARGS:---iters 2}) >"$log" 2>&1 &&
    grep -q "^list/pieces" "$log" && prove_on_rpfs "$cwd" /t/tile-small "" >>"$log"; then
    pass "tile I/O with 768-byte pieces (two-phase), every read verified (np=4)"
    sed 's/^/    /' "$log"
else
    fail "tile I/O with 768-byte pieces (two-phase), every read verified (np=4)" "$log"
fi

# An ec:2+1 file written by 4 ranks, its parity checked (test/support/suite.sh)
suite_ec_tests "$BIN/mpi_mirror" /t/ec

# A mirrored file written by 4 ranks, read with one of its servers killed
# (test/support/suite.sh)
suite_mirror_tests "$BIN/mpi_mirror" /t/mirror

# last, as it breaks the server set: kill -9 an I/O-only server mid-job
ready="$WORK/ready"
log="$WORK/kill.log"
victim=$(ls "$CLUSTER"/rpfsd.*.pid 2>/dev/null | LC_ALL=C sort | tail -1)
if [ -z "$victim" ]; then
    fail "server killed during a job: no server pidfiles in $CLUSTER"
else
    cwd=$(scratch_dir kill)
    (cd "$cwd" && exec timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n 4 "$BIN/mpi_server_kill" \
        rpfs:/t/kill "$ready" 90) >"$log" 2>&1 &
    job=$!
    i=0
    while [ ! -e "$ready" ] && [ $i -lt 300 ] && kill -0 $job 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    pid=$(cat "$victim")
    start=$(date +%s)
    kill -9 "$pid" 2>/dev/null
    wait $job
    rc=$?
    secs=$(($(date +%s) - start))
    # an I/O server is down now, so the file's size cannot be had: its name
    # in the metadata server's listing is the proof
    if ! "$RPFS_CLI" ls /t 2>>"$log" | grep -qx kill; then
        fail "server killed during a job: /t/kill is not listed on rpfs" "$log"
    elif [ -n "$(ls -A "$cwd")" ]; then
        fail "server killed during a job: local files appeared: $(ls -A "$cwd" | tr '\n' ' ')" "$log"
    elif [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
        pass "server killed during a job: every rank got an error in ${secs}s (np=4)"
        grep "^rank" "$log" | sed 's/^/    /'
    else
        fail "server killed during a job (exit $rc after ${secs}s)" "$log"
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
