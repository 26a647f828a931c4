#!/bin/bash
# run-verbs-suites.sh: the project's suites on libfabric's verbs provider,
# inside the Soft-RoCE VM (scripts/rxe-vm run), which exports
# RPFS_PROVIDER=verbs and the guest's rxe address in RPFS_TEST_ADDR.
#
# Usage (from the top of the clone, after ./quickstart has built everything
# and run the tcp suites, which also builds the MPI test programs):
#   scripts/rxe-vm run -- test/verbs/run-verbs-suites.sh OUT MPICH_PREFIX
#     OUT           results directory (Check logs *.log, MPI suites *.out,
#                   each ending "N passed, N failed")
#     MPICH_PREFIX  the prefix printed by scripts/build-mpich.sh
# Environment: RPFS_BIN (the installed rpfs bin/, for the MPI suites).
#
# What runs, and why each: the transport tests (every path forced and auto,
# sizes across every threshold, credits exhausted, many connections,
# timeouts, killed servers, the authenticated handshake: verbs' rules are
# the transport's), the file-service integration, CLI and trust tests (the
# file service, and refusals carried in rdmacm's reject data, over verbs),
# rpfs's MPI tests with tile I/O verifying every read, and ROMIO's suite.
# Under emulation the guest's CPU is slow, so the MPI tests run at one
# process count (NPS=2) and ROMIO's at one (np 2, its fixed-count tests at
# theirs), and tile I/O once: the data paths are the same at every count,
# and the tcp run covers the counts. The HDF5 and Open MPI suites stay on
# tcp: they test MPI library interplay, not the transport.
set -u
OUT=${1:?usage: $0 OUT MPICH_PREFIX}
MPICH=${2:?usage: $0 OUT MPICH_PREFIX}
[ "${RPFS_PROVIDER:-}" = verbs ] || { echo "run me inside scripts/rxe-vm (RPFS_PROVIDER=verbs)" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B="$top/build"

suite() { # NAME COMMAND...: run, keep the output, show the last lines
	local name=$1 start rc
	shift
	start=$(date +%s)
	"$@" >"$OUT/$name" 2>&1
	rc=$?
	printf '%-28s exit %d after %ds: %s\n' "$name" $rc $(($(date +%s) - start)) \
		"$(grep -E 'Checks:|passed, .* failed' "$OUT/$name" | tail -1)"
	# A failure must be readable from the CI log alone: the suite's FAIL
	# lines with the details indented under them (MPI suites), or Check's
	# failed and erroring tests, at most 60 lines.
	[ $rc = 0 ] || awk '
		/^FAIL/ || /:[FE]:/ { show = 1; print "    " $0; next }
		show && /^[ \t]/ { print "    " $0; next }
		{ show = 0 }' "$OUT/$name" | head -60
	return $rc
}

export CK_DEFAULT_TIMEOUT=300
# Cases with their own timeout (the concurrency ones: 120 s) get twice it:
# the guest's CPU is emulated, and a loaded host slows it further (one such
# case ran out at 120 s while the host built and tested beside the VM).
export CK_TIMEOUT_MULTIPLIER=2
cd "$B" || exit 2
suite test_xport.log ./test/xport/test_xport
# test_fileservice's namespace case and test_access (who may do what) are
# decided in the servers' operation layer above the transport; trust.sh
# runs the handshake that gives a connection its identity on verbs. They
# run on tcp; under emulation they cost 8 of the stage's 45 minutes.
suite test_fileservice.log env CK_EXCLUDE_TAGS=above-transport ./test/integration/test_fileservice
# the integrity cases that bind records and blocks to their place (the
# others are storage-only and run on tcp)
suite test_integrity-records.log env CK_RUN_CASE=records ./test/integration/test_integrity
suite test_integrity-placement.log env CK_RUN_CASE=placement ./test/integration/test_integrity
# The CLI on verbs: cli-posix.sh (the namespace commands with their
# options and several operands, cp, truncate, up, down, ping); cli.sh,
# which adds df, stats, settings and help, runs on tcp (time: see above).
suite cli-posix-test.out sh -c 'RPFS=./rpfs sh ../test/integration/cli-posix.sh; r=$?; if [ $r = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi; exit $r'
suite trust-test.out env RPFS=./rpfs RPFSD=./rpfsd sh ../test/integration/trust.sh
# I/O servers killed, stopped and back: states, placement, the mount.
suite io-states-test.out sh -c 'RPFS=./rpfs RPFS_TEST_SCALE=4 sh ../test/integration/io-states.sh; r=$?; if [ $r = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi; exit $r'
# Mirrored files: writes forwarded to the copies over verbs, reads with a
# copy's server killed, stopped, damaged.
suite mirror-test.out sh -c 'RPFS=./rpfs RPFS_TEST_SCALE=4 sh ../test/integration/mirror.sh; r=$?; if [ $r = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi; exit $r'
# Erasure-coded files through the CLI: a parity member killed and
# re-encoded, verify --repair, a damaged data block decoded around.
suite ec-test.out sh -c 'RPFS=./rpfs RPFS_TEST_SCALE=4 sh ../test/integration/ec.sh; r=$?; if [ $r = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi; exit $r'
# Erasure-coded writes: parity deltas forwarded between servers over
# verbs, under four concurrent writers (raw requests; seconds).
suite test_ec_write.log ./test/integration/test_ec_write
# ... and through librpfs: the client naming the parity members, truncates
suite test_ec_client.log ./test/integration/test_ec_client
suite restart-test.out sh -c 'RPFS=./rpfs RPFSD=./rpfsd sh ../test/integration/restart.sh; r=$?; if [ $r = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi; exit $r'
cd "$top" || exit 2
export LD_LIBRARY_PATH="${RPFS_BIN:+$RPFS_BIN/../lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
suite mpi-tests.out env NO_BUILD=1 BIN_DIR="$B/mpi-bin" NPS=2 TILE_ARGS="--iters 1" \
	OVERLAP_MIB=32 OVERLAP_MIB2=16 \
	test/mpi/run-mpi-tests.sh "$MPICH"
suite romio-tests.out env NO_BUILD=1 BIN_DIR="$B/romio-bin" NPS=2 \
	test/mpi/run-romio-tests.sh "$MPICH"
dmesg | grep -E 'segfault|uverbs_write' && echo "kernel: a process crashed or misused verbs (above)"
exit 0
