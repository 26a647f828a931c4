#!/bin/sh
# cluster-admin.sh: what an administrator of a multi-host cluster does,
# on loopback (127.0.0.2 and 127.0.0.3 stand for two hosts):
#   - `rpfs genconfig` writes a config and a 0600 key that rpfsd starts
#     from (each server by its name), and refuses to overwrite them;
#   - each rpfsd listens on its configured address only;
#   - log_file (config) and --log-file: lines land there; after the file is
#     moved away, SIGHUP opens a new one and new lines land in it;
#   - with $JOURNAL_STREAM naming its stderr, lines carry <N> priorities;
#   - the rpfs command finds the config by RPFS_CONFIG, then
#     $RPFS_SYSCONFDIR (standing for /etc)/rpfs/rpfs.conf, then
#     ~/.rpfs/rpfs.conf;
#   - dist/systemd/rpfsd@.service passes `systemd-analyze verify`.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
TMP=$(mktemp -d /tmp/rpfs-admin-XXXXXX) || exit 1
passed=0
failed=0

cleanup() {
	for p in "$TMP"/*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	sleep 0.5
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() {
	failed=$((failed + 1))
	echo "FAIL $1"
	[ -f "$TMP/out" ] && sed 's/^/     /' "$TMP/out" | head -20
}
check() { # description, command...
	what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then ok "$what"; else bad "$what"; fi
}
# a port free on both addresses (the kernel's pick, given back)
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ping() {
	i=0
	while [ $i -lt 50 ]; do
		"$RPFS" --config "$C" ping >/dev/null 2>&1 && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

P0=$(free_port)
P1=$(free_port)
G=$TMP/gen
check "genconfig for two hosts" "$RPFS" genconfig \
	--host "127.0.0.2:$P0,dir=$TMP/s0" \
	--host "127.0.0.3:$P1,name=io1,roles=io,dir=$TMP/s1" \
	--provider tcp --stripe-unit 64K --set timeout_ms=5000 --log-dir "$TMP" --out "$G"
C=$G/rpfs.conf
check "genconfig: the key is 32 bytes, mode 0600" \
	sh -c "test \$(stat -c %s '$G/rpfs.key') = 32 && test \$(stat -c %a '$G/rpfs.key') = 600"
check "genconfig: servers with stable ids, roles, log files" sh -c "
	grep -A6 '^\[server.s0\]' '$C' | grep -q 'roles = meta,io' &&
	grep -A6 '^\[server.s0\]' '$C' | grep -q '^id = 0' &&
	grep -A6 '^\[server.io1\]' '$C' | grep -q '^id = 1' &&
	grep -q 'log_file = $TMP/s0.log' '$C' && grep -q 'provider = tcp' '$C'"
if "$RPFS" genconfig --host 127.0.0.2 --out "$G" >"$TMP/out" 2>&1; then
	bad "genconfig over an existing config: succeeded"
elif grep -q "exists already" "$TMP/out"; then
	ok "genconfig refuses to overwrite a config and key"
else
	bad "genconfig over an existing config: failed without saying why"
fi
if "$RPFS" genconfig --host 127.0.0.2,roles=disk --out "$TMP/g2" >"$TMP/out" 2>&1; then
	bad "genconfig with an unknown role: succeeded"
else
	grep -q "unknown role 'disk'" "$TMP/out" && ok "genconfig names an unknown role" ||
		bad "genconfig with an unknown role: no clear message"
fi

# Start both from the generated config, by name (the I/O server first: a
# new metadata server asks it about its store); s0 logs at info level.
check "rpfsd io1 starts from the generated config" \
	"$RPFSD" --config "$C" --name io1 --daemon --pidfile "$TMP/io1.pid" \
	--log-file "$TMP/io1-cli.log" --log-level info
check "rpfsd s0 starts from the generated config" \
	"$RPFSD" --config "$C" --name s0 --daemon --pidfile "$TMP/s0.pid" --log-level info
check "both answer a ping" wait_ping
head -c 300000 /dev/urandom >"$TMP/data"
check "a file striped over both round-trips" sh -c "
	'$RPFS' --config '$C' cp '$TMP/data' rpfs:/f &&
	'$RPFS' --config '$C' cat /f | cmp - '$TMP/data'"

# Each listens on its own address only (not 0.0.0.0, not 127.0.0.1).
check "s0 listens on 127.0.0.2:$P0 only" sh -c "
	ss -Hltn 'sport = :$P0' | awk '{print \$4}' | grep -qx '127.0.0.2:$P0' &&
	test \$(ss -Hltn 'sport = :$P0' | wc -l) = 1"
check "io1 listens on 127.0.0.3:$P1 only" sh -c "
	ss -Hltn 'sport = :$P1' | awk '{print \$4}' | grep -qx '127.0.0.3:$P1' &&
	test \$(ss -Hltn 'sport = :$P1' | wc -l) = 1"

# Logs: the config's log_file, --log-file over it, SIGHUP after a move.
check "s0 logs to its log_file" grep -q "rpfsd s0 ready on 127.0.0.2:$P0" "$TMP/s0.log"
check "--log-file wins over log_file" grep -q "rpfsd io1 ready" "$TMP/io1-cli.log"
mv "$TMP/s0.log" "$TMP/s0.log.1"
kill -HUP "$(cat "$TMP/s0.pid")"
sleep 0.5
check "after a move and SIGHUP, new lines land in a new file" \
	grep -q "log file opened again (SIGHUP)" "$TMP/s0.log"
check "and not in the moved one" sh -c "! grep -q 'opened again' '$TMP/s0.log.1'"
check "the server still serves after SIGHUP" sh -c "'$RPFS' --config '$C' cat /f | cmp - '$TMP/data'"
kill "$(cat "$TMP/s0.pid")" "$(cat "$TMP/io1.pid")"
sleep 1
check "stopping is logged in the new file" grep -q "rpfsd s0: stopped" "$TMP/s0.log"

# journald: stderr is the stream $JOURNAL_STREAM names (device:inode).
: >"$TMP/journal"
JS=$(stat -c '%d:%i' "$TMP/journal")
sed "/^log_file/d" "$C" >"$G/nolog.conf"
JOURNAL_STREAM=$JS "$RPFSD" --config "$G/nolog.conf" --name io1 --foreground \
	--log-level info 2>>"$TMP/journal" &
jpid=$!
echo $jpid >"$TMP/j.pid"
sleep 1.5
kill $jpid
wait $jpid
check "under journald, lines carry syslog priorities (<6> info)" \
	grep -q '^<6>rpfsd\[[0-9]*\] info: rpfsd io1 ready' "$TMP/journal"
check "without JOURNAL_STREAM, no priorities" sh -c "! grep -q '^<' '$TMP/io1-cli.log'"

# The rpfs command's search: RPFS_CONFIG, /etc/rpfs (faked), ~/.rpfs.
mkdir -p "$TMP/etc/rpfs" "$TMP/home/.rpfs"
cp "$C" "$TMP/home/.rpfs/rpfs.conf"
used() { # env settings... -> the config `rpfs settings` says it reads
	env -u RPFS_CONFIG -u RPFS_DIR HOME="$TMP/home" RPFS_SYSCONFDIR="$TMP/etc" "$@" \
		"$RPFS" settings 2>&1 | head -1
}
check "no RPFS_CONFIG, no system config: ~/.rpfs/rpfs.conf" \
	test "$(used)" = "config: $TMP/home/.rpfs/rpfs.conf"
cp "$C" "$TMP/etc/rpfs/rpfs.conf"
check "a system config wins over ~/.rpfs" \
	test "$(used)" = "config: $TMP/etc/rpfs/rpfs.conf"
check "RPFS_CONFIG wins over both" \
	test "$(used RPFS_CONFIG="$C")" = "config: $C"
rm "$TMP/etc/rpfs/rpfs.conf" "$TMP/home/.rpfs/rpfs.conf"
check "none at all: the message names every place tried" sh -c "
	env -u RPFS_CONFIG -u RPFS_DIR HOME='$TMP/home' RPFS_SYSCONFDIR='$TMP/etc' \
		'$RPFS' ls / 2>&1 | grep -q 'rpfs.conf'"

# The systemd unit, with this build's rpfsd in place of the installed one.
UNIT=dist/systemd/rpfsd@.service
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "skip systemd-analyze verify: systemd-analyze is not installed"
elif [ ! -f "$UNIT" ]; then
	bad "no $UNIT in the build directory"
else
	sed "s|^ExecStart=[^ ]*|ExecStart=$(cd "$(dirname "$RPFSD")" && pwd)/$(basename "$RPFSD")|" \
		"$UNIT" >"$TMP/rpfsd@.service"
	# verify runs `man` on each Documentation= page: the ones make
	# install puts in place, here from the source tree.
	MANSRC=$(cd "$(dirname "$0")/../../man" && pwd)
	mkdir -p "$TMP/man/man5" "$TMP/man/man8"
	cp "$MANSRC"/*.5 "$TMP/man/man5/" && cp "$MANSRC"/*.8 "$TMP/man/man8/"
	check "systemd-analyze verify rpfsd@.service" \
		sh -c "MANPATH='$TMP/man' systemd-analyze verify '$TMP/rpfsd@.service' 2>&1 | tee /dev/stderr | (! grep -q .)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
