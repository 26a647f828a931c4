#!/bin/sh
# run-ompi-tests.sh: rpfs through the stock Open MPI (Debian's openmpi-bin
# and libopenmpi-dev), with rpfs's fs, fbtl and sharedfp components
# (ompi/), no rebuilt MPI.
#
# Usage: test/ompi/run-ompi-tests.sh [MPICH_PREFIX]
#   MPICH_PREFIX  optional: the rebuilt MPICH (scripts/build-mpich.sh); tile
#                 I/O then also runs through it, for figures side by side
# Environment:
#   RPFS_BIN            directory holding the rpfs CLI (default: on PATH);
#                       the script starts its own server set (rpfs up -n 3)
#                       and stops it at the end
#   OMPI_COMPONENT_DIR  where the components are, if not where make install
#                       put them by default (Open MPI's component directory,
#                       or ~/.openmpi/components): searched first, through
#                       OMPI_MCA_mca_base_component_path=DIR:SYS_DEFAULT
#                       (a copy found first wins over an installed one)
#   RPFS_CACHE          where scripts/build-mpich.sh extracted MPICH's source
#                       (ROMIO's test programs come from there)
#   NPS                 process counts of ROMIO's tests (default "1 2 4")
#   TEST_TIMEOUT        seconds per run (default 180)
# Runs, all built with mpicc.openmpi and launched with mpirun.openmpi:
#   - ompi_info lists the three components;
#   - rpfs's MPI tests (test/mpi: error classes, hints, sizes, collective
#     write and reads, files left open at MPI_Finalize, reads past the end
#     after writes of nothing or failed writes compared with ufs,
#     examples/mpi_io_demo.c);
#   - Open MPI tests (test/ompi): the layout MPI_File_get_info reports
#     against `rpfs stat`, shared file pointers across processes (also with
#     rpfs's sharedfp the only one allowed), nonblocking progress,
#     delete-on-close;
#   - ROMIO's test programs (as test/mpi/run-romio-tests.sh runs them);
#   - tile I/O (examples/tile_io.c --mode all --verify, 4 processes);
#   - Debian's libhdf5-openmpi (test/mpi/mpi_hdf5.c, and mpi_hdf5_open.c: a
#     file left open at MPI_Finalize; h5pcc.openmpi -shlib).
# Each test must also show that it ran on rpfs (test/mpi/on-rpfs.sh): an
# empty scratch working directory, its kept files on rpfs, its deleted
# files' markers gone. A few fail for Open MPI's reasons; each is counted as
# an expected failure only when its output shows exactly that reason (see
# xfail_*), and as a failure otherwise.
# Each line says PASS, XFAIL or FAIL; the last line is "N passed, N failed".
set -u

MPICH_PREFIX=${1:-}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MPIDIR="$REPO/test/mpi"
CACHE=${RPFS_CACHE:-/var/cache/rpfs}
NPS=${NPS:-1 2 4}
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
MPICC=mpicc.openmpi
MPIRUN="mpirun.openmpi --oversubscribe"
# Open MPI refuses root without these; harmless otherwise
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
if [ -n "${OMPI_COMPONENT_DIR:-}" ]; then
    OMPI_MCA_mca_base_component_path="$OMPI_COMPONENT_DIR:SYS_DEFAULT"
    export OMPI_MCA_mca_base_component_path
fi

# shellcheck source=test/support/suite.sh
. "$REPO/test/support/suite.sh"
suite_find_cli
command -v $MPICC >/dev/null && command -v mpirun.openmpi >/dev/null ||
    { echo "no mpicc.openmpi/mpirun.openmpi: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
# shellcheck source=test/mpi/on-rpfs.sh
. "$MPIDIR/on-rpfs.sh"

WORK=$(mktemp -d /tmp/rpfs-ompi-tests.XXXXXX)
CLUSTER="$WORK/cluster"
BIN="$WORK/bin"
cleanup() {
    suite_cluster_down
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

XFAIL_WHERE="xfail_* in $0: Open MPI's reasons, checked"

# ---- the components ---------------------------------------------------------
listed=$(ompi_info --parsable 2>/dev/null | sed -n 's/^mca:\(fs\|fbtl\|sharedfp\):rpfs:version:"mca:.*/\1/p' | sort -u | tr '\n' ' ')
if [ "$listed" = "fbtl fs sharedfp " ]; then
    pass "ompi_info lists fs, fbtl and sharedfp rpfs${OMPI_COMPONENT_DIR:+ (from $OMPI_COMPONENT_DIR)}"
else
    fail "ompi_info lists '${listed}', not fs, fbtl and sharedfp rpfs: install rpfs (make install) after Open MPI, so configure builds them, or set OMPI_COMPONENT_DIR"
    finish
fi

# ---- build ----------------------------------------------------------------
mkdir -p "$BIN"
build() { # NAME SOURCE [flags...]
    _n=$1 _s=$2
    shift 2
    if ! $MPICC -O2 -Wall -o "$BIN/$_n" "$_s" "$@" >"$WORK/$_n.build.log" 2>&1; then
        fail "build $_n with $MPICC" "$WORK/$_n.build.log"
    fi
}
for t in mpi_errors mpi_hints mpi_sizes mpi_coll_rw mpi_finalize_open mpi_write_eof mpi_mirror; do
    build $t "$MPIDIR/$t.c"
done
build mpi_io_demo "$REPO/examples/mpi_io_demo.c"
build tile_io "$REPO/examples/tile_io.c"
for t in ompi_layout ompi_shared_fp ompi_nonblocking ompi_delete_on_close; do
    build $t "$HERE/$t.c"
done

# ---- servers ----------------------------------------------------------------
suite_cluster_up 3
echo "servers: RPFS_CONFIG=$RPFS_CONFIG"
for d in /t /o /romio /h5; do "$RPFS_CLI" mkdir $d >/dev/null 2>&1 || true; done

# launch LOG NP ARGS...: run in a fresh scratch directory (printed in $cwd);
# sets rc.
launch() {
    _log=$1 _np=$2
    shift 2
    cwd=$(scratch_dir "$(basename "$_log" .log)")
    (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" $MPIRUN -n "$_np" "$@") >>"$_log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "timeout after ${TEST_TIMEOUT}s" >>"$_log"
    return 0
}

# run NAME NP KEPT DELETED PROGRAM ARGS...: passes on exit 0, " No Errors"
# and the proof that it ran on rpfs (sets proved: 0 when shown); an
# expected failure when xfail_NAME (the test's name with _ for spaces and
# dashes) accepts the log.
run() {
    name=$1 np=$2 kept=$3 deleted=$4
    shift 4
    log="$WORK/log/$(echo "$name.$np" | tr ' /=,' '____').log"
    mkdir -p "$WORK/log"
    : >"$log"
    [ -x "$1" ] || { fail "$name (np=$np, not built)"; return; }
    # shellcheck disable=SC2086
    if ! place_markers $deleted >>"$log"; then
        fail "$name (np=$np, not run)" "$log"
        return
    fi
    launch "$log" "$np" "$@"
    proof=$(prove_on_rpfs "$cwd" "$kept" "$deleted")
    proved=$?
    if [ $rc -eq 0 ] && [ $proved -eq 0 ] && grep -q "No Errors" "$log"; then
        pass "$name (np=$np)"
    elif [ $rc -ne 124 ] && reason=$(xfail_check "$name" "$log" "$np" "$@"); then
        xfail "$name (np=$np): $reason"
    elif [ $proved -ne 0 ]; then
        printf '%s\n' "$proof" >>"$log"
        fail "$name (np=$np, exit $rc, cannot show it ran on rpfs)" "$log"
    else
        fail "$name (np=$np, exit $rc)" "$log"
    fi
}

# ---- expected failures ------------------------------------------------------
# Each prints its reason and succeeds only if the run's log shows exactly
# that reason and the run showed it was on rpfs (proved, from run); where
# the reason is Open MPI's own behaviour, the same program is also run on a
# local file through Open MPI's ufs (in $WORK/ufs, not a scratch directory)
# and must show it there too.
on_ufs() { # NAME NP PROGRAM ARGS-BEFORE-FILE -- ARGS-AFTER-FILE: prints the log's path
    _name=$1 _np=$2
    shift 2
    _d="$WORK/ufs/$_name.$_np"
    rm -rf "$_d"
    mkdir -p "$_d"
    _prog=$1
    shift
    _pre=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do _pre="$_pre $1"; shift; done
    [ $# -gt 0 ] && shift
    # (into a file: mpirun may crash on a pipe its reader closed early)
    # shellcheck disable=SC2086
    (cd "$_d" && timeout -k 5 "$TEST_TIMEOUT" $MPIRUN -n "$_np" "$_prog" $_pre "$_d/file" "$@") \
        >"$_d.log" 2>&1
    echo "$_d.log"
}

# The complaints of a test's log: its lines minus mpirun's banners.
complaints() {
    grep -v -e '^ No Errors' -e '^ Found [0-9]* errors' -e '^--' -e '^$' \
        -e 'Primary job' -e 'non-zero exit' -e 'aborted' -e '^mpirun' -e 'Process name' \
        -e 'Exit code' -e 'the job to be terminated' -e 'first process to do so' "$1"
}

# rpfs's mpi_hints checks two things Open MPI does not do: the ROMIO-only
# hint romio_filesystem_type, and that a striping_unit given to
# MPI_File_set_info after open leaves the real one reported. Open MPI 4.1's
# MPI_File_set_info deletes every key no component subscribed to from the
# file's info (opal_infosubscribe_change_info), on ufs too, so the key is
# gone from MPI_File_get_info. Everything else (the layout after create,
# on every rank, and after reopen) must pass.
xfail_mpi_hints() { # LOG NP PROGRAM FILE FACTOR
    [ "$proved" -eq 0 ] || return 1
    [ -z "$(complaints "$1" | grep -v -e 'hint romio_filesystem_type missing' \
        -e 'after set_info: hint striping_unit missing')" ] || return 1
    grep -q 'after set_info: hint striping_unit missing' "$1" || return 1
    grep -q 'after set_info: hint striping_unit missing' "$(on_ufs mpi_hints "$2" "$3" -- "$5")" ||
        return 1
    echo "Open MPI has no romio_filesystem_type hint, and its MPI_File_set_info drops striping_unit from the info (on ufs too)"
}

# ROMIO's error test expects MPI_File_set_view(disp = -1) to fail with a
# message about the displacement ("designed for ROMIO specifically"); Open
# MPI 4.1's OMPIO accepts the view, on ufs too.
xfail_romio_error() { # LOG NP PROGRAM -fname FILE
    [ "$proved" -eq 0 ] || return 1
    [ -z "$(complaints "$1" | grep -v '^File set view did not return an error')" ] || return 1
    grep -q '^File set view did not return an error' "$1" || return 1
    grep -q '^File set view did not return an error' "$(on_ufs romio_error "$2" "$3" -fname --)" ||
        return 1
    echo "Open MPI's MPI_File_set_view accepts disp=-1, on ufs too (the test is written for ROMIO)"
}

# ROMIO's file_info (run without -u) asks for striping_factor=0, which the
# hint rules ignore, and expects MPI_File_get_info to echo 0; rpfs reports
# the stripe count the file really has (the default: every I/O server), as
# with MPICH (test/mpi/run-romio-tests.sh). On one process it also asks for
# cb_nodes = nprocs/2 = 0, and Open MPI 4.1 divides by it in
# mca_common_ompio_forced_grouping (SIGFPE inside MPI_File_open, before
# rpfs sees the file; on ufs too).
xfail_romio_file_info() { # LOG NP PROGRAM -v -fname FILE
    if [ "$2" -eq 1 ]; then
        grep -q 'Integer divide-by-zero' "$1" && grep -q 'mca_common_ompio_forced_grouping' "$1" &&
            [ -z "$(ls -A "$cwd")" ] || return 1
        grep -q 'mca_common_ompio_forced_grouping' "$(on_ufs romio_file_info 1 "$3" -v -fname --)" ||
            return 1
        echo "cb_nodes=nprocs/2=0 makes Open MPI divide by zero in mca_common_ompio_forced_grouping, on ufs too"
        return 0
    fi
    [ "$proved" -eq 0 ] || return 1
    grep -q "^striping_factor is $DEFAULT_FACTOR; should be 0" "$1" || return 1
    grep "should be" "$1" | grep -vq "^striping_factor is" && return 1
    echo "get_info reports the real striping_factor ($DEFAULT_FACTOR), the test expects the ignored request 0"
}

xfail_check() { # NAME LOG NP PROGRAM ARGS...
    _n=$(echo "$1" | tr ' -' '__')
    shift
    command -v "xfail_$_n" >/dev/null 2>&1 || return 1
    "xfail_$_n" "$@"
}

# ---- rpfs's MPI tests (test/mpi), as test/mpi/run-mpi-tests.sh runs them ----
for np in 1 2 4; do
    run "error classes" $np "" "/t/err.$np.missing /t/err.$np.exists /t/err.$np.ro /t/err.$np.gone" \
        "$BIN/mpi_errors" rpfs:/t/err.$np
done
for np in 1 2 4; do
    run mpi_hints $np "" /t/hints.$np "$BIN/mpi_hints" rpfs:/t/hints.$np 2
done
for np in 1 2 4; do
    run "sizes, append, nonblocking I/O" $np "" /t/sizes.$np "$BIN/mpi_sizes" rpfs:/t/sizes.$np
done
run "collective write" 4 /t/coll4 "" "$BIN/mpi_coll_rw" write rpfs:/t/coll4
for np in 1 2 3; do
    run "independent read of a 4-process file" $np /t/coll4 "" "$BIN/mpi_coll_rw" read rpfs:/t/coll4
done
run "collective write" 3 /t/coll3 "" "$BIN/mpi_coll_rw" write rpfs:/t/coll3 50 70000
for np in 1 4; do
    run "independent read of a 3-process file" $np /t/coll3 "" "$BIN/mpi_coll_rw" read rpfs:/t/coll3 50 70000
done
# a file left open at MPI_Finalize: closed by a delete callback attached
# before the first open (HDF5's way: it runs after the fs component's own)
# or after it, or left for Open MPI to close; a second run checks the data
for np in 1 2; do
    for mode in before after unclosed; do
        f=/t/finalize.$mode.$np
        run "file left open at MPI_Finalize ($mode)" $np $f "" \
            "$BIN/mpi_finalize_open" $mode rpfs:$f
        run "  its data, read back by a second run ($mode)" $np $f "" \
            "$BIN/mpi_finalize_open" check rpfs:$f
    done
done
# the lines of mpi_write_eof's cases in a log
eof_cases() { grep -E ': write (ok|failed), read count' "$1"; }
# reads past the end after writes of nothing or failed writes: each case's
# line is the one Open MPI's ufs gives for the same program
for np in 1 2; do
    run "reads past the end after writes of nothing or failed writes" $np /t/eof.$np "" \
        "$BIN/mpi_write_eof" rpfs:/t/eof.$np
    ufs_log=$(on_ufs eof "$np" "$BIN/mpi_write_eof" --)
    eof_cases "$ufs_log" >"$ufs_log.ufs"
    eof_cases "$log" >"$ufs_log.rpfs"
    if ! grep -q "No Errors" "$ufs_log"; then
        fail "  the same on ufs (np=$np): no \" No Errors\"" "$ufs_log"
    elif diff -u "$ufs_log.ufs" "$ufs_log.rpfs" >"$ufs_log.diff"; then
        pass "  every case as on ufs (np=$np, $(wc -l <"$ufs_log.ufs") cases)"
    else
        fail "  the cases differ from ufs (np=$np; diff ufs rpfs)" "$ufs_log.diff"
    fi
done

log="$WORK/log/demo.log"
: >"$log"
launch "$log" 4 "$BIN/mpi_io_demo" rpfs:/t/demo.dat
if [ $rc -eq 0 ] && grep -q "data check ok" "$log" && prove_on_rpfs "$cwd" /t/demo.dat "" >>"$log"; then
    pass "examples/mpi_io_demo (np=4)"
    sed 's/^/    /' "$log"
else
    fail "examples/mpi_io_demo (np=4, exit $rc)" "$log"
fi

# An ec:2+1 file written by 4 ranks, its parity checked (test/support/suite.sh)
suite_ec_tests "$BIN/mpi_mirror" /t/ec

# A mirrored file written by 4 ranks, read with one of its servers killed
# (test/support/suite.sh)
suite_mirror_tests "$BIN/mpi_mirror" /t/mirror

# ---- Open MPI tests (test/ompi) ---------------------------------------------
# the layout get_info reports is the one rpfs stat shows
DEFAULT_FACTOR=""
for np in 1 2 4; do
    b=/o/layout.$np
    run "get_info reports the real layout" $np "$b.hinted $b.default $b.ignored" "" \
        "$BIN/ompi_layout" rpfs:$b
    for f in hinted default ignored; do
        want=$(sed -n "s|^layout $b.$f: striping_factor=\([0-9]*\) striping_unit=\([0-9]*\) start_iodevice=\([0-9]*\)$|stripe unit \2, stripe count \1, first server \3|p" "$log")
        got=$("$RPFS_CLI" stat "$b.$f" 2>/dev/null | sed -n 's/^layout: //p')
        if [ -n "$want" ] && [ "$want" = "$got" ]; then
            pass "  get_info of $b.$f = rpfs stat: $got"
        else
            fail "  get_info of $b.$f says '$want', rpfs stat says '$got'"
        fi
        [ $f = default ] && DEFAULT_FACTOR=$(echo "$got" | sed -n 's/.*stripe count \([0-9]*\).*/\1/p')
    done
done
for np in 1 2 4; do
    run "shared file pointer across processes" $np "/o/sfp.$np.shared /o/sfp.$np.ordered" "" \
        "$BIN/ompi_shared_fp" rpfs:/o/sfp.$np
done
# with every other sharedfp component excluded: the pointer is rpfs's
OMPI_MCA_sharedfp=rpfs
export OMPI_MCA_sharedfp
run "shared file pointer, sharedfp rpfs alone" 4 "/o/sfp-only.shared /o/sfp-only.ordered" "" \
    "$BIN/ompi_shared_fp" rpfs:/o/sfp-only
unset OMPI_MCA_sharedfp
for np in 1 2 4; do
    run "nonblocking I/O completed by MPI progress" $np /o/nb.$np "" \
        "$BIN/ompi_nonblocking" rpfs:/o/nb.$np
    grep '^16 MiB' "$log" | sed 's/^/    /'
done
for np in 1 2 4; do
    run "delete-on-close" $np "" /o/doc.$np "$BIN/ompi_delete_on_close" rpfs:/o/doc.$np
done

# ---- ROMIO's test programs, as test/mpi/run-romio-tests.sh runs them ---------
TESTSRC="$CACHE/src/mpich-4.0.2/src/mpi/romio/test"
FNAME_TESTS="simple async async-multiple atomicity coll_test creat_excl error excl
file_info i_noncontig noncontig noncontig_coll noncontig_coll2 misc shared_fp ordered_fp
split_coll psimple status perf"
F_TESTS="aggregation1" # getopt("df:h"): -f NAME
ARGV_TESTS="aggregation2 types_with_zeros hindexed darray_read"
# MPI-3.0 removed MPI_LB/MPI_UB; these build with test/ompi/mpi1-lb-ub.h
LB_UB_TESTS="i_noncontig noncontig noncontig_coll noncontig_coll2"
kept_files() { # TEST NAME NP
    case $1 in
        simple | async | async-multiple | error | psimple | status)
            r=0
            while [ $r -lt "$3" ]; do printf '%s.%s ' "$2" $r; r=$((r + 1)); done ;;
        noncontig | noncontig_coll | noncontig_coll2 | file_info | misc) ;;
        *) printf '%s' "$2" ;;
    esac
}
deleted_files() { # TEST NAME NP
    case $1 in
        noncontig | noncontig_coll | noncontig_coll2 | file_info | misc) printf '%s' "$2" ;;
    esac
}
fixed_np() {
    case $1 in
        i_noncontig | noncontig | noncontig_coll | types_with_zeros) echo 2 ;;
        hindexed | darray_read) echo 4 ;;
        *) echo "" ;;
    esac
}
min_np() {
    case $1 in
        noncontig_coll2) echo 2 ;;
        *) echo 1 ;;
    esac
}

if [ ! -f "$TESTSRC/simple.c" ]; then
    fail "ROMIO's tests not found in $TESTSRC (scripts/build-mpich.sh extracts them)"
else
    sed -e 's/@LL@/lld/g' "$TESTSRC/misc.c.in" >"$WORK/misc.c"
    for t in $FNAME_TESTS $F_TESTS $ARGV_TESTS; do
        src="$TESTSRC/$t.c"
        [ "$t" = misc ] && src="$WORK/misc.c"
        extra=""
        case " $LB_UB_TESTS " in *" $t "*) extra="-include $HERE/mpi1-lb-ub.h" ;; esac
        # shellcheck disable=SC2086
        $MPICC -O1 -w $extra -o "$BIN/romio_$t" "$src" >"$WORK/romio_$t.build.log" 2>&1 ||
            fail "build ROMIO's $t with $MPICC" "$WORK/romio_$t.build.log"
    done
    for t in $FNAME_TESTS $F_TESTS $ARGV_TESTS; do
        [ -x "$BIN/romio_$t" ] || continue
        fixed=$(fixed_np "$t")
        for np in $NPS; do
            if [ -n "$fixed" ]; then
                case " $NPS " in
                    *" $fixed "*) [ "$np" = "$fixed" ] || continue ;;
                    *) [ "$np" = "${NPS%% *}" ] || continue; np=$fixed ;;
                esac
            fi
            [ "$np" -ge "$(min_np "$t")" ] || continue
            path="/romio/$t.$np"
            case " $ARGV_TESTS " in
                *" $t "*) set -- "rpfs:$path" ;;
                *) set -- -fname "rpfs:$path" ;;
            esac
            case " $F_TESTS " in *" $t "*) set -- -f "rpfs:$path" ;; esac
            # -v: file_info names each hint it disagrees with
            [ "$t" = file_info ] && set -- -v "$@"
            if [ "$t" = perf ]; then
                # a benchmark: it prints bandwidths, not " No Errors"
                log="$WORK/log/romio_perf.$np.log"
                : >"$log"
                launch "$log" "$np" "$BIN/romio_perf" "$@"
                if [ $rc -eq 0 ] && prove_on_rpfs "$cwd" "$path" "" >>"$log"; then
                    pass "ROMIO perf (np=$np)"
                else
                    fail "ROMIO perf (np=$np, exit $rc)" "$log"
                fi
                continue
            fi
            run "romio $t" "$np" "$(kept_files "$t" "$path" "$np")" \
                "$(deleted_files "$t" "$path" "$np")" "$BIN/romio_$t" "$@"
        done
    done
fi

# ---- tile I/O ----------------------------------------------------------------
log="$WORK/log/tile_io.log"
: >"$log"
launch "$log" 4 "$BIN/tile_io" --filename rpfs:/t/tile --mode all --verify
if [ $rc -eq 0 ] && grep -q "data check ok" "$log" && prove_on_rpfs "$cwd" /t/tile "" >>"$log"; then
    pass "tile I/O, list/pieces/coll with --verify (np=4, Open MPI)"
    sed -n '/^mode/,/^coll\/list/p' "$log" | sed 's/^/    /'
else
    fail "tile I/O, list/pieces/coll with --verify (np=4, Open MPI, exit $rc)" "$log"
fi
if [ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpicc" ]; then
    # the same benchmark through rpfs's MPICH, for the figures side by side
    log="$WORK/log/tile_io.mpich.log"
    if "$MPICH_PREFIX/bin/mpicc" -O2 -o "$BIN/tile_io.mpich" "$REPO/examples/tile_io.c" >"$log" 2>&1; then
        cwd=$(scratch_dir tile_io.mpich)
        (cd "$cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPICH_PREFIX/bin/mpiexec" -n 4 \
            "$BIN/tile_io.mpich" --filename rpfs:/t/tile.mpich --mode all --verify) >>"$log" 2>&1
        rc=$?
    else
        rc=1
    fi
    if [ $rc -eq 0 ] && grep -q "data check ok" "$log" && prove_on_rpfs "$cwd" /t/tile.mpich "" >>"$log"; then
        pass "tile I/O, the same through rpfs's MPICH, for comparison (np=4)"
        sed -n '/^mode/,/^coll\/list/p' "$log" | sed 's/^/    /'
    else
        fail "tile I/O through rpfs's MPICH (np=4, exit $rc)" "$log"
    fi
fi

# ---- HDF5 --------------------------------------------------------------------
log="$WORK/log/hdf5.log"
: >"$log"
if command -v h5pcc.openmpi >/dev/null 2>&1 &&
    h5pcc.openmpi -shlib -O2 -Wall -o "$BIN/mpi_hdf5" "$MPIDIR/mpi_hdf5.c" >"$log" 2>&1; then
    hdf5=$(ldd "$BIN/mpi_hdf5" | awk '$1 ~ /^libhdf5/ { print $3; exit }')
    pkg=$( [ -n "$hdf5" ] && dpkg -S "$(readlink -f "$hdf5")" 2>/dev/null | cut -d: -f1)
    pass "build mpi_hdf5 with h5pcc.openmpi -shlib (HDF5: ${pkg:-?} $hdf5)"
    launch "$log" 4 "$BIN/mpi_hdf5" rpfs:/h5/test.h5
    sig=$("$RPFS_CLI" cat /h5/test.h5 2>/dev/null | head -c 8 | od -An -tx1 | tr -d ' \n')
    if [ $rc -eq 0 ] && grep -q "No Errors" "$log" && [ "$sig" = 894844460d0a1a0a ] &&
        prove_on_rpfs "$cwd" /h5/test.h5 "" >>"$log"; then
        pass "HDF5 (libhdf5-openmpi) collective write, reopen, read back on rpfs:/h5/test.h5 (np=4; the file starts with the HDF5 signature)"
    else
        fail "HDF5 on rpfs:/h5/test.h5 (np=4, exit $rc, signature '$sig')" "$log"
    fi
else
    fail "build mpi_hdf5 with h5pcc.openmpi -shlib (apt-get install libhdf5-openmpi-dev)" "$log"
fi
# an HDF5 file left open at MPI_Finalize: HDF5 closes it from its own
# delete callback, after the fs component's; a second run checks it
log="$WORK/log/hdf5_open.log"
: >"$log"
if command -v h5pcc.openmpi >/dev/null 2>&1 &&
    h5pcc.openmpi -shlib -O2 -Wall -o "$BIN/mpi_hdf5_open" "$MPIDIR/mpi_hdf5_open.c" >"$log" 2>&1; then
    run "HDF5 file left open at MPI_Finalize" 4 /h5/open.h5 "" \
        "$BIN/mpi_hdf5_open" write rpfs:/h5/open.h5
    run "  the HDF5 file, read back by a second run" 4 /h5/open.h5 "" \
        "$BIN/mpi_hdf5_open" check rpfs:/h5/open.h5
else
    fail "build mpi_hdf5_open with h5pcc.openmpi -shlib" "$log"
fi

finish
