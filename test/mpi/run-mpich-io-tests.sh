#!/bin/sh
# run-mpich-io-tests.sh: MPICH's own MPI-IO tests (test/mpi/io of the same
# Debian MPICH 4.0.2 source that scripts/build-mpich.sh builds) on rpfs.
#
# Usage: test/mpi/run-mpich-io-tests.sh MPICH_PREFIX
#   MPICH_PREFIX  the prefix printed by scripts/build-mpich.sh
# Environment:
#   RPFS_BIN      directory holding the rpfs CLI (default: on PATH); the
#                 script starts its own server set (rpfs up -n 3) in a
#                 temporary directory and stops it at the end
#   MPICH_SRC     the MPICH source tree (default: the one build-mpich.sh
#                 extracted, $RPFS_CACHE/src/mpich-4.0.2)
#   TEST_TIMEOUT  seconds per run (default 180)
#   BIN_DIR       where the tests are built (default: a temporary
#                 directory); NO_BUILD=1 runs the ones already there
#
# Build: each test with the rebuilt mpicc and MPICH's test harness
# (test/mpi/util/mtest.c, mtest_common.c, mtest_single.c and the headers of
# test/mpi/include). The one generated header, mpitestconf.h, is written
# here for Linux instead of running the test suite's whole configure.
#
# Run: every test of io/testlist.in with its process count and arguments.
# Most tests open fixed relative names ("testfile", "test.ord"), so all run
# the same way: with ROMIO_FSTYPE_FORCE=rpfs: and RPFS_CWD=/mio/TEST.NP, a
# fresh rpfs directory, so each relative name lands there; the working
# directory is an empty scratch directory outside the clone that must stay
# empty (a file that went to the local file system instead shows there).
# A test passes on exit 0 and " No Errors", and when it shows that it ran
# on rpfs: its processes run with RPFS_LOG=info, so librpfs logs one
# "info: transport:" line when the driver makes its client at the first
# open, and the scratch directory is still empty. The files a test leaves
# on rpfs are listed after its PASS line.
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

MPICH_PREFIX=${1:-${MPICH_PREFIX:-}}
[ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpicc" ] ||
    { echo "usage: $0 MPICH_PREFIX (from scripts/build-mpich.sh)" >&2; exit 2; }
MPICC="$MPICH_PREFIX/bin/mpicc"
MPIEXEC="$MPICH_PREFIX/bin/mpiexec"
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
MPICH_SRC=${MPICH_SRC:-${RPFS_CACHE:-/var/cache/rpfs}/src/mpich-4.0.2}
TESTS_SRC="$MPICH_SRC/test/mpi"
# shellcheck source=test/support/suite.sh
. "$(dirname "$0")/../support/suite.sh"
suite_find_cli
[ -f "$TESTS_SRC/io/testlist.in" ] ||
    { echo "no $TESTS_SRC/io/testlist.in (set MPICH_SRC; scripts/build-mpich.sh extracts it)" >&2; exit 2; }

# Tests that cannot apply to rpfs, one a line: "name|what its output must
# show|why". They still run, and count as expected failures (XFAIL, in
# neither total) only when they fail as explained: the pattern, an extended
# regular expression, is in their output and they ran on rpfs. Any other
# outcome, passing included, is a FAIL.
EXPECTED_FAIL="simple_collective|^ Found 1 errors\$|it removes its file with POSIX unlink() between two MPI_MODE_EXCL opens of it; unlink() of a name that only ROMIO_FSTYPE_FORCE sends to rpfs removes nothing (only a kernel mount could serve both), so its second open finds the file and fails"

WORK=$(mktemp -d /tmp/rpfs-mpich-io.XXXXXX)
CLUSTER="$WORK/cluster"
cleanup() {
    suite_cluster_down
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

XFAIL_WHERE="EXPECTED_FAIL in $0"
expected() { # NAME FIELD: field 2 (pattern) or 3 (why) of NAME's line
    printf '%s\n' "$EXPECTED_FAIL" | awk -F'|' -v n="$1" -v f="$2" '$1 == n { print $f }'
}

BIN="${BIN_DIR:-$WORK/bin}"
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd) # the tests run in scratch directories
TESTS=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TESTS_SRC/io/testlist.in" | awk '{print $1}')

build() {
    cat >"$BIN/mpitestconf.h" <<'EOF'
/* mpitestconf.h for MPICH 4.0.2's test harness on Linux (glibc), in place
 * of the one the test suite's configure generates (run-mpich-io-tests.sh). */
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_UNISTD_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_USLEEP 1
#define HAVE_STRDUP 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_MPI_IO 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_SPAWN 1
#define HAVE_PTHREAD_H 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define POINTERINT_t int
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_SHORT 2
#define SIZEOF_VOID_P 8
#define SIZEOF_MPI_OFFSET 8
EOF
    cflags="-O2 -I$BIN -I$TESTS_SRC/include"
    for u in mtest mtest_common mtest_single; do
        # shellcheck disable=SC2086
        "$MPICC" $cflags -c -o "$BIN/$u.o" "$TESTS_SRC/util/$u.c" >"$WORK/$u.build.log" 2>&1 ||
            { fail "build $u.c (MPICH's test harness)" "$WORK/$u.build.log"; return 1; }
    done
    for t in $TESTS; do
        # shellcheck disable=SC2086
        "$MPICC" $cflags -o "$BIN/$t" "$TESTS_SRC/io/$t.c" "$BIN/mtest.o" \
            "$BIN/mtest_common.o" "$BIN/mtest_single.o" >"$WORK/$t.build.log" 2>&1 ||
            fail "build $t" "$WORK/$t.build.log"
    done
}

# rpfs_mkdir PATH: make PATH and its missing parents on rpfs.
rpfs_mkdir() {
    _p=""
    for _c in $(printf '%s' "$1" | tr '/' ' '); do
        _p="$_p/$_c"
        "$RPFS_CLI" stat "$_p" >/dev/null 2>&1 || "$RPFS_CLI" mkdir "$_p" >/dev/null 2>&1
    done
    "$RPFS_CLI" stat "$1" >/dev/null 2>&1
}

# run_test NAME NP ARGS...: one line of testlist.in.
run_test() {
    name=$1 np=$2
    shift 2
    dir="/mio/$name.$np"
    log="$WORK/$name.$np.log"
    cwd="$WORK/cwd/$name.$np"
    rm -rf "$cwd"
    mkdir -p "$cwd"
    if ! rpfs_mkdir "$dir"; then
        fail "$name (np=$np): cannot make $dir on rpfs"
        return
    fi
    prog="$BIN/$name"
    if [ "$name" = zero_count ]; then
        # it opens its own argv[0]: put the program on rpfs and run it by a
        # relative name, so argv[0] names that copy
        "$RPFS_CLI" cp "$BIN/$name" "rpfs:$dir/$name" </dev/null >/dev/null 2>&1
        prog=$name
    fi
    (cd "$cwd" && PATH="$BIN:$PATH" timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n "$np" \
        -genv ROMIO_FSTYPE_FORCE rpfs: -genv RPFS_CWD "$dir" -genv RPFS_LOG info \
        "$prog" "$@") \
        </dev/null >"$log" 2>&1 # (stdin: the loop's test list)
    rc=$?
    [ $rc -eq 124 ] && echo "timeout after ${TEST_TIMEOUT}s" >>"$log"
    what="$name (np=$np)"
    why=$(expected "$name" 3)
    on_rpfs=1
    if [ -n "$(ls -A "$cwd")" ]; then
        echo "local files appeared in the working directory: $(ls -A "$cwd" | tr '\n' ' ')" >>"$log"
        on_rpfs=0
    elif ! grep -q "info: transport:" "$log"; then
        echo "librpfs never started: the test did not open anything on rpfs" >>"$log"
        on_rpfs=0
    fi
    ok=0
    [ $on_rpfs = 1 ] && [ $rc -eq 0 ] && grep -q "No Errors" "$log" && ok=1
    if [ -n "$why" ]; then
        if [ $ok = 1 ]; then
            fail "$what passes although listed as an expected failure: take it off the list"
        elif [ $on_rpfs = 1 ] && [ $rc -ne 124 ] && grep -Eq "$(expected "$name" 2)" "$log"; then
            xfailed=$((xfailed + 1))
            printf 'XFAIL %s: %s\n' "$what" "$why"
        else
            fail "$what, exit $rc: not the expected failure ($why)" "$log"
        fi
    elif [ $ok = 1 ]; then
        pass "$what"
        left=$("$RPFS_CLI" ls "$dir" 2>/dev/null | tr '\n' ' ')
        echo "      on rpfs in $dir: ${left:-(nothing left: the test removed its files)}"
    else
        fail "$what, exit $rc" "$log"
    fi
}

if [ "${NO_BUILD:-0}" = 1 ]; then
    echo "using the tests in $BIN"
else
    echo "building MPICH's io tests with $MPICC"
    build
fi

suite_cluster_up 3
echo "servers: RPFS_CONFIG=$RPFS_CONFIG"

if [ -n "$EXPECTED_FAIL" ]; then
    echo "expected exceptions (they must fail as explained):"
    printf '%s\n' "$EXPECTED_FAIL" | awk -F'|' '{ print "    " $1 ": " $3 }'
fi

# testlist.in: NAME NP [key=value ...]; arg= adds an argument, the rest
# (mem=, timeLimit=, ...) are resource notes for MPICH's runtests
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TESTS_SRC/io/testlist.in" |
    while read -r name np rest; do
        [ -x "$BIN/$name" ] || { fail "$name (np=$np): not built"; continue; }
        set --
        for kv in $rest; do
            case $kv in
            arg=*) set -- "$@" "${kv#arg=}" ;;
            esac
        done
        run_test "$name" "$np" "$@"
        echo "$passed $failed $xfailed" >"$WORK/counts"
    done
read -r passed failed xfailed <"$WORK/counts" 2>/dev/null || { passed=0 failed=1 xfailed=0; }

suite_summary
