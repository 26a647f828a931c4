#!/usr/bin/env bash
# run-hostile-tests.sh: rpfsd against hostile peers, over real connections.
#
# Usage: test/hostile/run-hostile-tests.sh
# Environment:
#   RPFS_BIN        directory holding the rpfs CLI (default: on PATH); its
#                   rpfsd is started with `rpfs up`
#   STOCK_RPFSD     an rpfsd built on the system's libfabric (configure
#                   without --with-embedded-libfabric; the quickstart passes
#                   build-san's) for the stock set; without it the stock
#                   checks run only if RPFS_BIN's rpfsd is such a build
#   HOSTILE_BIN     where junk_client and tcp_tagged_crash were built
#                   (default build/test/hostile of this clone)
#   RPFS_TEST_ADDR  address of the servers (default 127.0.0.1)
#   JUNK_SECONDS    how long the junk client runs (default 20)
#   CRASH_FUZZ      random tcp headers in tcp_tagged_crash's fuzz mode (100)
#   HOSTILE_STRICT  1: count the known cross-connection issue as a failure
#
# Two server sets of 2 servers each, started by `rpfs up`:
#   stock    rpfsd on the system's libfabric (Debian's 1.17): STOCK_RPFSD
#   patched  RPFS_BIN's rpfsd, whose librpfs-common embeds the patched
#            libfabric (scripts/build-libfabric.sh, configure
#            --with-embedded-libfabric): it says so when it starts, and
#            maps no libfabric.so
#
# The libfabric regression (test/hostile/README.md): the tcp provider of
# stock libfabric dies on one unexpected tcp header after an accepted
# connection request.
#   - stock, without the key: the 72-byte sequence (protocol 1's request),
#     the same with today's request shape, and the fuzz mode: every request
#     is refused at the connection manager, the provider's data path is
#     never reached, the server lives;
#   - patched, with the key (a fresh valid request each time): the 96-byte
#     sequence, the unsolicited ack, the fuzz mode: the provider closes the
#     connection, the server lives;
#   - stock, with the key: shown, not counted (the server dies there; that
#     is what the patched library is for).
# The junk client (junk_client.c) holds the key and sends every shape of
# junk message for JUNK_SECONDS to the patched set; after each burst a
# normal client (rpfs ping, cat, cp) must still be served correctly.
# A cross-connection probe (junk_client -X) shows whether a fast-write
# immediate naming another client's connection makes the server serve that
# client's last fast request again (it does on tcp: a KNOWN line, counted
# only with HOSTILE_STRICT=1).
# Each line says PASS or FAIL (INFO and KNOWN lines are not counted); the
# last line is "N passed, N failed".
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
HOSTILE_BIN=${HOSTILE_BIN:-$REPO/build/test/hostile}
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
JUNK_SECONDS=${JUNK_SECONDS:-20}
CRASH_FUZZ=${CRASH_FUZZ:-100}
RPFS=${RPFS_BIN:+$RPFS_BIN/rpfs}
RPFS=${RPFS:-$(command -v rpfs 2>/dev/null || true)}
JUNK=$HOSTILE_BIN/junk_client
CRASH=$HOSTILE_BIN/tcp_tagged_crash
# rpfs protocol version 1's 24-byte connection data: with it and the tcp
# header, the one write of the original report is 72 bytes.
OLD_CM=525046530100000000000000000000000000000000000000

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rpfs-hostile.XXXXXX") || exit 1
clusters=()

cleanup() {
	for d in "${clusters[@]}"; do
		"$RPFS" down --dir "$d" >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# shellcheck source=test/support/suite.sh
. "$REPO/test/support/suite.sh"

for p in "$RPFS" "$JUNK" "$CRASH"; do
	if [ -z "$p" ] || [ ! -x "$p" ]; then
		fail "missing program '$p' (RPFS_BIN, HOSTILE_BIN; make builds test/hostile)"
		finish
	fi
done

# The libfabric rpfsd $1 runs on (rpfsd --version): "libfabric 2.1,
# embedded" or "libfabric 1.17, the system's".
fabric_of() {
	"$1" --version 2>/dev/null | sed -n 's/.*(\(libfabric [^)]*\)).*/\1/p'
}

# libfabric mapped by the rpfsd whose pid file is $1
mapped_lib() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return
	grep -o '/[^ ]*libfabric\.so[^ ]*' "/proc/$pid/maps" 2>/dev/null | head -1
}

alive() {
	local pid
	pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
}

# start NAME [RPFSD]: a server set of 2 in $TMP/NAME, of RPFSD (default: the
# one `rpfs up` finds next to it); sets CONF, PORT0, PORT1, KEY.
start() {
	local name=$1 rpfsd=${2:-} d=$TMP/$1
	clusters+=("$d")
	if ! env ${rpfsd:+RPFSD=$rpfsd} "$RPFS" up -n 2 --dir "$d" --address "$ADDR" \
		>"$TMP/$name.up" 2>&1; then
		fail "$name: rpfs up" "$TMP/$name.up"
		return 1
	fi
	eval "$(grep '^export RPFS_CONFIG=' "$TMP/$name.up")"
	CONF=$RPFS_CONFIG
	KEY=$d/cluster.key
	PORT0=$(sed -n 's/^port = //p' "$CONF" | sed -n 1p)
	PORT1=$(sed -n 's/^port = //p' "$CONF" | sed -n 2p)
	local so
	so=$(mapped_lib "$d/rpfsd.0.pid")
	echo "INFO  $name servers run on $(fabric_of "${rpfsd:-$RPFSD_INSTALLED}"), map ${so:-no libfabric.so} (pids $(cat "$d"/rpfsd.*.pid | tr '\n' ' ' | sed 's/ $//'))"
}

# crash_case WHAT EXPECT PIDFILE ARGS...: run tcp_tagged_crash; EXPECT is
# "refused" (the request must be rejected) or "accepted"; the server must
# live either way.
crash_case() {
	local what=$1 expect=$2 pidfile=$3 out=$TMP/crash.out rc
	shift 3
	"$CRASH" "$@" >"$out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && ! grep -q "rejected the connection request" "$out"; then
		fail "$what: exit $rc" "$out"
	elif ! alive "$pidfile"; then
		fail "$what: rpfsd is gone" "$out"
	elif [ "$expect" = refused ] && ! grep -qE "response: rejected|rejected the connection request|SURVIVED" "$out"; then
		fail "$what: the request was not refused" "$out"
	elif [ "$expect" = accepted ] && grep -qE "response: rejected|rejected the connection request" "$out"; then
		fail "$what: the valid request was refused" "$out"
	else
		pass "$what ($(grep -oE 'response: [a-z]+|SURVIVED [0-9]+|server alive' "$out" | tr '\n' ' '| sed 's/ $//'))"
	fi
}

# the rpfsd `rpfs up` starts: the one next to the CLI
RPFSD_INSTALLED=$(dirname "$(readlink -f "$RPFS")")/rpfsd

# ---- stock libfabric: without the key nobody reaches the provider -------
# The stock server: STOCK_RPFSD, or RPFS_BIN's own when it is not embedded.
stock=${STOCK_RPFSD:-}
if [ -z "$stock" ] && ldd "$RPFSD_INSTALLED" 2>/dev/null | grep -q 'libfabric\.so'; then
	stock=$RPFSD_INSTALLED
fi
if [ -z "$stock" ]; then
	echo "INFO  no rpfsd on the system's libfabric (STOCK_RPFSD): the stock set is not run"
elif start stock "$stock"; then
	S=$TMP/stock
	case $(fabric_of "$stock") in
	*"the system's"*) pass "the stock set runs on the system's libfabric ($(mapped_lib "$S/rpfsd.0.pid"))" ;;
	*) fail "the stock set runs on $(fabric_of "$stock"), not the system's libfabric" ;;
	esac
	echo "INFO  the system's libfabric is Debian's $(dpkg-query -W -f='${Version}' 'libfabric1*' 2>/dev/null | head -1)"
	crash_case "stock libfabric, no key: the 72-byte sequence (protocol 1 request) is refused, rpfsd lives" \
		refused "$S/rpfsd.0.pid" -1 -c "$OLD_CM" "$ADDR" "$PORT0"
	crash_case "stock libfabric, no key: the sequence with today's request shape (96 bytes, no MAC) is refused, rpfsd lives" \
		refused "$S/rpfsd.0.pid" -1 "$ADDR" "$PORT0"
	crash_case "stock libfabric, no key: tcp_tagged_crash -n $CRASH_FUZZ, every request refused, rpfsd lives" \
		refused "$S/rpfsd.0.pid" -q -n "$CRASH_FUZZ" -S 7 -w 20 "$ADDR" "$PORT0"
	# Shown, not counted: with the key, stock libfabric's tcp provider dies.
	"$CRASH" -k "$KEY" -1 "$ADDR" "$PORT1" >"$TMP/stock-key.out" 2>&1
	rc=$?
	sleep 0.5
	if [ $rc -eq 0 ] && alive "$S/rpfsd.1.pid"; then
		echo "INFO  stock libfabric, with the key: rpfsd survived the 96-byte sequence (this libfabric has a fix)"
	else
		echo "INFO  stock libfabric, with the key: rpfsd died on the 96-byte sequence, as expected; the embedded library below fixes it"
	fi
fi

# ---- patched libfabric: key holders reach the provider, and it holds ----
# What `rpfs up` and the quickstart run: RPFS_BIN's rpfsd, nothing set.
start patched || finish
P=$TMP/patched
so=$(mapped_lib "$P/rpfsd.0.pid")
case $(fabric_of "$RPFSD_INSTALLED") in
*embedded*)
	if [ -z "$so" ]; then
		pass "the installed rpfsd runs on the embedded, patched libfabric ($(fabric_of "$RPFSD_INSTALLED"), no libfabric.so mapped)"
	else
		fail "the installed rpfsd says it is embedded but maps $so"
	fi
	;;
*) fail "the installed rpfsd runs on '$(fabric_of "$RPFSD_INSTALLED")', not the embedded libfabric (configure --with-embedded-libfabric)" ;;
esac
# The patch is in the library the servers run (its message, in the file).
common=$(ldd "$RPFSD_INSTALLED" 2>/dev/null |
	sed -n 's/.*librpfs-common\.so[^ ]* => \([^ ]*\).*/\1/p')
if [ -n "$common" ] && grep -q "Received a tagged message, but the endpoint has no" "$common"; then
	pass "librpfs-common carries the tcp provider fix ($common)"
else
	fail "librpfs-common (${common:-not found}) has no tcp provider fix in it"
fi
crash_case "patched libfabric, with the key: the 96-byte sequence is accepted, the provider closes it, rpfsd lives" \
	accepted "$P/rpfsd.0.pid" -k "$KEY" -1 "$ADDR" "$PORT0"
crash_case "patched libfabric, with the key: an unsolicited ack (op 0, op_data 2), rpfsd lives" \
	accepted "$P/rpfsd.0.pid" -k "$KEY" -o 0 -d 2 "$ADDR" "$PORT0"
crash_case "patched libfabric, with the key: tcp_tagged_crash -n $CRASH_FUZZ random tcp headers, rpfsd lives" \
	accepted "$P/rpfsd.1.pid" -k "$KEY" -q -n "$CRASH_FUZZ" -S 11 -w 20 "$ADDR" "$PORT1"

# ---- the junk client: every shape of message from a key holder ----------
head -c 300000 /dev/urandom >"$TMP/data"
head -c 5000 /dev/urandom >"$TMP/small"
if ! "$RPFS" mkdir /hostile >"$TMP/setup.out" 2>&1 ||
	! "$RPFS" cp "$TMP/data" rpfs:/hostile/data >>"$TMP/setup.out" 2>&1; then
	fail "a normal client could not write before the junk" "$TMP/setup.out"
	finish
fi
cat >"$TMP/check.sh" <<EOF
# after each burst: every server answers, old data reads back, new data
# writes and reads back
set -e
n=\$(date +%s%N)
"$RPFS" ping >/dev/null
"$RPFS" cat /hostile/data | cmp -s - "$TMP/data"
"$RPFS" cp "$TMP/small" "rpfs:/hostile/new-\$n" >/dev/null
"$RPFS" cat "/hostile/new-\$n" | cmp -s - "$TMP/small"
EOF
"$JUNK" -c "$CONF" -t "$JUNK_SECONDS" -b 2000 -C "sh $TMP/check.sh" >"$TMP/junk.out" 2>&1
rc=$?
sed 's/^/    /' "$TMP/junk.out"
msgs=$(sed -n 's/^junk_client: \([0-9]*\) messages.*/\1/p' "$TMP/junk.out")
bursts=$(sed -n 's/.*bursts \([0-9]*\), checks passed \([0-9]*\).*/\1 bursts, \2 checks/p' "$TMP/junk.out")
if [ $rc -eq 0 ] && [ -n "$msgs" ]; then
	pass "junk client: ${msgs} messages from a key holder; a normal client served correctly after each burst ($bursts)"
else
	fail "junk client: exit $rc" "$TMP/junk.out"
fi
# A fast write's immediate names (connection, slot). On verbs the receive
# it consumed tells the true connection; on tcp nothing does, so a key
# holder can name another client's connection, and the server serves that
# client's last fast request in that slot again (a second reply; a stale
# write applied twice). Known and reported; counted only with
# HOSTILE_STRICT=1 until the transport tells connections apart on tcp.
"$JUNK" -X -c "$CONF" >"$TMP/probe.out" 2>&1
rc=$?
what="a fast-write immediate naming another connection does not make the server serve that connection's request again"
probe=$(sed -n 's/^junk_client: cross-connection probe: //p' "$TMP/probe.out")
if [ $rc -eq 0 ]; then
	pass "$what ($probe)"
elif [ "${HOSTILE_STRICT:-0}" = 1 ]; then
	fail "$what (${probe:-no result})" "$TMP/probe.out"
else
	echo "KNOWN $what: it does on tcp (${probe:-no result}); not counted (HOSTILE_STRICT=1 counts it)"
fi
if alive "$P/rpfsd.0.pid" && alive "$P/rpfsd.1.pid"; then
	pass "both patched servers are still running"
else
	fail "a patched server is gone" "$P/rpfsd.0.log"
fi
if sh "$TMP/check.sh" >"$TMP/final.out" 2>&1; then
	pass "after everything a normal client reads, writes and pings as before"
else
	fail "after everything a normal client is not served correctly" "$TMP/final.out"
fi
finish
