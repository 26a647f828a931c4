#!/bin/sh
# run-hdf5-test.sh: Debian's unmodified parallel HDF5 on rpfs, through the
# rebuilt MPICH's ABI.
#
# Debian's HDF5 for MPICH (libhdf5-mpich-dev) is linked against Debian's
# libmpich.so.12 (ch4:ucx, no rpfs driver). The rebuilt MPICH
# (scripts/build-mpich.sh) keeps that ABI, so a program built with Debian's
# h5pcc.mpich runs on it when the rebuilt lib/ comes first on
# LD_LIBRARY_PATH and the rebuilt mpiexec launches it; HDF5's MPI-IO driver
# then opens "rpfs:" names through the rpfs ROMIO driver. This script:
#   1. installs libhdf5-mpich-dev if missing (apt-get; pulls Debian's mpich)
#   2. builds test/mpi/mpi_hdf5.c with h5pcc.mpich -shlib (or mpicc.mpich
#      and pkg-config hdf5-mpich), against Debian's shared libhdf5
#   3. checks that the binary resolves libmpich.so.12 to the rebuilt MPICH
#      and uses Debian's libhdf5 shared library
#   4. starts its own server set (rpfs up -n 4), runs mpi_hdf5 with the
#      rebuilt mpiexec -n 4 on rpfs:/h5/test.h5 (collective write, reopen,
#      read back, check: " No Errors")
#   5. checks with the rpfs CLI that the file is on rpfs: rpfs stat shows a
#      size > 0, its first bytes are the HDF5 signature, and nothing named
#      rpfs:... appeared in the local working directory
#   6. runs mpi_hdf5_open.c (built the same way): it writes a dataset and
#      leaves every HDF5 object and the file open at MPI_Finalize, so HDF5
#      closes the file from its delete callback on MPI_COMM_SELF, after the
#      driver's own; a second run reopens it and checks the data
# Debian's mpiexec/mpicc may be on PATH after step 1: the rebuilt mpiexec is
# always called by its full path.
#
# Usage: test/mpi/run-hdf5-test.sh MPICH_PREFIX
#   MPICH_PREFIX  the prefix printed by scripts/build-mpich.sh
# Environment:
#   RPFS_BIN      directory holding the rpfs CLI (default: on PATH); its
#                 ../lib (librpfs) goes on LD_LIBRARY_PATH too
#   NP            processes (default 4)
#   TEST_TIMEOUT  seconds for the run (default 120)
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

MPICH_PREFIX=${1:-${MPICH_PREFIX:-}}
[ -n "$MPICH_PREFIX" ] && [ -x "$MPICH_PREFIX/bin/mpiexec" ] ||
    { echo "usage: $0 MPICH_PREFIX (from scripts/build-mpich.sh)" >&2; exit 2; }
MPICH_PREFIX=$(cd "$MPICH_PREFIX" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
MPIEXEC="$MPICH_PREFIX/bin/mpiexec"
NP=${NP:-4}
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
# shellcheck source=test/support/suite.sh
. "$HERE/../support/suite.sh"
suite_find_cli
RPFS_LIB=$(cd "$(dirname "$RPFS_CLI")/../lib" 2>/dev/null && pwd || true)
[ -e "$MPICH_PREFIX/lib/libmpich.so.12" ] ||
    { echo "no $MPICH_PREFIX/lib/libmpich.so.12: not a rebuilt MPICH prefix" >&2; exit 2; }

WORK=$(mktemp -d /tmp/rpfs-hdf5-test.XXXXXX)
CLUSTER="$WORK/cluster"
cleanup() {
    suite_cluster_down
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM


run_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "need root or sudo to run: $*" >&2; return 1; fi
}

# ---- 1. Debian's parallel HDF5 for MPICH ---------------------------------
if dpkg-query -W -f='${Status}' libhdf5-mpich-dev 2>/dev/null | grep -q "ok installed"; then
    pass "libhdf5-mpich-dev installed ($(dpkg-query -W -f='${Version}' libhdf5-mpich-dev))"
else
    log="$WORK/apt.log"
    if run_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libhdf5-mpich-dev \
        >"$log" 2>&1 ||
        { run_root apt-get update -q >>"$log" 2>&1 &&
          run_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
              libhdf5-mpich-dev >>"$log" 2>&1; }; then
        pass "install libhdf5-mpich-dev ($(dpkg-query -W -f='${Version}' libhdf5-mpich-dev))"
    else
        fail "install libhdf5-mpich-dev" "$log"
        finish
    fi
fi

# ---- 2. build with Debian's tools ------------------------------------------
BIN="$WORK/mpi_hdf5"
OPEN_BIN="$WORK/mpi_hdf5_open"
log="$WORK/build.log"
# build NAME: $WORK/NAME from $HERE/NAME.c
if command -v h5pcc.mpich >/dev/null 2>&1; then
    # -shlib: Debian's shared libhdf5 (itself linked to libmpich.so.12),
    # not the static archive h5pcc picks by default
    how="h5pcc.mpich -shlib"
    build() { h5pcc.mpich -shlib -O2 -Wall -o "$WORK/$1" "$HERE/$1.c"; }
elif command -v mpicc.mpich >/dev/null 2>&1 && pkg-config --exists hdf5-mpich 2>/dev/null; then
    how="mpicc.mpich + pkg-config hdf5-mpich"
    # shellcheck disable=SC2046
    build() {
        mpicc.mpich -O2 -Wall -o "$WORK/$1" "$HERE/$1.c" $(pkg-config --cflags --libs hdf5-mpich)
    }
else
    how="mpicc.mpich + /usr/{include,lib/x86_64-linux-gnu}/hdf5/mpich"
    build() {
        mpicc.mpich -O2 -Wall -I/usr/include/hdf5/mpich -o "$WORK/$1" "$HERE/$1.c" \
            -L/usr/lib/x86_64-linux-gnu/hdf5/mpich -lhdf5
    }
fi
for t in mpi_hdf5 mpi_hdf5_open; do
    if build $t >"$log" 2>&1 && [ -x "$WORK/$t" ]; then
        pass "build $t with $how"
    else
        fail "build $t with $how" "$log"
        finish
    fi
done

# ---- 3. the ABI switch -----------------------------------------------------
LD_LIBRARY_PATH="$MPICH_PREFIX/lib${RPFS_LIB:+:$RPFS_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
resolved=$(ldd "$BIN" 2>/dev/null | awk '$1 == "libmpich.so.12" { print $3 }')
real=$(readlink -f "$resolved" 2>/dev/null)
hdf5=$(ldd "$BIN" 2>/dev/null | awk '$1 ~ /^libhdf5/ { print $3; exit }')
case "$real" in
"$MPICH_PREFIX"/lib/*)
    pass "libmpich.so.12 resolves to the rebuilt MPICH ($resolved -> $real)" ;;
*)
    fail "libmpich.so.12 resolves to '$resolved', not $MPICH_PREFIX/lib" ;;
esac
pkg=$( [ -n "$hdf5" ] && dpkg -S "$(readlink -f "$hdf5")" 2>/dev/null | cut -d: -f1)
if [ -n "$pkg" ]; then
    pass "HDF5 is Debian's shared library ($hdf5, package $pkg)"
else
    fail "the binary does not use a Debian libhdf5 shared library ('$hdf5')"
fi

# ---- 4. the run on rpfs ----------------------------------------------------
suite_cluster_up 4
export RPFS_CONFIG
echo "servers: RPFS_CONFIG=$RPFS_CONFIG"
"$RPFS_CLI" mkdir /h5 >/dev/null 2>&1 || true

mkdir -p "$WORK/cwd"
log="$WORK/run.log"
(cd "$WORK/cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n "$NP" "$BIN" rpfs:/h5/test.h5) \
    >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
    pass "HDF5 collective write, reopen, read back on rpfs:/h5/test.h5 (np=$NP)"
    sed 's/^/    /' "$log"
else
    [ $rc -eq 124 ] && echo "timeout after ${TEST_TIMEOUT}s" >>"$log"
    fail "HDF5 collective write, reopen, read back on rpfs:/h5/test.h5 (np=$NP, exit $rc)" "$log"
fi

# ---- 5. the file is on rpfs ------------------------------------------------
log="$WORK/stat.log"
"$RPFS_CLI" stat /h5/test.h5 >"$log" 2>&1
size=$(awk '$1 == "size:" { print $2 }' "$log")
if [ -n "$size" ] && [ "$size" -gt 0 ] 2>/dev/null; then
    pass "rpfs stat /h5/test.h5: size $size, $(grep '^layout:' "$log" | sed 's/^layout: //')"
else
    fail "rpfs stat /h5/test.h5 shows no size > 0" "$log"
fi
sig=$("$RPFS_CLI" cat /h5/test.h5 2>/dev/null | head -c 8 | od -An -tx1 | tr -d ' \n')
if [ "$sig" = "894844460d0a1a0a" ]; then
    pass "rpfs cat /h5/test.h5 starts with the HDF5 signature"
else
    fail "rpfs cat /h5/test.h5 starts with '$sig', not the HDF5 signature"
fi
if [ -z "$(ls -A "$WORK/cwd")" ]; then
    pass "no local file was created instead (working directory empty)"
else
    fail "local files appeared: $(ls -A "$WORK/cwd" | tr '\n' ' ')"
fi

# ---- 6. a file left open at MPI_Finalize -----------------------------------
for mode in write check; do
    log="$WORK/open-$mode.log"
    (cd "$WORK/cwd" && timeout -k 5 "$TEST_TIMEOUT" "$MPIEXEC" -n "$NP" "$OPEN_BIN" $mode \
        rpfs:/h5/open.h5) >"$log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "timeout after ${TEST_TIMEOUT}s" >>"$log"
    case $mode in
        write) what="HDF5 file and dataset left open at MPI_Finalize: HDF5 closes them" ;;
        check) what="  a second run reads back every rank's rows and the attribute" ;;
    esac
    if [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
        pass "$what (rpfs:/h5/open.h5, np=$NP)"
    else
        fail "$what (rpfs:/h5/open.h5, np=$NP, exit $rc)" "$log"
    fi
done
if [ -z "$(ls -A "$WORK/cwd")" ]; then
    pass "no local file was created instead (working directory empty)"
else
    fail "local files appeared: $(ls -A "$WORK/cwd" | tr '\n' ' ')"
fi

finish
