#!/bin/sh
# restart.sh: a cluster made by `rpfs up` is stopped and started again as
# an operator does it, and its logs are readable. Run by `make check` from
# the top build directory (./rpfs, ./rpfsd).
#
#   - `rpfs up` on a directory with a stopped cluster starts THAT cluster:
#     the same id, key, config (its [transport] too) and ports, at once
#     after `rpfs down` (TIME-WAIT does not hold its ports), and its data
#     reads back the same after every cycle;
#   - on a running cluster, up says so and succeeds doing nothing;
#   - options that disagree with the cluster, storage without a config and
#     --new over running servers are refused naming the cause; --new
#     removes what rpfs made (nothing else) and makes a new cluster;
#   - the port probe: a port that only TIME-WAIT sockets hold is free, a
#     port a socket listens on is not;
#   - a metadata server whose start-up check waits for an I/O server
#     answers pings "starting", not ready, until the check is done (a
#     launcher's wait, `rpfs up`'s and the tests', ends only then);
#   - logs: rpfsd's lines carry its name and an ISO 8601 time, a refused
#     key names the peer's address, a fresh `rpfs up` logs no warnings, and
#     a missing log directory is made (or the failure names it).
set -u
umask 022

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
TMP=$(mktemp -d /tmp/rpfs-restart-XXXXXX) || exit 1
D=$TMP/cluster
fail=0
holder=
m=
s0=
s1=

cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	[ -n "$m" ] && kill "$m" 2>/dev/null
	for p in $s0 $s1; do kill "$p" 2>/dev/null; done
	for d in "$D" "$TMP/new" "$TMP/busy" "$TMP/gen" "$TMP/start"; do
		"$RPFS" down --dir "$d" >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ok() { echo "ok   $1"; }
bad() {
	echo "FAIL $1"
	[ -f "$TMP/out" ] && sed 's/^/     /' "$TMP/out"
	fail=1
}
check() { # description, command...
	what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then ok "$what"; else bad "$what"; fi
}
# refused WHAT PATTERN COMMAND...: the command must fail and say PATTERN
refused() {
	what=$1 pattern=$2
	shift 2
	if "$@" >"$TMP/out" 2>&1; then
		bad "$what: succeeded"
	elif grep -q -- "$pattern" "$TMP/out"; then
		ok "$what"
	else
		bad "$what: failed without saying '$pattern'"
	fi
}
# the cluster's identity: id, key and the whole config
ident() { md5sum "$D/rpfs.conf" "$D/cluster.key" | cut -d' ' -f1 | tr '\n' ' '; }
port0() { sed -n '/\[server.0\]/,/^$/s/^port = //p' "$D/rpfs.conf"; }
# a command that succeeds within 10 s: a server answers pings (so `rpfs up`
# returns) a little before its log says it is ready
eventually() {
	for _ in $(seq 50); do "$@" && return 0; sleep 0.2; done
	"$@"
}
# lines of server logs that are warnings or errors, and their absence
warnings() { grep -hE '^[^ ]+ [^ ]+ (warn|error):' "$@"; }
no_warnings() { ! warnings "$@"; }

# ---- a fresh cluster: its logs --------------------------------------------------
export RPFS_LOG=info
check "rpfs up -n 4 (info log level)" "$RPFS" up -n 4 --dir "$D" --address "$ADDR" \
	--provider "${RPFS_PROVIDER:-tcp}"
unset RPFS_LOG
export RPFS_CONFIG="$D/rpfs.conf"
check "a fresh rpfs up logs no warnings" no_warnings "$D"/rpfsd.*.log
check "rpfsd logs under its own name, ISO 8601 time with ms and offset" \
	eventually grep -qE '^rpfsd\[[0-9]+\] [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} info: rpfsd 0 ready on' \
	"$D/rpfsd.0.log"
check "every server log line has that form" sh -c "! grep -vhE \
	'^rpfsd\[[0-9]+\] [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} (error|warn|info|debug): ' \
	'$D'/rpfsd.*.log"
check "[transport] written" grep -q "^provider = ${RPFS_PROVIDER:-tcp}" "$D/rpfs.conf"

# a client with another cluster's key: the server names it in its log
head -c 32 /dev/urandom >"$TMP/other.key"
chmod 600 "$TMP/other.key"
sed "s|key_file = .*|key_file = $TMP/other.key|" "$D/rpfs.conf" >"$TMP/otherkey.conf"
refused "a client with another key is refused" "did not accept our cluster key" \
	"$RPFS" --config "$TMP/otherkey.conf" ls /
check "the refusal in the server's log names the client's address" eventually grep -qE \
	"^rpfsd\[[0-9]+\] [^ ]+ warn: refused a connection request from $ADDR:[0-9]+: the client does not hold the cluster key" \
	"$D/rpfsd.0.log"

# ---- stop and start again, data verified each time -------------------------------
head -c 3000000 /dev/urandom >"$TMP/data"
check "rpfs cp a file in" "$RPFS" cp "$TMP/data" rpfs:/x
sum=$(md5sum <"$TMP/data")
id0=$(ident)
P=$(port0)

check "up on a running cluster succeeds, saying so" \
	sh -c "'$RPFS' up -n 4 --dir '$D' | grep -q 'cluster in $D is already running'"
check "... and changes nothing" test "$(ident)" = "$id0"

for cycle in 1 2 3; do
	check "cycle $cycle: rpfs down" "$RPFS" down --dir "$D"
	warned=$(warnings "$D"/rpfsd.*.log | wc -l)
	# the same ports at once: TIME-WAIT of the old connections must not matter
	check "cycle $cycle: rpfs up -n 4 --port $P starts it again" \
		"$RPFS" up -n 4 --dir "$D" --port "$P"
	check "cycle $cycle: same id, key, config and ports" test "$(ident)" = "$id0"
	check "cycle $cycle: the file reads back the same" \
		sh -c "'$RPFS' cat /x | md5sum | grep -qx -- '$sum'"
	check "cycle $cycle: no warnings while starting" \
		test "$(warnings "$D"/rpfsd.*.log | wc -l)" = "$warned"
done
check "[transport] kept" grep -q "^provider = ${RPFS_PROVIDER:-tcp}" "$D/rpfs.conf"

# ---- what up refuses ------------------------------------------------------------
check "rpfs down" "$RPFS" down --dir "$D"
refused "another number of servers is refused" "has 4 servers, not 2 as asked" \
	"$RPFS" up -n 2 --dir "$D"
refused "other ports are refused" "server.0 at port $P, not port $((P + 100)) as asked" \
	"$RPFS" up --dir "$D" --port $((P + 100))
refused "another stripe unit is refused" "stripe_unit 1048576, not 65536" \
	"$RPFS" up --dir "$D" --stripe-unit 64K
check "refusals change nothing" test "$(ident)" = "$id0"
mv "$D/rpfs.conf" "$TMP/saved.conf"
refused "storage without a config is refused, saying what to do" \
	"holds server storage ($D/s.*) but no config $D/rpfs.conf.*add --new" \
	"$RPFS" up --dir "$D"
mv "$TMP/saved.conf" "$D/rpfs.conf"
mv "$D/cluster.key" "$TMP/saved.key"
refused "a config whose key is gone is refused" "cluster key $D/cluster.key" \
	"$RPFS" up --dir "$D"
mv "$TMP/saved.key" "$D/cluster.key"
check "rpfs up: started again" "$RPFS" up --dir "$D"
refused "--new over running servers is refused" "servers are running in $D" \
	"$RPFS" up --new --dir "$D"
check "... and changes nothing" sh -c "'$RPFS' cat /x | md5sum | grep -qx -- '$sum'"

# ---- --new ----------------------------------------------------------------------
check "rpfs down" "$RPFS" down --dir "$D"
echo mine >"$D/notes"
mkdir "$D/sx"
check "rpfs up --new -n 2" "$RPFS" up --new -n 2 --dir "$D" --address "$ADDR"
check "--new: a new cluster id and key" sh -c "test '$(ident)' != '$id0'"
check "--new: two servers, no storage of the old ones" \
	sh -c "test -d '$D/s1' && ! test -e '$D/s2' && ! test -e '$D/s3'"
refused "--new: the old file is gone" "No such file" "$RPFS" stat /x
check "--new: other files are kept" sh -c "test -f '$D/notes' && test -d '$D/sx'"
check "rpfs down" "$RPFS" down --dir "$D"

# ---- ready means ready -------------------------------------------------------------
# Server 0's store is new (it never handed out a handle), so at start it
# asks every I/O server for datafiles of its handles first
# (server/meta_start.c); with server 1 not running it listens and answers,
# but is not ready.
S=$TMP/start
starting() { # ping says server.0 is starting
	"$RPFS" --dir "$S" ping >"$TMP/ping" 2>&1
	grep -q "server 0 (.*FAILED: .*server 0 (.*) is starting: it answers, but its start-up check is not done" "$TMP/ping"
}
# start_alone: a two-server cluster made, stopped, server 0's store
# removed, and server 0 alone started at the port `rpfs up` chose; true
# once it answers "starting". After `rpfs down` that port is free, so in a
# parallel `make check` another test's cluster may take it before rpfsd
# starts (rpfsd exits 3, "in use"): then the cluster is made again, at
# other ports. Any other exit is a failure (its log is in $TMP/out).
start_alone() {
	for _ in 1 2 3 4 5; do
		"$RPFS" up --new -n 2 --dir "$S" --address "$ADDR" \
			--provider "${RPFS_PROVIDER:-tcp}" >/dev/null &&
			"$RPFS" down --dir "$S" >/dev/null && rm -r "$S/s0/meta" || return 1
		RPFS_TIMEOUT_MS=60000 "$RPFSD" --config "$S/rpfs.conf" --name 0 \
			--foreground >"$TMP/s0.log" 2>&1 &
		s0=$!
		st=running
		for _ in $(seq 100); do
			starting && return 0
			if ! kill -0 "$s0" 2>/dev/null; then
				wait "$s0"
				st=$?
				break
			fi
			sleep 0.2
		done
		cat "$TMP/s0.log" "$TMP/ping"
		[ "$st" = 3 ] || return 1 # still running: cleanup stops it
		s0=
	done
	return 1
}
check "a metadata server in its start-up check answers ping: starting" start_alone
check "... and rpfs ping fails" sh -c "! '$RPFS' --dir '$S' ping"
"$RPFSD" --config "$S/rpfs.conf" --name 1 --foreground >"$TMP/s1.log" 2>&1 &
s1=$!
check "once the I/O server answers its check, it is ready: ping succeeds" \
	eventually "$RPFS" --dir "$S" ping
kill $s0 $s1
wait $s0 $s1 2>/dev/null
s0=
s1=

# ---- the port probe ---------------------------------------------------------------
# A port that only a TIME-WAIT socket holds (its side closed first) and
# one a socket listens on (held until killed).
python3 - "$ADDR" >"$TMP/tw" <<'EOF' || bad "making a TIME-WAIT socket"
import socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 0))
l.listen()
port = l.getsockname()[1]
c = socket.create_connection((sys.argv[1], port))
a, _ = l.accept()
a.close()
time.sleep(0.2)
c.close()
l.close()
print(port)
EOF
TW=$(cat "$TMP/tw")
check "port $TW is held by TIME-WAIT only (state 06)" sh -c \
	"awk '\$2 ~ /:$(printf %04X "$TW")\$/ { print \$4 }' /proc/net/tcp | sort -u | grep -qx 06"
check "up --port on a TIME-WAIT port starts" "$RPFS" up -n 1 --dir "$TMP/new" \
	--address "$ADDR" --port "$TW"
python3 - "$ADDR" "$TMP/listening" <<'EOF' &
import socket, sys, time
l = socket.socket()
l.bind((sys.argv[1], 0))
l.listen()
open(sys.argv[2] + '.tmp', 'w').write('%d\n' % l.getsockname()[1])
__import__('os').rename(sys.argv[2] + '.tmp', sys.argv[2])
time.sleep(120)
EOF
holder=$!
for i in $(seq 50); do [ -f "$TMP/listening" ] && break; sleep 0.1; done
LP=$(cat "$TMP/listening")
refused "up --port on a listening port is refused" "port $LP on $ADDR is in use" \
	"$RPFS" up -n 1 --dir "$TMP/busy" --address "$ADDR" --port "$LP"
kill "$holder"
holder=

# ---- a metadata server waiting for an I/O server that starts after it ---------
# (what `rpfs up` does at random: the wait is expected, so not a warning)
G=$TMP/gen
check "genconfig: a metadata server and an I/O server" "$RPFS" genconfig \
	--host "$ADDR:$P,name=m,dir=$G/m" --host "$ADDR:$((P + 1)),name=i,dir=$G/i" \
	--out "$G"
"$RPFSD" --config "$G/rpfs.conf" --name m --foreground --log-level info 2>"$TMP/m.log" &
m=$!
sleep 1
"$RPFSD" --config "$G/rpfs.conf" --name i --daemon --pidfile "$G/rpfsd.i.pid" \
	>"$TMP/out" 2>&1 || bad "rpfsd i"
for i in $(seq 100); do grep -q "rpfsd m ready" "$TMP/m.log" && break; sleep 0.1; done
check "the metadata server waited for the I/O server" \
	grep -q "info: rpfsd: couldn't reach server i ($ADDR:$((P + 1))) yet" "$TMP/m.log"
check "... and came up" grep -q "rpfsd m ready" "$TMP/m.log"
check "... without a warning" no_warnings "$TMP/m.log"
kill "$m"
wait "$m"
m=
"$RPFS" down --dir "$G" >/dev/null 2>&1

# ---- a missing log directory ------------------------------------------------------
"$RPFS" down --dir "$TMP/new" >/dev/null 2>&1
"$RPFSD" --config "$TMP/new/rpfs.conf" --name 0 --daemon --pidfile "$TMP/new/rpfsd.0.pid" \
	--log-level info --log-file "$TMP/logs/a/b/rpfsd.log" >"$TMP/out" 2>&1 ||
	bad "rpfsd --log-file in a missing directory"
check "the log directory is made (0755) and logged to" sh -c \
	"test \$(stat -c %a '$TMP/logs/a') = 755 && grep -q 'rpfsd 0 ready' '$TMP/logs/a/b/rpfsd.log'"
"$RPFS" down --dir "$TMP/new" >/dev/null 2>&1
: >"$TMP/afile"
refused "a log directory that can't be made is named" \
	"couldn't create log directory $TMP/afile/sub: Not a directory" \
	"$RPFSD" --config "$TMP/new/rpfs.conf" --name 0 --daemon \
	--pidfile "$TMP/new/rpfsd.0.pid" --log-file "$TMP/afile/sub/rpfsd.log"

exit $fail
