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
# verbs VM's address) or loopback; exports their RPFS_CONFIG. They allow
# ec:K+P files (ec_preview, a preview) for suite_ec_tests.
suite_cluster_up() {
	suite_up_out=$(RPFS_EC_PREVIEW=1 "$RPFS_CLI" up -n "$1" --dir "$CLUSTER" \
		--address "${RPFS_TEST_ADDR:-127.0.0.1}" 2>&1) || {
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

# suite_restart_server N: start the cluster's stopped servers again (rpfs
# up) and wait until the metadata server sees server.N online (rpfs df),
# at most 30 s. 0 when it is.
suite_restart_server() {
	RPFS_EC_PREVIEW=1 "$RPFS_CLI" up --dir "$CLUSTER" >/dev/null 2>&1 || return 1
	_end=$(($(date +%s) + 30))
	while [ "$(date +%s)" -lt "$_end" ]; do
		"$RPFS_CLI" df 2>/dev/null | grep -q "^server\.$1 .* online" && return 0
		sleep 0.2
	done
	return 1
}

# suite_copy_pair PATH: the two I/O servers holding the copies of one of
# PATH's data slots (a mirror:2 file), neither of them server.0 (the
# metadata server): "A B", or nothing.
suite_copy_pair() {
	"$RPFS_CLI" stat "$1" 2>/dev/null |
		sed -n 's/^  \(copy [0-9]* of \)\{0,1\}slot [0-9]*: io server \([0-9]*\) .*/\2/p' |
		awk '{ s[NR - 1] = $1 } END {
			h = NR / 2
			for (i = 0; i < h; i++)
				if (s[i] != 0 && s[i + h] != 0) { print s[i], s[i + h]; exit }
		}'
}

# suite_wait_verify PATH SECONDS: rpfs verify PATH passes within SECONDS
# (the stale copies resynced).
suite_wait_verify() {
	_end=$(($(date +%s) + $2))
	while [ "$(date +%s)" -lt "$_end" ]; do
		"$RPFS_CLI" verify "$1" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

# suite_ec_tests PROGRAM PATH: test/mpi/mpi_mirror through the caller's
# run (NAME NP KEPT DELETED PROGRAM ARGS...) with the hint
# rpfs_redundancy=ec:2+1 (the servers' ec_preview: suite_cluster_up): 4
# ranks write 4 MiB blocks, then 47008-byte records collectively (two-phase
# buffers: disjoint pieces of the same stripes from several ranks at once)
# and again with nonblocking calls, reading every byte back; then rpfs
# verify makes each stripe's parity again from its data cells and
# compares it with the stored parity cells.
suite_ec_tests() {
	"$RPFS_CLI" rm "$2" >/dev/null 2>&1
	run "ec:2+1 file (hint rpfs_redundancy, ec_preview): 4 MiB blocks, 47008-byte records (collective, nonblocking), read back" \
		4 "$2" "" "$1" write "rpfs:$2" red=ec:2+1
	_out=$("$RPFS_CLI" verify "$2" 2>&1)
	case $_out in
	*"ec:2+1, parity agrees with the data"*) pass "  rpfs verify: its parity is the code of its data ($_out)" ;;
	*) fail "  rpfs verify: its parity is the code of its data: $_out" ;;
	esac
	"$RPFS_CLI" rm "$2" >/dev/null 2>&1
}

# suite_mirror_tests PROGRAM PATH: test/mpi/mpi_mirror through the caller's
# run (NAME NP KEPT DELETED PROGRAM ARGS...): a mirrored file (made with
# both copies off server.0, opened with the hint rpfs_redundancy=mirror:2)
# that 4 ranks write in 4 MiB blocks, then, with
# one of its I/O servers killed -9 mid-run, 47008-byte records collectively
# and again with nonblocking calls, reading every byte back; a second job
# reads it with the server still down; the server is started again and
# its stale copies resynced (rpfs verify); then the server of the other
# copy is killed and a third job reads every byte from the resynced copy.
suite_mirror_tests() {
	# one slot on servers 1 and 2: neither copy on server.0
	"$RPFS_CLI" rm "$2" >/dev/null 2>&1
	if ! "$RPFS_CLI" setstripe -N mirror:2 -c 1 -i 1 "$2" >/dev/null 2>&1; then
		fail "mirrored file: rpfs setstripe -N mirror:2 -c 1 -i 1 $2"
		return
	fi
	_pause=$(mktemp -u "${TMPDIR:-/tmp}/rpfs-mirror-pause.XXXXXX")
	_pair_file=$_pause.pair
	(
		# at the job's pause: kill one copy's server, then let it go on
		_end=$(($(date +%s) + 120))
		while [ ! -e "$_pause" ] && [ "$(date +%s)" -lt "$_end" ]; do sleep 0.1; done
		_pair=$(suite_copy_pair "$2")
		echo "$_pair" >"$_pair_file"
		set -- $_pair
		[ -n "${1:-}" ] && kill -9 "$(cat "$CLUSTER/rpfsd.$1.pid")" 2>/dev/null
		rm -f "$_pause"
	) &
	_killer=$!
	run "mirrored file: 4 MiB blocks, then 47008-byte records (collective, nonblocking) with an io server killed -9 mid-run" \
		4 "$2" "" "$1" write "rpfs:$2" "pause=$_pause"
	wait "$_killer" 2>/dev/null
	rm -f "$_pause"
	set -- "$1" "$2" $(cat "$_pair_file" 2>/dev/null)
	rm -f "$_pair_file"
	if [ $# -lt 4 ]; then
		fail "  no two I/O-only servers holding copies of one of $2's slots"
		return
	fi
	run "  read back with its io server $3 still down" 4 "$2" "" "$1" read "rpfs:$2"
	if suite_restart_server "$3"; then
		pass "  io server $3 started again and online"
	else
		fail "  io server $3 started again and online (rpfs df: $("$RPFS_CLI" df 2>&1 | tr '\n' ' '))"
		return
	fi
	if suite_wait_verify "$2" 60; then
		pass "  its stale copies resynced (rpfs verify passes)"
	else
		fail "  its stale copies resynced (rpfs verify: $("$RPFS_CLI" verify "$2" 2>&1 | tr '\n' ' '))"
	fi
	kill -9 "$(cat "$CLUSTER/rpfsd.$4.pid")" 2>/dev/null
	run "  read back with the other copy's io server $4 killed" 4 "$2" "" "$1" read "rpfs:$2"
	if suite_restart_server "$4"; then
		pass "  io server $4 started again and online"
	else
		fail "  io server $4 started again and online (rpfs df: $("$RPFS_CLI" df 2>&1 | tr '\n' ' '))"
	fi
}
