# shellcheck shell=sh
# test/support/suite.sh: what the suite runners (test/*/run-*.sh) share.
# Sourced, never run. A runner prints one line per check, PASS / FAIL /
# XFAIL NAME, and ends with "N passed, N failed": ./quickstart test adds
# those last lines up (a runner that dies before it prints one counts as a
# failure there). A runner that cannot run here says "skipped: WHY" and
# "0 passed, 0 failed" (suite_skip), so a skip is never counted as a pass.
#
# What the runner sets before it calls these:
#   WORK              its scratch directory (check's log goes there)
#   CLUSTER           where suite_cluster_up starts its server set
#   RPFS_CLI          the rpfs command (suite_find_cli sets it)
#   SUITE_LOG_LINES   lines of a failing check's log to show (default 20)
#   XFAIL_WHERE       where the expected failures are explained

passed=0
failed=0
xfailed=0

# pass NAME
pass() {
	passed=$((passed + 1))
	printf 'PASS  %s\n' "$1"
}

# fail NAME [LOG]: and the end of LOG, where the cause usually is
fail() {
	failed=$((failed + 1))
	printf 'FAIL  %s\n' "$1"
	[ -n "${2:-}" ] && [ -f "$2" ] &&
		grep -v '^ No Errors' "$2" | tail -n "${SUITE_LOG_LINES:-20}" | sed 's/^/    /'
	return 0
}

# xfail NAME: a failure the runner knows and has checked is the known one
xfail() {
	xfailed=$((xfailed + 1))
	printf 'XFAIL %s\n' "$1"
}

# check NAME COMMAND...: PASS when COMMAND succeeds, else FAIL with its output
check() {
	suite_check_name=$1
	shift
	if "$@" >"$WORK/check.log" 2>&1; then
		pass "$suite_check_name"
	else
		fail "$suite_check_name" "$WORK/check.log"
	fi
}

# suite_summary: the last lines; true when nothing failed
suite_summary() {
	[ "$xfailed" -gt 0 ] && echo "$xfailed expected failures${XFAIL_WHERE:+ (see $XFAIL_WHERE)}"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# finish: the summary, and exit with its status
finish() {
	suite_summary
	exit
}

# suite_skip WHY: this machine cannot run the suite (no root, no /dev/fuse...)
suite_skip() {
	echo "skipped: $1"
	echo "0 passed, 0 failed"
	exit 0
}

# suite_find_cli: RPFS_CLI from RPFS_BIN (a directory) or the PATH; exit 2
# (a usage error, not a test result) without one
suite_find_cli() {
	RPFS_CLI=${RPFS_BIN:+$RPFS_BIN/rpfs}
	[ -n "$RPFS_CLI" ] || RPFS_CLI=$(command -v rpfs 2>/dev/null || true)
	if [ -z "$RPFS_CLI" ] || [ ! -x "$RPFS_CLI" ]; then
		echo "rpfs CLI not found (set RPFS_BIN to the directory holding it)" >&2
		exit 2
	fi
}

# suite_cluster_up N: N local servers in $CLUSTER on RPFS_TEST_ADDR (the
# verbs VM's address) or loopback; exports their RPFS_CONFIG
suite_cluster_up() {
	suite_up_out=$("$RPFS_CLI" up -n "$1" --dir "$CLUSTER" --address "${RPFS_TEST_ADDR:-127.0.0.1}" 2>&1) || {
		echo "rpfs up failed: $suite_up_out" >&2
		exit 2
	}
	eval "$(printf '%s\n' "$suite_up_out" | grep '^export RPFS_CONFIG=')"
	export RPFS_CONFIG
}

# suite_cluster_down: stop what suite_cluster_up started (for cleanup traps)
suite_cluster_down() {
	"$RPFS_CLI" down --dir "$CLUSTER" >/dev/null 2>&1 || true
}

# suite_kill_copy_server PATH: kill -9 an I/O-only server (not server.0,
# which holds the metadata) among PATH's slots (rpfs stat, copies
# included); prints its number, or nothing when there is none.
suite_kill_copy_server() {
	for _s in $("$RPFS_CLI" stat "$1" 2>/dev/null |
		sed -n 's/^  \(copy [0-9]* of \)\{0,1\}slot [0-9]*: io server \([0-9]*\) .*/\2/p'); do
		[ "$_s" != 0 ] || continue
		kill -9 "$(cat "$CLUSTER/rpfsd.$_s.pid")" 2>/dev/null && echo "$_s"
		return
	done
}

# suite_restart_server N: start the cluster's stopped servers again (rpfs
# up) and wait until the metadata server sees server.N online (rpfs df),
# at most 30 s. 0 when it is.
suite_restart_server() {
	"$RPFS_CLI" up --dir "$CLUSTER" >/dev/null 2>&1 || return 1
	_end=$(($(date +%s) + 30))
	while [ "$(date +%s)" -lt "$_end" ]; do
		"$RPFS_CLI" df 2>/dev/null | grep -q "^server\.$1 .* online" && return 0
		sleep 0.2
	done
	return 1
}

# suite_mirror_tests PROGRAM PATH: test/mpi/mpi_mirror through the caller's
# run (NAME NP KEPT DELETED PROGRAM ARGS...): a mirrored file (hint
# rpfs_redundancy=mirror:2) that 4 ranks write in 4 MiB blocks, 47008-byte
# records collectively and again with nonblocking calls, reading every
# byte back; a second job reads it with one of its I/O servers killed (the
# other copy serves); the server is started again.
suite_mirror_tests() {
	run "mirrored file: 4 MiB blocks, 47008-byte records (collective, nonblocking)" 4 "$2" "" \
		"$1" write "rpfs:$2"
	_victim=$(suite_kill_copy_server "$2")
	if [ -z "$_victim" ]; then
		fail "  no I/O-only server among $2's to kill"
		return
	fi
	run "  read back with its io server $_victim killed" 4 "$2" "" "$1" read "rpfs:$2"
	if suite_restart_server "$_victim"; then
		pass "  io server $_victim started again and online"
	else
		fail "  io server $_victim started again and online (rpfs df: $("$RPFS_CLI" df 2>&1 | tr '\n' ' '))"
	fi
}
