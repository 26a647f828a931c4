# shellcheck shell=sh
# test/integration/checks.sh: the check helpers of the shell tests here
# (space.sh, io-states.sh, mirror.sh, ec.sh). Sourced, never run. Each prints "ok   WHAT" or
# "FAIL WHAT" with the command's output indented under it, and a failure
# sets fail=1: the test exits with $fail. The caller sets TMP (scratch).
fail=0

ok() { echo "ok   $1"; }
# bad WHAT [FILE]: a failure, with FILE's lines under it
bad() {
	echo "FAIL $1"
	[ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/     /' "$2"
	fail=1
}
# check WHAT COMMAND...: succeeds within 120 s
check() {
	what=$1
	shift
	if timeout 120 "$@" >"$TMP/out" 2>&1; then ok "$what"; else bad "$what" "$TMP/out"; fi
}
# check_in WHAT FUNCTION ARGS...: a shell function succeeds (no timeout(1):
# it bounds itself)
check_in() {
	what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then ok "$what"; else bad "$what" "$TMP/out"; fi
}
# check_fails WHAT PATTERN COMMAND...: fails within 120 s, saying PATTERN
check_fails() {
	what=$1
	pat=$2
	shift 2
	if timeout 120 "$@" >"$TMP/out" 2>&1; then
		bad "$what: it succeeded" "$TMP/out"
	elif grep -q -- "$pat" "$TMP/out"; then
		ok "$what"
	else
		bad "$what: no '$pat' in its message" "$TMP/out"
	fi
}
# check_eq WHAT GOT WANT
check_eq() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1: got '$2', want '$3'"; fi; }
# The state df shows for server.N ("online", "unreachable(3s)" -> unreachable;
# the state column, the 9th: the label has two words).
state_of() {
	"$RPFS" df 2>/dev/null | awk -v s="server.$1" '$1 == s {
		n = split($0, w, "state ");
		if (n > 1) { v = w[n]; sub(/\).*/, "", v) } else v = $9;
		sub(/\(.*/, "", v); print v }'
}
# The copies column df shows for server.N (good, needs-resync(N), rebuilding).
copies_of() {
	"$RPFS" df 2>/dev/null | awk -v s="server.$1" '$1 == s {
		n = split($0, w, "copies ");
		if (n > 1) { v = w[n]; sub(/\)$/, "", v) } else v = $10;
		print v }'
}
# wait_state N STATES SECONDS: df shows one of STATES ("a|b") for server.N
# within SECONDS (times X, the caller's time scale) of wall time.
wait_state() {
	end=$(($(date +%s) + $3 * X))
	while :; do
		case "|$2|" in *"|$(state_of "$1")|"*) return 0 ;; esac
		[ "$(date +%s)" -lt "$end" ] || break
		sleep 0.1
	done
	echo "server.$1 is '$(state_of "$1")' after $(($3 * X)) s, not $2"
	return 1
}
# The cluster's helpers (the caller sets D, its directory, and RPFS).
pid_of() { cat "$D/rpfsd.$1.pid"; }
handle_of() { "$RPFS" stat "$1" | sed -n 's/^handle: 0x\(.*\)/\1/p'; }
# stop_server N: SIGTERM to server.N, waiting (10 s at most) until it is gone
stop_server() {
	pid=$(pid_of "$1")
	kill -TERM "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
